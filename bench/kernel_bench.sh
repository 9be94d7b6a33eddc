#!/usr/bin/env bash
# Kernels and HBM traffic after `geopt optimize` (shipped rules, Ascend910B1) against
# ONNX Runtime's graph at level 'all' (saved with optimizedModelFilePath), on the
# benchmark models. ORT's kernels are its nodes that are not Constants. geopt's are
# the kernels its report counts (views such as Reshape launch nothing); its nodes,
# views included, are shown too. HBM traffic, modeled the same simple way for every
# graph: each node reads its inputs and writes its outputs once at f32, ops of constants
# left out as compile-time work (shapes from
# the graph's value_info, else the original model's inferred shapes; ORT's contrib
# ops leave tensors of unknown size, counted as 0, so ORT's figure is a lower bound).
#   bench/kernel_bench.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
geopt=$build/cli/geopt
out=bench/out
declare -A flag=([bert_base_op13]=--bert-base [gpt2_small_op13]=--gpt2-small [vit_b16_op13]=--vit-b16
                 [resnet50_op13]=--resnet50 [mobilenetv2_op13]=--mobilenetv2)
[[ -d bench/ort/node_modules/onnxruntime-node ]] || (cd bench/ort && npm install --no-audit --no-fund --onnxruntime-node-install=skip >/dev/null 2>&1)
echo "| model | input nodes | ORT kernels | geopt kernels | geopt / ORT | geopt nodes | input HBM (MiB) | ORT HBM, lower bound (MiB) | geopt HBM (MiB) |"
echo "|---|---|---|---|---|---|---|---|---|"
for model in bert_base_op13 gpt2_small_op13 vit_b16_op13 resnet50_op13 mobilenetv2_op13; do
  [[ -f $out/$model.onnx ]] || /usr/bin/python3 examples/export_models.py "${flag[$model]}" "$out/$model.onnx" >/dev/null
  node bench/ort/optimize.js "$out/$model.onnx" "$out/${model}_ort.onnx"
  "$geopt" optimize "$out/$model.onnx" -o "$out/${model}_geopt.onnx" --no-check --json > "$out/kernels_$model.json"
  /usr/bin/python3 - "$out/$model.onnx" "$out/${model}_ort.onnx" "$out/${model}_geopt.onnx" "$model" "$out/kernels_$model.json" <<'PY'
import json
import sys
import onnx
from onnx import shape_inference

original, ort_path, geopt_path, name, report = sys.argv[1:6]
geopt_kernels = json.load(open(report))["kernels"]["after"]

def shapes_of(model):
    out = {}
    g = model.graph
    for v in list(g.value_info) + list(g.input) + list(g.output):
        t = v.type.tensor_type
        if t.HasField("shape") and all(d.HasField("dim_value") for d in t.shape.dim):
            n = 1
            for d in t.shape.dim:
                n *= d.dim_value
            out[v.name] = n
    for init in g.initializer:
        n = 1
        for d in init.dims:
            n *= d
        out[init.name] = n
    return out

base = shapes_of(shape_inference.infer_shapes(onnx.load(original, load_external_data=False)))

def measure(path):
    m = onnx.load(path, load_external_data=False)
    known = dict(base)
    known.update(shapes_of(m))
    kernels, elements, unknown = 0, 0, 0
    # Ops of constants only (geopt leaves a weight's layout for the Cube to compile time,
    # as a TransData of the weight) run when the model is compiled, not at run time.
    constant = {i.name for i in m.graph.initializer} - {i.name for i in m.graph.input}
    for n in m.graph.node:
        if n.op_type == "Constant" or (n.input and all(not v or v in constant for v in n.input)):
            constant.update(n.output)
            continue
        kernels += 1
        for v in list(n.input) + list(n.output):
            if not v:
                continue
            if v in known:
                elements += known[v]
            else:
                unknown += 1
    return kernels, elements * 4 / 2**20, unknown

k_in, h_in, _ = measure(original)
k_ort, h_ort, u_ort = measure(ort_path)
k_geo, h_geo, u_geo = measure(geopt_path)
note = f" ({u_ort} tensors of unknown size)" if u_ort else ""
print(f"| {name} | {k_in} | {k_ort} | {geopt_kernels} | {geopt_kernels / k_ort:.2f} | {k_geo} | {h_in:.1f} | {h_ort:.1f}{note} | {h_geo:.1f} |")
PY
done
