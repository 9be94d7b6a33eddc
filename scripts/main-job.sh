#!/usr/bin/env bash
# Sets up a Debian 12 machine, builds geopt and runs the main job on the shipped
# example model: optimize it for Ascend910B1 (fusions, modeled latency before and
# after, the numerical check), compile it to an execution plan (memory plan,
# streams and events; the plan executor checked against the original), then run
# the plan on the reference input and compare with torch's output. A model path
# as the first argument replaces the example (then only `compile` runs).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DGEOPT_BUILD_TESTS=OFF >/dev/null
cmake --build build/release -j "$(nproc)" >/dev/null
geopt=build/release/cli/geopt
mkdir -p build/main-job
if [[ $# -gt 0 ]]; then
  "$geopt" compile "$1" -o build/main-job/model.plan --soc-version Ascend910B1
  exit
fi
example=examples/models/bert_tiny_op13
"$geopt" optimize "$example.onnx" -o build/main-job/optimized.onnx --soc-version Ascend910B1 \
  --export-compile-stat build/main-job/fusion_result.json
echo
inputs=()
for f in "$example"/inputs/*.npy; do inputs+=(--input "$(basename "$f" .npy)=$f"); done
"$geopt" compile "$example.onnx" -o build/main-job/model.plan --soc-version Ascend910B1
echo
"$geopt" run build/main-job/model.plan "${inputs[@]}" --compare "$example/outputs"
