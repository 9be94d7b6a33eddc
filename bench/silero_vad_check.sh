#!/usr/bin/env bash
# Silero VAD (trained, shipped by npm's @ricky0123/vad-web; installed here, never in CI):
# v4 ("legacy": an If on the sample rate around two LSTM encoders), v5 and v6 (an If
# around a conv encoder and an LSTM cell whose exporter left shape-only Ifs inside).
#
# Per model, on one 512-sample chunk at 16 kHz (a 440 Hz tone with noise, zero state):
#   1. ONNX Runtime (CPU, optimizations off) as the reference;
#   2. `geopt run` on the model;
#   3. `geopt compile --input_shape ... --check-input sr=...` (the check runs the 16 kHz
#      path: the 8 kHz one expects 256-sample chunks), then `geopt run` on the plan.
# Prints a Markdown table of the max abs errors against ONNX Runtime.
#
#   bench/silero_vad_check.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/ci}
geopt=$build/cli/geopt
root=bench/out/silero_vad
mkdir -p "$root"
source bench/ort/setup.sh
ensure_ort
ensure_npm_package "$root" @ricky0123/vad-web@0.0.31
dist=$root/node_modules/@ricky0123/vad-web/dist

/usr/bin/python3 - "$root" <<'PY'
import os, sys
import numpy as np
root = sys.argv[1]
rng = np.random.default_rng(1)
t = np.arange(512, dtype=np.float32) / 16000
chunk = (0.5 * np.sin(2 * np.pi * 440 * t) + 0.05 * rng.standard_normal(512)).astype(np.float32)[None]
for name, state in (("v5", {"state": (2, 1, 128)}), ("legacy", {"h": (2, 1, 64), "c": (2, 1, 64)})):
    d = os.path.join(root, "in_" + name)
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "input.npy"), chunk)
    np.save(os.path.join(d, "sr.npy"), np.array(16000, dtype=np.int64))
    for k, shape in state.items():
        np.save(os.path.join(d, k + ".npy"), np.zeros(shape, np.float32))
PY

max_abs() { grep -oE 'max_abs [0-9.e+-]+' "$1" | awk '{ if ($2 > m) m = $2 } END { printf "%.2g", m }'; }
echo "| model | nodes (If bodies included) | geopt run vs ORT | plan vs ORT | plan kernels (bodies) |"
echo "|---|---|---|---|---|"
for entry in "legacy in_legacy input:1,512;h:2,1,64;c:2,1,64" "v5 in_v5 input:1,512;state:2,1,128" "v6 in_v5 input:1,512;state:2,1,128"; do
  read -r name inputs shape <<< "$entry"
  model=$dist/silero_vad_$name.onnx
  out=$root/$name
  rm -rf "$out" && mkdir -p "$out/ref"
  node bench/ort/reference.js "$model" "$root/$inputs" "$out/ref"
  args=()
  for f in "$root/$inputs"/*.npy; do args+=(--input "$(basename "$f" .npy)=$f"); done
  "$geopt" run "$model" "${args[@]}" --compare "$out/ref" > "$out/run.txt"
  "$geopt" compile "$model" -o "$out/model.plan" --input_shape "$shape" --check-input "sr=$root/$inputs/sr.npy" > "$out/compile.txt" 2> "$out/compile.err"
  "$geopt" run "$out/model.plan" "${args[@]}" --compare "$out/ref" > "$out/plan_run.txt"
  nodes=$(/usr/bin/python3 -c "
import onnx, sys
def count(g): return sum(1 + sum(count(a.g) for a in n.attribute if a.type == onnx.AttributeProto.GRAPH) for n in g.node)
print(count(onnx.load(sys.argv[1]).graph))" "$model")
  kernels=$("$geopt" plan dump "$out/model.plan" --json | /usr/bin/python3 -c "
import json, sys
def count(p): return sum(1 + sum(count(b['plan']) for b in k.get('bodies', []) if 'plan' in b) for k in p.get('kernels', []))
print(count(json.load(sys.stdin)))")
  echo "| silero_vad_$name | $nodes | $(max_abs "$out/run.txt") | $(max_abs "$out/plan_run.txt") | $kernels |"
done
