#!/usr/bin/env bash
# Sets up a Debian 12 machine, builds geopt and runs the main job on the shipped
# example model. Extra arguments replace the default model path.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DGEOPT_BUILD_TESTS=OFF >/dev/null
cmake --build build/release -j "$(nproc)" >/dev/null
model=${1:-examples/models/bert_tiny_op13.onnx}
build/release/cli/geopt info "$model"
