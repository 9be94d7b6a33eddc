#!/usr/bin/env bash
# Uses an installed geopt as a user would: `cmake --install BUILD_DIR` into a fresh prefix;
# Python, with PYTHONPATH=<prefix>/lib/python3/dist-packages (as the README says),
# optimizes, compiles and runs the zoo's BERT against torch's outputs with the installed
# rules and profiles, and refuses garbage;
# examples/cpp builds against the installed CMake package and runs on the zoo's ResNet-50.
#   scripts/check-install.sh BUILD_DIR [PYTHON]
set -euo pipefail
build=$(cd "$1" && pwd)
python=${2:-python3}
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" >/dev/null
test -x "$prefix/bin/geopt"
test -f "$prefix/include/geopt/geopt.h"

# The package's folder: <prefix>/lib/python3/dist-packages, or under lib/<multiarch>.
package=$(dirname "$(find "$prefix" -path '*/dist-packages/geopt/__init__.py' | head -1)")
# From somewhere else, so nothing of the source or build tree is picked up by accident;
# the rules and profiles must be the installed ones, not the source tree's.
cd "$work"
GEOPT_ZOO="$src/examples/zoo" GEOPT_PREFIX="$prefix" PYTHONPATH="$(dirname "$package")" "$python" - <<'PY'
import os
import numpy as np
import geopt

zoo, prefix = os.environ["GEOPT_ZOO"], os.environ["GEOPT_PREFIX"]
assert geopt.__file__.startswith(prefix), geopt.__file__  # the installed package
assert all(p.startswith(prefix) for p in geopt.rules.check()["paths"]), geopt.rules.check()["paths"]
feeds = {n[:-4]: np.load(os.path.join(zoo, "bert_op13", "inputs", n))
         for n in os.listdir(os.path.join(zoo, "bert_op13", "inputs"))}
result = geopt.optimize(os.path.join(zoo, "bert_op13.onnx"))
plan = geopt.compile(result.model)
outputs = plan.run(feeds)
for name in ("last_hidden_state", "pooled"):
    expected = np.load(os.path.join(zoo, "bert_op13", "outputs", name + ".npy"))
    np.testing.assert_allclose(outputs[name], expected, atol=1e-3, rtol=1e-3)
try:
    geopt.optimize(b"garbage bytes, not a model")
    raise SystemExit("garbage bytes were accepted")
except geopt.Error as e:
    assert "not a valid ONNX model" in str(e), e
assert result.report["profile_file"].startswith(prefix), result.report["profile_file"]
print("python: BERT kernels %d -> %d, outputs within 1e-3 of torch's" %
      (result.report["kernels"]["before"], result.report["kernels"]["after"]))
PY

cmake -S "$src/examples/cpp" -B "$work/example" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/example" >/dev/null
"$work/example/geopt_example" "$src/examples/zoo/resnet50_op13.onnx" Ascend310P3 | tee "$work/example.txt"
grep -q "^kernels " "$work/example.txt"
grep -q "^output  *logits float32" "$work/example.txt"
