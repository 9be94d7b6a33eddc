#!/usr/bin/env bash
# Host latency, like for like: ONNX Runtime (npm onnxruntime-node, CPU provider, level
# 'all') against `geopt run` on the original model, on the optimized model and on the
# compiled plan (as compiled, and compiled onto one stream), with the same inputs and
# thread count, in one run.
# Models: ResNet-50, MobileNetV2 (batch 1, 224x224), BERT-base (seq 128), GPT-2 small
# (seq 128); 1 and 2 threads.
#   bench/latency_bench.sh [BUILD_DIR] [RUNS] [ROUNDS] [MODEL...]
# Each round times every side RUNS times (after 2 warm-up runs) and takes the median;
# the sides take turns within a round, so a slow spell of a shared machine falls on
# all of them. The table gives the median over ROUNDS of each side's round medians,
# and the ratios of those medians. Separate processes minutes apart can differ by 10%
# on a shared machine, so the two "interleaved" columns come from one process
# (bench/ab_bench.cpp): the two sides' runs alternate in blocks of RUNS runs, 2 x ROUNDS
# pairs of blocks with 200 ms between blocks, and the column is the median of the
# per-pair ratios of the block medians. The pause lets the last block's threads stop
# spinning (ONNX Runtime's and OpenMP's spin after a run: without it, ORT's spinning
# worker took a core from the plan's next block, and MobileNetV2's 5 ms runs read
# anywhere from 0.99 to 1.72x ORT). "plan / ORT (interleaved)" runs ONNX Runtime in a
# node child of that process (bench/ort/serve.js, timing itself as bench/ort/latency.js
# does); "streams / one stream" runs both plans in it.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
runs=${2:-10}
rounds=${3:-3}
shift $(( $# < 3 ? $# : 3 ))
models=("$@")
[[ ${#models[@]} -gt 0 ]] || models=(resnet50_op13 mobilenetv2_op13 bert_base_op13 gpt2_small_op13)
warmup=2
geopt=$build/cli/geopt
ab_bench=$build/bench/geopt_ab_bench
pairs=$((2 * rounds)) pause_ms=200
out=bench/out
work=$out/latency
mkdir -p "$work"
source bench/ort/setup.sh
ensure_ort

# The model's file, exported by examples/export_models.py on first use.
model_path() {
  local flag
  case $1 in
    resnet50_op13) flag=--resnet50 ;;
    mobilenetv2_op13) flag=--mobilenetv2 ;;
    bert_base_op13) flag=--bert-base ;;
    gpt2_small_op13) flag=--gpt2-small ;;
    *) echo "$(basename "$0"): unknown model '$1' (resnet50_op13, mobilenetv2_op13, bert_base_op13, gpt2_small_op13)" >&2; exit 1 ;;
  esac
  [[ -f $out/$1.onnx ]] || /usr/bin/python3 examples/export_models.py "$flag" "$out/$1.onnx" >&2
  echo "$out/$1.onnx"
}

median() { /usr/bin/python3 -c 'import statistics,sys; print(statistics.median(float(v) for v in sys.argv[1:]))' "$@"; }
geopt_ms() {
  "$geopt" run "$1" "${args[@]}" --threads "$2" --repeat "$runs" --warmup "$warmup" --json |
    /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["run_ms"])'
}

echo "| model | threads | ONNX Runtime (ms) | geopt original (ms) | geopt optimized (ms) | plan (ms) | plan on one stream (ms) | plan / ORT | plan / ORT (interleaved) | optimized / original | streams / one stream (interleaved) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for model in "${models[@]}"; do
  src=$(model_path "$model")
  opt=$work/${model}_geopt.onnx
  plan=$work/$model.plan
  single=$work/${model}_one_stream.plan
  "$geopt" optimize "$src" -o "$opt" >/dev/null
  "$geopt" compile "$src" -o "$plan" >/dev/null
  "$geopt" compile "$src" -o "$single" --enable_single_stream=true >/dev/null
  inputs=$work/inputs/$model
  "$geopt" run "$src" --random-inputs --seed 1 --save-inputs "$inputs" >/dev/null
  args=()
  for f in "$inputs"/*.npy; do args+=(--input "$(basename "$f" .npy)=$f"); done
  for threads in 1 2; do
    ort=() original=() optimized=() planned=() one_stream=()
    for ((r = 0; r < rounds; ++r)); do
      ort+=("$(node bench/ort/latency.js "$src" "$inputs" "$threads" "$runs" "$warmup" |
               /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["median_ms"])')")
      original+=("$(geopt_ms "$src" "$threads")")
      optimized+=("$(geopt_ms "$opt" "$threads")")
      planned+=("$(geopt_ms "$plan" "$threads")")
      one_stream+=("$(geopt_ms "$single" "$threads")")
    done
    streams=$("$geopt" plan dump "$plan" --json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["stream_count"])')
    b_over_a() { "$ab_bench" "$1" "$2" "$inputs" "$threads" "$pairs" "$runs" "$pause_ms" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["b_over_a"])'; }
    vs_ort=$(b_over_a "ort:$src" "$plan")
    vs_one_stream=$(b_over_a "$single" "$plan")
    /usr/bin/python3 - "$model" "$threads" "$streams" "$(median "${ort[@]}")" "$(median "${original[@]}")" "$(median "${optimized[@]}")" \
      "$(median "${planned[@]}")" "$(median "${one_stream[@]}")" "$vs_ort" "$vs_one_stream" <<'EOF'
import sys
model, threads, streams = sys.argv[1:4]
o, g, z, p, s, po, ab = map(float, sys.argv[4:11])
print(f"| {model} | {threads} | {o:.1f} | {g:.1f} | {z:.1f} | {p:.1f} ({streams} streams) | {s:.1f} | {p / o:.2f} | {po:.2f} | {z / g:.2f} | {ab:.3f} |")
EOF
  done
done
