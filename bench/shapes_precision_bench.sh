#!/usr/bin/env bash
# Precision on the trained CNN (examples/trained, examples/train_shapes.py): each precision
# mode's plan, and the INT8 model's, classify the 200 held-out images; accuracy against
# their labels, agreement with the fp32 plan's classes, and each plan's kernels and
# modeled latency (Ascend910B1).
#   bench/shapes_precision_bench.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/ci}
geopt=$build/cli/geopt
data=examples/trained/shapes_cnn_op13
model=examples/trained/shapes_cnn_op13.onnx
out=bench/out/shapes_precision
rm -rf "$out"
mkdir -p "$out"
"$geopt" quantize "$model" -o "$out/int8.onnx" --calibration "$data/calibration" --no-progress > "$out/quantize.txt"
echo "| precision | kernels | modeled latency (batch 200) | held-out accuracy | same class as fp32 |"
echo "|---|---|---|---|---|"
for mode in must_keep_origin_dtype force_fp16 allow_mix_precision int8; do
  if [[ $mode == int8 ]]; then args=("$out/int8.onnx" --input_shape image:200,1,24,24); else args=("$model" --input_shape image:200,1,24,24 --precision_mode "$mode"); fi
  "$geopt" compile "${args[@]}" -o "$out/$mode.plan" > "$out/$mode.compile.txt"
  "$geopt" run "$out/$mode.plan" --input "image=$data/test/image.npy" --output-dir "$out/$mode" > /dev/null
  kernels=$(grep -m1 '^kernels' "$out/$mode.compile.txt" | sed 's/ \+/ /g; s/^kernels //; s/ (.*//')
  latency=$(grep -m1 '^modeled latency' "$out/$mode.compile.txt" | sed 's/.*-> //; s/ (.*//')
  /usr/bin/python3 - "$out/$mode/logits.npy" "$out/must_keep_origin_dtype/logits.npy" "$data/test/labels.npy" "$mode" "$kernels" "$latency" <<'PY'
import sys
import numpy as np
got, ref, labels = (np.load(p) for p in sys.argv[1:4])
mode, kernels, latency = sys.argv[4:7]
pred, ref_pred = got.argmax(1), ref.argmax(1)
print(f"| {mode} | {kernels} | {latency} | {(pred == labels).mean():.3f} | {(pred == ref_pred).mean():.3f} |")
PY
done
echo
echo "INT8: $(grep -m1 '^calibration' "$out/quantize.txt" | sed 's/ \+/ /g; s/^calibration //'); $(grep -m1 '^layers' "$out/quantize.txt" | sed 's/ \+/ /g; s/^layers //')"
