#!/usr/bin/env bash
# End-to-end optimize time (load, optimize, write) of geopt against ONNX Runtime
# doing the same job (session at level 'all' with optimizedModelFilePath), on the
# BERT-base encoder and ResNet-50, measured in one run with hyperfine: geopt with its
# default numerical check (the original and the optimized model run on the same
# random inputs) and with --no-check. Also prints geopt's own phase times.
#   bench/optimize_bench.sh [BUILD_DIR] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
runs=${2:-10}
geopt=$build/cli/geopt
out=bench/out
[[ -f $out/resnet50_op13.onnx ]] || /usr/bin/python3 examples/export_models.py --resnet50 "$out/resnet50_op13.onnx"
[[ -f $out/bert_base_op13.onnx ]] || /usr/bin/python3 examples/export_models.py --bert-base "$out/bert_base_op13.onnx"
source bench/ort/setup.sh
ensure_ort
for model in bert_base_op13 resnet50_op13; do
  hyperfine --warmup 1 --runs "$runs" --export-json "$out/optimize_$model.json" \
    -n geopt "$geopt optimize $out/$model.onnx -o $out/${model}_geopt.onnx --no-check" \
    -n geopt-check "$geopt optimize $out/$model.onnx -o $out/${model}_geopt.onnx" \
    -n onnxruntime "node bench/ort/optimize.js $out/$model.onnx $out/${model}_ort.onnx" >/dev/null
  /usr/bin/python3 - "$out/optimize_$model.json" "$model" <<'PY'
import json, statistics, sys
r = {x["command"]: statistics.median(x["times"]) for x in json.load(open(sys.argv[1]))["results"]}
o = r['onnxruntime']
print(f"| {sys.argv[2]} | {r['geopt-check']*1000:.0f} | {r['geopt']*1000:.0f} | {o*1000:.0f} | {r['geopt-check']/o:.2f} | {r['geopt']/o:.2f} |")
PY
  "$geopt" optimize "$out/$model.onnx" | grep -E "saturation|extraction|time"
done
