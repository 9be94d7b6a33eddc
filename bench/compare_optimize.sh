#!/usr/bin/env bash
# What two geopt builds make of the same models: kernels and modeled latency after
# `geopt optimize --no-check` (and the extraction phase's time), side by side, so a
# change to the optimizer can show it extracts the same or a cheaper graph.
#   bench/compare_optimize.sh BEFORE_GEOPT AFTER_GEOPT MODEL.onnx...
# Both run with this tree's rules (or GEOPT_RULES_DIR's, for a BEFORE build that lacks
# ops newer rules make) and the Ascend910B1 profile.
set -euo pipefail
cd "$(dirname "$0")/.."
before=$1 after=$2
rules=${GEOPT_RULES_DIR:-rules}
shift 2
out=bench/out
mkdir -p "$out"
summary() {  # summary GEOPT MODEL
  "$1" optimize "$2" -o "$out/compare_optimize.onnx" --no-check --json --rules "$rules" \
    --soc-version backends/ascend/profiles/Ascend910B1.toml |
    /usr/bin/python3 -c 'import json, sys
d = json.load(sys.stdin)
print(d["kernels"]["after"], "%.2f" % d["latency_us"]["after"], "%.1f" % d["time_ms"]["extraction"])'
}
echo "| model | kernels before / after | modeled us before / after | extraction ms before / after | |"
echo "|---|---|---|---|---|"
for model in "$@"; do
  read -r kb lb eb <<<"$(summary "$before" "$model")"
  read -r ka la ea <<<"$(summary "$after" "$model")"
  verdict=same
  if /usr/bin/python3 -c "import sys; sys.exit(0 if float('$la') > float('$lb') + 1e-6 else 1)"; then verdict="**costlier**"
  elif [[ $ka != "$kb" || $la != "$lb" ]]; then verdict=cheaper; fi
  echo "| $(basename "$model") | $kb / $ka | $lb / $la | $eb / $ea | $verdict |"
done
