#!/usr/bin/env bash
# How geopt's own cost grows with the model: GPT-2-style decoders that differ only in
# depth (12/24/48/96 layers, hidden 256) or only in width (2 layers, hidden
# 256/512/1024/2048), and elementwise chains of 2,000, 8,000 and 32,000 ops. For each:
# `geopt optimize --no-check` and `geopt compile --no-check`, every phase's time
# (median of RUNS), peak RSS, the weights' own bytes, and the ratio of each figure
# to the series' smallest model (RSS ratios exclude the weights' bytes). Runs go round
# robin over each series' models; outputs are written to a tmpfs (/dev/shm).
#   bench/scaling_bench.sh [BUILD_DIR] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
runs=${2:-3}
geopt=$build/cli/geopt
out=bench/out
mkdir -p "$out"
for layers in 12 24 48 96; do
  [[ -f $out/gpt2_L${layers}_h256.onnx ]] || /usr/bin/python3 examples/export_models.py --gpt2-scaled "$layers" 256 "$out/gpt2_L${layers}_h256.onnx"
done
for hidden in 256 512 1024 2048; do
  [[ -f $out/gpt2_L2_h${hidden}.onnx ]] || /usr/bin/python3 examples/export_models.py --gpt2-scaled 2 "$hidden" "$out/gpt2_L2_h${hidden}.onnx"
done
for n in 2000 8000 32000; do
  [[ -f $out/chain_$n.onnx ]] || /usr/bin/python3 bench/make_chain.py "$n" "$out/chain_$n.onnx"
done

# Outputs go to a tmpfs where there is one: the figures are geopt's own cost, not the
# disk's (every write ends in an fsync, whose time on this VM varies by 3x run to run).
scratch=$out
[[ -d /dev/shm && -w /dev/shm ]] && scratch=$(mktemp -d /dev/shm/geopt-scaling.XXXXXX)
trap '[[ $scratch != "$out" ]] && rm -rf "$scratch"' EXIT

# One line of JSON per run: the command's own report plus its peak RSS.
measure() {  # measure MODEL COMMAND
  local model=$1 command=$2
  if [[ $command == optimize ]]; then
    /usr/bin/time -f "%M" -o "$out/scaling.rss" "$geopt" optimize "$model" -o "$scratch/scaling_out.onnx" --no-check --json >"$out/scaling.json"
  else
    /usr/bin/time -f "%M" -o "$out/scaling.rss" "$geopt" compile "$model" -o "$scratch/scaling_out.plan" --no-check --json >"$out/scaling.json"
  fi
  "$geopt" info --json "$model" >"$out/scaling_info.json"
  /usr/bin/python3 -c 'import json, sys
print(json.dumps({"model": sys.argv[1], "command": sys.argv[2], "rss_kib": int(open(sys.argv[3]).read().split()[-1]),
                  "report": json.load(open(sys.argv[4])), "weights": json.load(open(sys.argv[5]))}))' \
    "$model" "$command" "$out/scaling.rss" "$out/scaling.json" "$out/scaling_info.json"
  rm -f "$scratch"/scaling_out.*
}

series() {  # series NAME MODEL...
  local name=$1
  shift
  # Round robin over the models, so that the machine's drift touches them all alike.
  for ((r = 0; r < runs; r++)); do
    for model in "$@"; do
      measure "$model" optimize
      measure "$model" compile
    done
  done >"$out/scaling_rows.jsonl"
  /usr/bin/python3 - "$name" "$out/scaling_rows.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[2])]
name = sys.argv[1]
models = list(dict.fromkeys(r["model"] for r in rows))
def med(model, command, get):
    return statistics.median(get(r) for r in rows if r["model"] == model and r["command"] == command)
def wall(r):  # every phase the command reports
    return sum(r["report"]["time_ms"].values())
def opt_phase(p):
    return lambda r: r["report"]["time_ms"][p]
stats = {}
for m in models:
    w = next(r["weights"]["parameter_bytes"] for r in rows if r["model"] == m) / 2**20
    nodes = next(r["weights"]["node_count"] for r in rows if r["model"] == m)
    o = next(r for r in rows if r["model"] == m and r["command"] == "optimize")["report"]
    stats[m] = dict(
        nodes=nodes, weights=w, enodes=o["saturation"]["enodes"], iterations=o["saturation"]["iterations"],
        opt=med(m, "optimize", wall), sat=med(m, "optimize", opt_phase("saturation")),
        ext=med(m, "optimize", opt_phase("extraction")), opt_rss=med(m, "optimize", lambda r: r["rss_kib"]) / 1024,
        comp=med(m, "compile", wall), lower=med(m, "compile", opt_phase("lower")),
        comp_rss=med(m, "compile", lambda r: r["rss_kib"]) / 1024, latency=o["latency_us"]["after"])
base = stats[models[0]]
print(f"### {name}")
print()
print("| model | nodes | e-nodes | weights MiB | optimize ms | saturation ms | extraction ms | optimize RSS MiB | compile ms | lowering ms | compile RSS MiB | modeled us |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for m in models:
    s = stats[m]
    print(f"| {m.split('/')[-1]} | {s['nodes']:,} | {s['enodes']:,} | {s['weights']:.1f} | {s['opt']:.0f} | {s['sat']:.0f} | {s['ext']:.1f} | "
          f"{s['opt_rss']:.0f} | {s['comp']:.0f} | {s['lower']:.0f} | {s['comp_rss']:.0f} | {s['latency']:.1f} |")
print()
print("| model | nodes x | optimize time x | compile time x | optimize RSS x (less weights) | compile RSS x (less weights) |")
print("|---|---|---|---|---|---|")
for m in models:
    s = stats[m]
    rss = lambda k: (s[k] - s["weights"]) / (base[k] - base["weights"])
    print(f"| {m.split('/')[-1]} | {s['nodes'] / base['nodes']:.2f} | {s['opt'] / base['opt']:.2f} | {s['comp'] / base['comp']:.2f} | "
          f"{rss('opt_rss'):.2f} | {rss('comp_rss'):.2f} |")
print()
PY
}

echo "scaling bench: $(date -u +%F), $(nproc) cores, $runs runs per figure (medians), $geopt"
echo
series "Depth (hidden 256, 4 heads, sequence 64, opset 13)" $out/gpt2_L{12,24,48,96}_h256.onnx
series "Width (2 layers, 4 heads, sequence 64, opset 13)" $out/gpt2_L2_h{256,512,1024,2048}.onnx
series "Elementwise chain" $out/chain_{2000,8000,32000}.onnx
