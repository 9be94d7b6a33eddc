#!/usr/bin/env bash
# INT8 post-training quantization checked against ONNX Runtime, on the committed examples
# (random weights; real-data accuracy is issue 19, part 3): `geopt quantize` on a random
# calibration set, ONNX Runtime loads and runs the QDQ model, geopt's evaluator on the QDQ
# model is compared with ONNX Runtime's outputs, `geopt optimize` fuses it into int8
# kernels (the DequantizeLinears left over are counted), and the optimized model's
# outputs are compared with the float model's (cosine).
#   bench/quantize_bench.sh [BUILD_DIR] [SAMPLES]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/ort/setup.sh
build=${1:-build/ci}
samples=${2:-8}
geopt=$build/cli/geopt
ensure_ort
out=bench/out/quantize
rm -rf "$out"
mkdir -p "$out"
for model in resnet18_narrow_op13 mobilenetv2_half_op17 bert_tiny_op13 vit_tiny_op17; do
  src=examples/models/$model.onnx
  for i in $(seq 0 $((samples - 1))); do
    "$geopt" run "$src" --random-inputs --seed "$i" --save-inputs "$out/$model/cal/$i" >/dev/null
  done
  "$geopt" run "$src" --random-inputs --seed 1000 --save-inputs "$out/$model/held_out" --output-dir "$out/$model/float" >/dev/null
  "$geopt" quantize "$src" -o "$out/$model/int8.onnx" --calibration "$out/$model/cal" --no-progress --json > "$out/$model/quantize.json"
  node bench/ort/reference.js "$out/$model/int8.onnx" "$out/$model/held_out" "$out/$model/ort" >/dev/null
  inputs=()
  for f in "$out/$model/held_out"/*.npy; do inputs+=(--input "$(basename "$f" .npy)=$f"); done
  echo "== $model"
  # Not a pass/fail: a value that lands on a rounding boundary of a QuantizeLinear can round
  # one step apart when the two runtimes sum a conv in different orders (a float's last
  # bit), and the step then carries through the later layers. The cosine says how far.
  echo -n "geopt's evaluator on the QDQ model against ONNX Runtime's: "
  { "$geopt" run "$out/$model/int8.onnx" "${inputs[@]}" --compare "$out/$model/ort" --atol 1e-3 --rtol 1e-3 2>&1 || true; } | tail -1
  "$geopt" optimize "$out/$model/int8.onnx" -o "$out/$model/int8_optimized.onnx" --json > "$out/$model/optimize.json"
  node -e '
    const q = require(process.argv[1]), o = require(process.argv[2]);
    const dq = (m) => (m.nodes ? 0 : 0);
    console.log(`layers quantized ${q.quantized} of ${q.layers.length}; calibration-set cosine ${q.accuracy.cosine.toFixed(6)}`);
    console.log(`optimize: kernels ${o.kernels.before} -> ${o.kernels.after}, modeled ${o.latency_us.before.toFixed(1)} -> ${o.latency_us.after.toFixed(1)} us, check ${o.check.ok ? "ok" : "FAILED"} (max abs ${o.check.max_abs_error})`);
    console.log(`left unfused: ${JSON.stringify(o.unfused)}`);
  ' "$PWD/$out/$model/quantize.json" "$PWD/$out/$model/optimize.json"
  echo -n "optimized int8 model against the float model on held-out inputs: "
  "$geopt" run "$out/$model/int8_optimized.onnx" "${inputs[@]}" --compare "$out/$model/float" --atol 1 --rtol 1 | tail -1
  "$geopt" info "$out/$model/int8.onnx" | grep -E "DequantizeLinear" | sed 's/^/QDQ model: /'
  "$geopt" info "$out/$model/int8_optimized.onnx" | grep -E "DequantizeLinear|QuantConv|QuantMatMul" | sed 's/^/optimized: /'
done
