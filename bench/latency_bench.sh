#!/usr/bin/env bash
# End-to-end latency of the reference evaluator (`geopt run`) against ONNX Runtime
# (npm onnxruntime-node, CPU provider) on ResNet-50 (batch 1, 224x224) and a
# BERT-base encoder (seq 128), with 1 and 2 threads, same model and inputs.
#   bench/latency_bench.sh [BUILD_DIR] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
runs=${2:-20}
warmup=3
geopt=$build/cli/geopt
out=bench/out
mkdir -p "$out"
[[ -f $out/resnet50_op13.onnx ]] || /usr/bin/python3 examples/export_models.py --resnet50 "$out/resnet50_op13.onnx"
[[ -f $out/bert_base_op13.onnx ]] || /usr/bin/python3 examples/export_models.py --bert-base "$out/bert_base_op13.onnx"
source bench/ort/setup.sh
ensure_ort

echo "| model | threads | geopt median (ms) | ONNX Runtime median (ms) | geopt / ORT |"
echo "|---|---|---|---|---|"
for model in resnet50_op13 bert_base_op13; do
  inputs=$out/inputs/$model
  "$geopt" run "$out/$model.onnx" --random-inputs --seed 1 --save-inputs "$inputs" >/dev/null
  args=()
  for f in "$inputs"/*.npy; do args+=(--input "$(basename "$f" .npy)=$f"); done
  for threads in 1 2; do
    g=$("$geopt" run "$out/$model.onnx" "${args[@]}" --threads "$threads" --repeat "$runs" --warmup "$warmup" --json |
        /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["run_ms"])')
    o=$(node bench/ort/latency.js "$out/$model.onnx" "$inputs" "$threads" "$runs" "$warmup" |
        /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["median_ms"])')
    /usr/bin/python3 -c "import sys; g,o=float(sys.argv[1]),float(sys.argv[2]); print(f'| $model | $threads | {g:.1f} | {o:.1f} | {g/o:.2f} |')" "$g" "$o"
  done
done
