#!/usr/bin/env bash
# Writes each case's expected outputs (CASE/expected/<output>.npy) as ONNX Runtime
# computes them (npm onnxruntime-node, CPU, graph optimizations off), for
# tests/test_opsets18_21.cpp. Run after make_cases.py; needs npm (not run in CI: the
# references are committed).
#   tests/opsets18_21/reference.sh [CASES_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/ort/setup.sh
ensure_ort
dir=${1:-tests/opsets18_21}
for model in "$dir"/*/model.onnx; do
  case_dir=$(dirname "$model")
  rm -rf "$case_dir/expected"
  node bench/ort/reference.js "$model" "$case_dir/inputs" "$case_dir/expected" || echo "$(basename "$case_dir"): ONNX Runtime refused it" >&2
done
