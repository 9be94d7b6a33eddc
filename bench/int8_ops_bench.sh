#!/usr/bin/env bash
# onnxruntime's dynamic quantization at full size against ONNX Runtime, like for like:
# the U-Net of the exporter zoo as quantize_dynamic writes it (DynamicQuantizeLinear,
# ConvInteger, Cast, Mul; examples/exporters.py --full-size) at 1024 x 1024.
#   1. outputs: `geopt run` on the model and on its compiled plan against ONNX Runtime's
#      (CPU, optimizations off), max abs error and cosine;
#   2. kernels: the model as given, ONNX Runtime's graph at level 'all', geopt optimize's;
#   3. host time, interleaved in one process (bench/ab_bench.cpp, the same inputs and
#      threads, ONNX Runtime at level 'all'): geopt's evaluator on the model (what
#      `geopt run MODEL` runs) and the compiled plan, each against ONNX Runtime.
#   bench/int8_ops_bench.sh [BUILD_DIR] [THREADS] [PAIRS] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/ci}
threads=${2:-2}
pairs=${3:-4}
runs=${4:-3}
geopt=$build/cli/geopt
ab_bench=$build/bench/geopt_ab_bench
work=bench/out/int8
mkdir -p "$work"
source bench/ort/setup.sh
ensure_ort
/usr/bin/python3 examples/exporters.py --full-size "$work" > /dev/null
model=$work/dynamic_int8_unet
inputs=$model/inputs
rm -rf "$model/outputs" && mkdir -p "$model/outputs"
node bench/ort/reference.js "$model.onnx" "$inputs" "$model/outputs" > /dev/null
compare=(--input "image=$inputs/image.npy" --compare "$model/outputs" --atol 5e-2 --rtol 5e-2)
echo "outputs against ONNX Runtime:"
"$geopt" run "$model.onnx" "${compare[@]}" | tail -1 | sed 's/^/  geopt run MODEL: /'
"$geopt" compile "$model.onnx" -o "$work/unet.plan" > /dev/null
"$geopt" run "$work/unet.plan" "${compare[@]}" | tail -1 | sed 's/^/  geopt run PLAN:  /'
"$geopt" optimize "$model.onnx" -o "$work/unet.opt.onnx" > /dev/null
node bench/ort/optimize.js "$model.onnx" "$work/unet.ort.onnx" 2> /dev/null
kernels=$(/usr/bin/python3 bench/count_kernels.py "$model.onnx" "$work/unet.ort.onnx" "$work/unet.opt.onnx" --json |
  /usr/bin/python3 -c "import json,sys; k=[m['kernels'] for m in json.load(sys.stdin)]; print('%d / %d / %d' % tuple(k))")
echo
echo "| side | kernels: input / ORT / geopt | geopt ms | ORT ms | geopt / ORT (interleaved) |"
echo "|---|---|---|---|---|"
for side in "$model.onnx" "$work/unet.plan"; do
  label=$([[ $side == *.plan ]] && echo "plan (geopt run PLAN)" || echo "evaluator (geopt run MODEL)")
  timing=$("$ab_bench" "ort:$model.onnx" "$side" "$inputs" "$threads" "$pairs" "$runs" 200 |
    /usr/bin/python3 -c "import json,sys; j=json.load(sys.stdin); print('%.1f | %.1f | %.3f' % (j['b_median_ms'], j['a_median_ms'], j['b_over_a']))")
  echo "| $label | $kernels | $timing |"
done
echo
echo "$(date -u +%Y-%m-%d), $(nproc) cores, $threads threads, $pairs pairs of $runs-run blocks"
