#!/usr/bin/env bash
# Memory planning on large models: the planned activation pool against LOAD (the
# most bytes alive at one step, a lower bound), greedy-by-size alone and no
# reuse, with the planning time (median of RUNS compiles). Optimized with the
# shipped rules for Ascend910B1 first, as `geopt compile` does.
#   bench/memory_bench.sh [BUILD_DIR] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
runs=${2:-5}
out=bench/out
declare -A flag=([bert_base_op13]=--bert-base [gpt2_small_op13]=--gpt2-small [vit_b16_op13]=--vit-b16
                 [resnet50_op13]=--resnet50 [mobilenetv2_op13]=--mobilenetv2)
echo "| model | pool (MiB) | LOAD (MiB) | pool / LOAD | greedy by size (MiB) | no reuse (MiB) | reuse rate | strategy kept | planning (ms, median of $runs) |"
echo "|---|---|---|---|---|---|---|---|---|"
for model in bert_base_op13 gpt2_small_op13 vit_b16_op13 resnet50_op13 mobilenetv2_op13; do
  [[ -f $out/$model.onnx ]] || /usr/bin/python3 examples/export_models.py "${flag[$model]}" "$out/$model.onnx" >/dev/null
  if ! "$build/cli/geopt" compile "$out/$model.onnx" --no-check --json > "$out/memory_$model.jsonl" 2> "$out/memory_$model.err"; then
    echo "| $model | not compiled: $(sed 's/^geopt: error: //' "$out/memory_$model.err") |"
    continue
  fi
  for i in $(seq 2 "$runs"); do "$build/cli/geopt" compile "$out/$model.onnx" --no-check --json; done >> "$out/memory_$model.jsonl"
  /usr/bin/python3 - "$out/memory_$model.jsonl" "$model" <<'PY'
import json, statistics, sys
text = open(sys.argv[1]).read()
runs, dec, i = [], json.JSONDecoder(), 0
while i < len(text):
    while i < len(text) and text[i].isspace(): i += 1
    if i >= len(text): break
    obj, i = dec.raw_decode(text, i)
    runs.append(obj)
m = runs[0]["memory"]
MiB = 1 << 20
ms = statistics.median(r["time_ms"]["memory_plan"] for r in runs)
print(f"| {sys.argv[2]} | {m['pool_bytes']/MiB:.2f} | {m['load_bytes']/MiB:.2f} | {m['pool_bytes']/m['load_bytes']:.3f} | "
      f"{m['strategies']['greedy by size']/MiB:.2f} | {m['no_reuse_bytes']/MiB:.2f} | {100*m['reuse_rate']:.0f}% | {m['strategy']} | {ms:.1f} |")
PY
done
