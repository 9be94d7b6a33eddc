#!/usr/bin/env bash
# Kernels and modeled latency, geopt against ONNX Runtime, on the full-size zoo
# (examples/zoo.py --size full, exported here on first use; nothing committed).
#
# Both graphs are counted by the one counter, bench/count_kernels.py (a node that
# launches work at run time: not a Constant, not a view such as Reshape, not an op of
# constants alone), and both are priced by geopt's cost model (`geopt cost`, Ascend910B1,
# force_fp16). ONNX Runtime's graph is level 'all' as it saves it (optimizedModelFilePath);
# its contrib ops are priced as the geopt kernel doing the same work, with the shapes
# the original model's inference gives the values ONNX Runtime kept (a tensor it renamed
# has no known size and is priced at its launch only: its latency is then a lower
# bound, and the row says how many such values there are).
#
#   bench/kernel_bench.sh [BUILD_DIR] [NAME_opK ...]     (default: every zoo entry at opsets 13 and 17)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
shift || true
geopt=$build/cli/geopt
zoo=bench/out/zoo
out=bench/out/kernels
mkdir -p "$zoo" "$out"
source bench/ort/setup.sh
ensure_ort
models=("$@")
if [[ ${#models[@]} -eq 0 ]]; then
  for name in $(/usr/bin/python3 examples/zoo.py --list | awk '{print $1}'); do models+=("${name}_op13" "${name}_op17"); done
fi
echo "| model | input kernels | ORT kernels | geopt kernels | geopt / ORT | TransData | left unfused (Softmax, Erf, Tanh, Pow, ReduceMean, Sqrt, LayerNormalization) | modeled us: input / ORT / geopt | e-classes / e-nodes | optimize ms | check |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for model in "${models[@]}"; do
  name=${model%_op*}
  opset=${model##*_op}
  [[ -f $zoo/$model.onnx ]] || /usr/bin/python3 examples/zoo.py --size full --out "$zoo" --only "$name" --opsets "$opset" >/dev/null
  node bench/ort/optimize.js "$zoo/$model.onnx" "$out/${model}_ort.onnx" 2>/dev/null
  # Every model checked, however large (the default skips models over 512 MB).
  "$geopt" optimize "$zoo/$model.onnx" -o "$out/${model}_geopt.onnx" --json --check-size-cap 8192 > "$out/$model.json" 2> "$out/$model.err" || {
    echo "| $model | geopt optimize failed: $(tail -1 "$out/$model.err") |"
    continue
  }
  /usr/bin/python3 - "$zoo/$model.onnx" "$out/${model}_ort.onnx" "$out/${model}_ort_shaped.onnx" <<'PY'
# ONNX Runtime's graph with the original model's inferred shapes on the values it kept.
import sys
import onnx
import onnx.defs
from onnx import shape_inference

original, ort, shaped = sys.argv[1:4]
known = {}
g = shape_inference.infer_shapes(onnx.load(original, load_external_data=False)).graph
for v in list(g.value_info) + list(g.input) + list(g.output):
    known[v.name] = v
m = onnx.load(ort)
# ONNX Runtime writes its own ops into the ONNX domain (LayerNormalization at any opset,
# SimplifiedLayerNormalization): the priced copy declares opset 17 for the first and
# puts the rest, which no ONNX opset has, in com.microsoft.
default = next(o for o in m.opset_import if o.domain in ("", "ai.onnx"))
for n in m.graph.node:
    if n.domain not in ("", "ai.onnx"):
        continue
    if n.op_type == "LayerNormalization" and default.version < 17:
        default.version = 17
    elif not onnx.defs.has(n.op_type):
        n.domain = "com.microsoft"
        if not any(o.domain == "com.microsoft" for o in m.opset_import):
            m.opset_import.add(domain="com.microsoft", version=1)
have = {v.name for v in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output)} | {i.name for i in m.graph.initializer}
unknown = 0
for n in m.graph.node:
    for o in n.output:
        if not o or o in have:
            continue
        if o in known:
            m.graph.value_info.append(known[o])
            have.add(o)
        else:
            unknown += 1
onnx.save(m, shaped)
print(unknown, file=open(shaped + ".unknown", "w"))
PY
  failed=
  for side in input ort geopt; do
    case $side in input) f=$zoo/$model.onnx ;; ort) f=$out/${model}_ort_shaped.onnx ;; geopt) f=$out/${model}_geopt.onnx ;; esac
    "$geopt" cost "$f" --json > "$out/${model}_cost_$side.json" 2> "$out/${model}_cost_$side.err" || failed="geopt cost of the $side graph: $(tail -1 "$out/${model}_cost_$side.err")"
  done
  if [[ -n $failed ]]; then
    echo "| $model | $failed |"
    continue
  fi
  /usr/bin/python3 - "$model" "$zoo/$model.onnx" "$out/${model}_ort.onnx" "$out/${model}_geopt.onnx" "$out" <<'PY'
import json
import sys
import onnx
sys.path.insert(0, "bench")
from count_kernels import count

model, original, ort, ours, out = sys.argv[1:6]
k_in, k_ort, k_geo = (count(onnx.load(p, load_external_data=False)) for p in (original, ort, ours))
report = json.load(open(f"{out}/{model}.json"))
cost = {side: json.load(open(f"{out}/{model}_cost_{side}.json"))["latency_us"] for side in ("input", "ort", "geopt")}
unknown = int(open(f"{out}/{model}_ort_shaped.onnx.unknown").read())
watched = ("Softmax", "Erf", "Tanh", "Pow", "ReduceMean", "Sqrt", "LayerNormalization")
left = ", ".join(f"{op} {k_geo[op]}" for op in watched if k_geo.get(op)) or "none"
n_in, n_ort, n_geo = sum(k_in.values()), sum(k_ort.values()), sum(k_geo.values())
ort_us = f"{cost['ort']:.0f}" + (f" (lower bound: {unknown} values of unknown size)" if unknown else "")
sat = report["saturation"]
check = report["check"].get("skipped") or ("ok" if report["check"]["ok"] else "FAILED") + f" (max abs error {report['check']['max_abs_error']:.1e})"
print(f"| {model} | {n_in} | {n_ort} | {n_geo} | {n_geo / n_ort:.2f} | {k_geo.get('ai.geopt::TransData', 0)} | {left} | "
      f"{cost['input']:.0f} / {ort_us} / {cost['geopt']:.0f} | {sat['eclasses']} / {sat['enodes']} | "
      f"{sum(report['time_ms'].values()):.0f} | {check} |")
PY
done
