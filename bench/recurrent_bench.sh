#!/usr/bin/env bash
# Recurrent kernels: oneDNN's RNN primitives against geopt's general step loop and
# against ONNX Runtime, on bidirectional LSTM, GRU (linear_before_reset, as torch
# exports it) and RNN layers (T=64, batch 8, input and hidden 256, constant weights).
# The loop runs the same node with clip=1e30, which changes no value but is outside
# what the primitives compute. Same inputs on every side; medians of RUNS runs.
#   bench/recurrent_bench.sh [BUILD_DIR] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/ci}
runs=${2:-20}
warmup=3
geopt=$build/cli/geopt
out=bench/out/recurrent
mkdir -p "$out"
source bench/ort/setup.sh
ensure_ort

/usr/bin/python3 - "$out" <<'PY'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
out = sys.argv[1]
T, B, I, H = 64, 8, 256, 256
for op, gates, extra in (("LSTM", 4, {}), ("GRU", 3, {"linear_before_reset": 1}), ("RNN", 1, {})):
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((2, gates * H, I)) * 0.05).astype(np.float32)
    r = (rng.standard_normal((2, gates * H, H)) * 0.05).astype(np.float32)
    b = (rng.standard_normal((2, 2 * gates * H)) * 0.05).astype(np.float32)
    for variant, clip in (("primitive", {}), ("loop", {"clip": 1e30})):
        node = helper.make_node(op, ["X", "W", "R", "B"], ["Y"], hidden_size=H, direction="bidirectional", **extra, **clip)
        graph = helper.make_graph([node], op.lower(), [helper.make_tensor_value_info("X", TensorProto.FLOAT, [T, B, I])],
                                  [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [T, 2, B, H])],
                                  [numpy_helper.from_array(w, "W"), numpy_helper.from_array(r, "R"), numpy_helper.from_array(b, "B")])
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), f"{out}/{op.lower()}_{variant}.onnx")
PY

median() { /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("run_ms", d.get("median_ms")))'; }
echo "| layer | threads | primitive (ms) | loop (ms) | ONNX Runtime (ms) | primitive / loop | primitive / ORT | max abs vs ORT |"
echo "|---|---|---|---|---|---|---|---|"
for op in lstm gru rnn; do
  inputs=$out/inputs_$op
  "$geopt" run "$out/${op}_primitive.onnx" --random-inputs --seed 1 --save-inputs "$inputs" >/dev/null
  rm -rf "$out/ref_$op" && mkdir -p "$out/ref_$op"
  node bench/ort/reference.js "$out/${op}_primitive.onnx" "$inputs" "$out/ref_$op"
  err=$("$geopt" run "$out/${op}_primitive.onnx" --input "X=$inputs/X.npy" --compare "$out/ref_$op" | grep -oE 'max_abs [0-9.e+-]+' | awk '{print $2}')
  for threads in 1 2; do
    p=$("$geopt" run "$out/${op}_primitive.onnx" --input "X=$inputs/X.npy" --threads "$threads" --repeat "$runs" --warmup "$warmup" --json | median)
    l=$("$geopt" run "$out/${op}_loop.onnx" --input "X=$inputs/X.npy" --threads "$threads" --repeat "$runs" --warmup "$warmup" --json | median)
    o=$(node bench/ort/latency.js "$out/${op}_primitive.onnx" "$inputs" "$threads" "$runs" "$warmup" | median)
    /usr/bin/python3 -c "import sys; p,l,o=map(float,sys.argv[1:4]); print(f'| $op | $threads | {p:.1f} | {l:.1f} | {o:.1f} | {p/l:.2f} | {p/o:.2f} | $err |')" "$p" "$l" "$o"
  done
done
