#!/usr/bin/env bash
# Sets up a Debian 12 machine, builds geopt and runs the main job on the shipped
# example model: its summary, then a run checked against torch's reference output.
# A model path as the first argument replaces the example (then no reference check).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DGEOPT_BUILD_TESTS=OFF >/dev/null
cmake --build build/release -j "$(nproc)" >/dev/null
geopt=build/release/cli/geopt
if [[ $# -gt 0 ]]; then
  "$geopt" info "$1"
  "$geopt" run "$1" --random-inputs
  exit
fi
example=examples/models/bert_tiny_op13
"$geopt" info "$example.onnx"
echo
inputs=()
for f in "$example"/inputs/*.npy; do inputs+=(--input "$(basename "$f" .npy)=$f"); done
"$geopt" run "$example.onnx" "${inputs[@]}" --compare "$example/outputs"
