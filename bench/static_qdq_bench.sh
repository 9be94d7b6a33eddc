#!/usr/bin/env bash
# geopt on models quantized as onnxruntime's quantize_static writes them (QDQ, per-channel
# int8 weights; bench/static_qdq.py re-enacts it, ONNX Runtime calibrating on SAMPLES random
# inputs): per model and activation type, the QuantizeLinear and DequantizeLinear nodes
# left after `geopt optimize` (the issue's measure: at most 10%), the op types left
# unfused, the plan's kernels and modeled latency (one stream) against the float model's
# under force_fp16 (Ascend910B1), and the plan's output against ONNX Runtime running the same QDQ
# model on the same input.
#   bench/static_qdq_bench.sh [BUILD_DIR] [SAMPLES] [MODEL:TYPE...]
# MODEL: resnet50 or a zoo entry (examples/zoo.py --list, full size, opset 17: bert is BERT-base,
# vit_b_16 ViT-B/16); TYPE uint8 or int8.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
samples=${2:-4}
shift $(( $# < 2 ? $# : 2 ))
runs=("$@")
[[ ${#runs[@]} -gt 0 ]] || runs=(resnet50:uint8 resnet50:int8 mobilenet_v3_large:int8 efficientnet_b0:uint8 bert:uint8 vit_b_16:uint8)
geopt=$build/cli/geopt
work=bench/out/static_qdq
mkdir -p "$work"
source bench/ort/setup.sh
ensure_ort
model_of() {
  case $1 in
    resnet50)
      [[ -f bench/out/resnet50_op13.onnx ]] || /usr/bin/python3 examples/export_models.py --resnet50 bench/out/resnet50_op13.onnx >&2
      echo bench/out/resnet50_op13.onnx ;;
    *)
      [[ -f bench/out/zoo/$1_op17.onnx ]] || /usr/bin/python3 examples/zoo.py --size full --out bench/out/zoo --only "$1" --opsets 17 >&2
      echo "bench/out/zoo/$1_op17.onnx" ;;
  esac
}
count() { /usr/bin/python3 -c "
import onnx, sys
ops = [n.op_type for n in onnx.load(sys.argv[1]).graph.node]
print(ops.count('QuantizeLinear') + ops.count('DequantizeLinear'))" "$1"; }
field() { /usr/bin/python3 -c "import json,sys; j=json.load(sys.stdin); print(eval(sys.argv[1], {}, {'j': j}))" "$1"; }

echo "| model | activations | Q/DQ in the model | Q/DQ left | left unfused | kernels | modeled INT8 / float force_fp16 | plan vs ONNX Runtime (cosine, max abs) |"
echo "|---|---|---|---|---|---|---|---|"
for run in "${runs[@]}"; do
  name=${run%%:*} type=${run##*:}
  src=$(model_of "$name")
  cal=$work/$name.cal
  if [[ ! -d $cal ]]; then
    for s in $(seq 1 "$samples"); do "$geopt" run "$src" --random-inputs --seed "$s" --save-inputs "$cal/$s" > /dev/null; done
  fi
  qdq=$work/${name}_$type.onnx
  /usr/bin/python3 bench/static_qdq.py "$src" "$qdq" --calibration "$cal" --activation-type "$type" > /dev/null
  "$geopt" optimize "$qdq" -o "$work/${name}_${type}_opt.onnx" --no-check --json > "$work/${name}_$type.optimize.json"
  unfused=$(field "', '.join('%s %d' % kv for kv in sorted(j['unfused'].items(), key=lambda kv: -kv[1]))" < "$work/${name}_$type.optimize.json")
  "$geopt" compile "$qdq" -o "$work/${name}_$type.plan" --json > "$work/${name}_$type.compile.json"
  float_us=$("$geopt" compile "$src" --no-check --json | field "'%.1f' % j['latency_us']['after']")
  int8=$(field "'%d|%.1f' % (j['kernels']['after'], j['latency_us']['after'])" < "$work/${name}_$type.compile.json")
  ref=$work/${name}_$type.ort
  rm -rf "$ref" && mkdir -p "$ref"
  node bench/ort/reference.js "$qdq" "$cal/1" "$ref" > /dev/null
  args=()
  for f in "$cal"/1/*.npy; do args+=(--input "$(basename "${f%.npy}")=$f"); done
  cmp=$("$geopt" run "$work/${name}_$type.plan" "${args[@]}" --compare "$ref" --atol 1 --rtol 1 --json |
        field "'%.6f, %.4g' % (min(o['cosine'] for o in j['outputs']), max(o['max_abs'] for o in j['outputs']))")
  before=$(count "$qdq") after=$(count "$work/${name}_${type}_opt.onnx")
  echo "| $name | $type | $before | $after ($(/usr/bin/python3 -c "print('%.1f%%' % (100 * $after / $before))")) | $unfused | ${int8%|*} | ${int8#*|} / $float_us us = $(/usr/bin/python3 -c "print('%.2f' % (${int8#*|} / $float_us))") | $cmp |"
done
