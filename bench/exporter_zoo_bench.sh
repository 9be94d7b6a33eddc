#!/usr/bin/env bash
# The exporter zoo (examples/exporters) against ONNX Runtime, like for like: kernels after
# each side's optimizer (one counter, bench/count_kernels.py: the model as given, ONNX
# Runtime's graph at level 'all', geopt optimize's), and host time of geopt's compiled plan
# against ONNX Runtime (CPU provider, level 'all') on the model's committed inputs, the
# same thread count, interleaved in one process (bench/ab_bench.cpp: the median of the
# per-pair ratios of block medians).
#   bench/exporter_zoo_bench.sh [BUILD_DIR] [THREADS] [PAIRS] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/ci}
threads=${2:-2}
pairs=${3:-6}
runs=${4:-20}
geopt=$build/cli/geopt
ab_bench=$build/bench/geopt_ab_bench
work=bench/out/exporters
mkdir -p "$work"
source bench/ort/setup.sh
ensure_ort
# What a user gives a model with open input dims: its inputs' shapes (--input_shape) and
# the inputs for the check (--check-input: a scalar that picks a branch). One per line.
shape_args() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import os, sys
import numpy as np
import onnx
model, inputs = sys.argv[1:]
g = onnx.load(model, load_external_data=False).graph
if any(not d.HasField("dim_value") for i in g.input for d in i.type.tensor_type.shape.dim):
    shapes = []
    for f in sorted(os.listdir(inputs)):
        a, name = np.load(os.path.join(inputs, f)), f[:-len(".npy")]
        print("--check-input", name + "=" + os.path.join(inputs, f), sep="\n")
        if a.ndim:
            shapes.append(name + ":" + ",".join(map(str, a.shape)))
    print("--input_shape", ";".join(shapes), sep="\n")
PY
}
echo "| model | kernels: input / ORT / geopt | plan ms | ORT ms | plan / ORT (interleaved) |"
echo "|---|---|---|---|---|"
for model in examples/exporters/*.onnx; do
  name=$(basename "$model" .onnx)
  inputs=examples/exporters/$name/inputs
  mapfile -t given < <(shape_args "$model" "$inputs")
  "$geopt" optimize "$model" -o "$work/$name.opt.onnx" "${given[@]}" > /dev/null
  "$geopt" compile "$model" -o "$work/$name.plan" "${given[@]}" > /dev/null
  node bench/ort/optimize.js "$model" "$work/$name.ort.onnx" 2> /dev/null
  kernels=$(/usr/bin/python3 bench/count_kernels.py "$model" "$work/$name.ort.onnx" "$work/$name.opt.onnx" --json |
    /usr/bin/python3 -c "import json,sys; k=[m['kernels'] for m in json.load(sys.stdin)]; print('%d / %d / %d' % tuple(k))")
  timing=$("$ab_bench" "ort:$model" "$work/$name.plan" "$inputs" "$threads" "$pairs" "$runs" 200 |
    /usr/bin/python3 -c "import json,sys; j=json.load(sys.stdin); print('%.3f | %.3f | %.2f' % (j['b_median_ms'], j['a_median_ms'], j['b_over_a']))")
  echo "| $name | $kernels | $timing |"
done
echo
echo "$(date -u +%Y-%m-%d), $(nproc) cores, $threads threads, $pairs pairs of $runs-run blocks"
