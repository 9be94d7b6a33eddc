#!/usr/bin/env bash
# The Python API's cost over the CLI, like for like: BERT-base (seq 128) compiled once,
# then `geopt run PLAN` against `Plan.run` in Python on the same inputs and threads, each
# timing only its runs (steady clock around the run; Python's includes converting the
# feeds and wrapping the outputs). The two sides take turns, ROUNDS times; each side's
# round is its median over RUNS runs after 2 warm-ups; the table gives each side's median
# over rounds and the median of the per-round ratios.
#   bench/python_api_bench.sh [BUILD_DIR] [RUNS] [ROUNDS] [THREADS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/ci}
runs=${2:-20}
rounds=${3:-5}
threads=${4:-2}
geopt=$build/cli/geopt
out=bench/out
work=$out/python_api
mkdir -p "$work"
model=$out/bert_base_op13.onnx
[[ -f $model ]] || /usr/bin/python3 examples/export_models.py --bert-base "$model" >&2
plan=$work/bert_base.plan
[[ -f $plan ]] || "$geopt" compile "$model" -o "$plan" >/dev/null
rm -rf "$work/inputs"
"$geopt" run "$plan" --random-inputs --seed 1 --save-inputs "$work/inputs" >/dev/null
inputs=()
for f in "$work"/inputs/*.npy; do inputs+=(--input "$(basename "$f" .npy)=$f"); done

cli_ms() {
  "$geopt" run "$plan" "${inputs[@]}" --threads "$threads" --repeat "$runs" --warmup 2 --json |
    /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["run_ms"])'
}
python_ms() {
  PYTHONPATH=$build/python /usr/bin/python3 - "$plan" "$work/inputs" "$runs" "$threads" <<'PY'
import os, statistics, sys, time
import numpy as np
import geopt
plan_path, inputs, runs, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
plan = geopt.Plan.load(plan_path)
feeds = {f[:-4]: np.load(os.path.join(inputs, f)) for f in os.listdir(inputs)}
for _ in range(2):
    plan.run(feeds, threads=threads)
times = []
for _ in range(runs):
    start = time.perf_counter()
    plan.run(feeds, threads=threads)
    times.append((time.perf_counter() - start) * 1000)
print(statistics.median(times))
PY
}

cli=() py=() ratios=()
for ((r = 0; r < rounds; ++r)); do
  c=$(cli_ms)
  p=$(python_ms)
  cli+=("$c") py+=("$p")
  ratios+=("$(/usr/bin/python3 -c "print($p / $c)")")
  echo "round $r: geopt run $c ms, Plan.run $p ms" >&2
done
median() { /usr/bin/python3 -c 'import statistics,sys; print("%.3f" % statistics.median(float(v) for v in sys.argv[1:]))' "$@"; }
echo "| model | threads | geopt run PLAN (ms) | Plan.run (ms) | Plan.run / geopt run |"
echo "|---|---|---|---|---|"
echo "| BERT-base seq 128 | $threads | $(median "${cli[@]}") | $(median "${py[@]}") | $(median "${ratios[@]}") |"
