#!/usr/bin/env bash
# ONNX Runtime's outputs for the exporter zoo (examples/exporters.py): for each
# examples/exporters/NAME.onnx, NAME/outputs/<output>.npy from NAME/inputs/*.npy
# (onnxruntime-node 1.30 from npm, CPU, optimizations off: bench/ort/reference.js).
# Run after examples/exporters.py; the outputs are committed, so CI needs no npm.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/ort/setup.sh
ensure_ort
for model in examples/exporters/*.onnx; do
  dir=${model%.onnx}
  rm -rf "$dir/outputs" && mkdir -p "$dir/outputs"
  node bench/ort/reference.js "$model" "$dir/inputs" "$dir/outputs" >/dev/null
  echo "$(basename "$dir"): $(ls "$dir/outputs" | tr '\n' ' ')"
done
