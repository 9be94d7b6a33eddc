#!/usr/bin/env bash
# The rule parser's time against the nesting depth of a pattern: `geopt rules check` on a
# file with one rule whose pattern nests Relu(...) DEPTH deep, and the same for a
# variadic argument (`Relu(...)...`, the form the grammar once parsed twice per level).
# Depths past the 256-level limit are refused by a linear scan before parsing.
#   bench/parser_bench.sh [BUILD_DIR] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
runs=${2:-10}
geopt=$build/cli/geopt
out=bench/out/parser
mkdir -p "$out"
for depth in 10 100 250 1000 100000; do
  /usr/bin/python3 - "$depth" "$out/deep_$depth.gerule" <<'PY'
import sys
d, path = int(sys.argv[1]), sys.argv[2]
nested = "Relu(" * d + "%x" + ")" * d
rest = "Neg(" * d + "%y" + ")" * d
with open(path, "w") as f:
    f.write(f"rule Deep {{ match %z = Concat({nested}, {rest}...) rewrite %z => %x }}\n")
PY
done
args=()
for depth in 10 100 250 1000 100000; do args+=(-n "depth $depth" "$geopt rules check $out/deep_$depth.gerule || true"); done
hyperfine --warmup 1 --runs "$runs" --export-json "$out/parser.json" "${args[@]}" >/dev/null
/usr/bin/python3 - "$out/parser.json" <<'PY'
import json, statistics, sys
print("| depth | `geopt rules check` median ms | outcome |")
print("|---|---|---|")
for r in json.load(open(sys.argv[1]))["results"]:
    depth = int(r["command"].split()[1])
    print(f"| {depth:,} | {statistics.median(r['times']) * 1000:.1f} | {'parsed' if depth <= 256 else 'refused: deeper than 256'} |")
PY
