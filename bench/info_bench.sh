#!/usr/bin/env bash
# `geopt info` on a BERT-base-sized model (~110M parameters, ~440 MB, opset 13).
# Reports the median wall time (hyperfine) and the median peak RSS over the file size.
#   bench/info_bench.sh [BUILD_DIR]      (default build/release; make it with scripts/main-job.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
geopt=$build/cli/geopt
model=bench/out/bert_base_op13.onnx
if [[ ! -f $model ]]; then
  scripts/install-deps.sh --examples
  /usr/bin/python3 examples/export_models.py --bert-base "$model"
fi
runs=10
hyperfine --warmup 1 --runs "$runs" --export-json bench/out/info_time.json "$geopt info $model" >/dev/null
rss=()
for _ in $(seq "$runs"); do
  rss+=("$( { /usr/bin/time -f '%M' "$geopt" info "$model" >/dev/null; } 2>&1 | tail -n 1)")
done
/usr/bin/python3 - "$model" bench/out/info_time.json "${rss[@]}" <<'PY'
import json, os, statistics, sys
model, timing, rss_kb = sys.argv[1], sys.argv[2], [int(x) for x in sys.argv[3:]]
size = os.path.getsize(model)
times = json.load(open(timing))["results"][0]["times"]
rss = statistics.median(rss_kb) * 1024
print(f"model            {model} ({size / 2**20:.1f} MiB)")
print(f"info wall time   median {statistics.median(times):.3f} s over {len(times)} runs (min {min(times):.3f}, max {max(times):.3f})")
print(f"peak RSS         median {rss / 2**20:.1f} MiB = {rss / size:.2f}x the file size")
PY
