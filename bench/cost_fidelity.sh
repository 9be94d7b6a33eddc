#!/usr/bin/env bash
# The cost model against real Ascend measurements (docs/COSTMODEL.md, "Fidelity").
#
#   bench/cost_fidelity.sh [--no-fit]
#
# 1. Exports what the published points need (bench/cost_fidelity_models.py: torchvision
#    ResNet-18/34/50/101/152 and ViT-B/16, B/32 with a symbolic batch, a BERT-base with
#    symbolic batch and sequence, and three single kernels), once, into $OUT.
#    (bench/llama_layer_prediction.sh uses the same folder.)
# 2. Runs `geopt optimize --soc-version SOC --input_shape ...` at each point of
#    bench/cost_fidelity_points.toml with the shipped profiles, as a user would, and keeps
#    the optimized model.
# 3. geopt_cost_fit prints published, modeled and their ratio per point, then fits the
#    profile keys [fit.SOC] names to the calibration points only (fit = true) and prints
#    the table again with the fitted values, and the checks' error on points it did not see.
# `bench/cost_fit_apply.py LOG` writes the fitted values into backends/ascend/profiles/,
# and the script is rerun until the fit no longer moves them: the optimizer's fusion and
# layout decisions follow the profile, and the points are re-optimized each run.
#
# Needs a built tree (BUILD, default build/ci) and /usr/bin/python3 with torch,
# torchvision and onnx (Debian's python3-torch, python3-torchvision, python3-onnx).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build/ci}
OUT=${OUT:-bench/out/fidelity}
POINTS=bench/cost_fidelity_points.toml
fit=--fit
[[ "${1:-}" == "--no-fit" ]] && fit=

/usr/bin/python3 bench/cost_fidelity_models.py "$OUT"
mkdir -p "$OUT/optimized"
/usr/bin/python3 - "$POINTS" "$OUT" "$BUILD/cli/geopt" <<'EOF'
import subprocess, sys, tomllib
points, out, geopt = sys.argv[1:]
with open(points, "rb") as f:
    spec = tomllib.load(f)
for i, p in enumerate(spec["point"]):
    cmd = [geopt, "optimize", f"{out}/{p['model']}.onnx", "--soc-version", p["soc"], "--no-check",
           "-o", f"{out}/optimized/point_{i}.onnx"]
    if p.get("input_shape"):
        cmd += ["--input_shape", p["input_shape"]]
    cmd += p.get("options", [])  # the published compile's ATC options geopt models
    print(f"[{i + 1}/{len(spec['point'])}] {p['name']} on {p['soc']}", file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
EOF
"$BUILD/bench/geopt_cost_fit" "$POINTS" "$OUT/optimized" $fit
