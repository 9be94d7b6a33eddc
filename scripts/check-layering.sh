#!/usr/bin/env bash
# The layering docs/ARCHITECTURE.md describes, checked on the sources: engine/ names no
# Ascend layout or op (they are backends/ascend's, registered by it), and ops are known
# by their traits in the op registry rather than by comparing names (at most 40
# comparisons of a name with a literal, each where the name is the data).
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
if ascend=$(grep -rlE 'NC1HWC0|FRACTAL|TransData' engine); then
  echo "engine/ names Ascend's layouts or ops (they belong in backends/ascend/device_ops):" >&2
  echo "$ascend" >&2
  status=1
fi
comparisons=$(grep -rnE '== *"[A-Z][A-Za-z0-9]*"' backends engine dsl cli | wc -l)
if ((comparisons > 40)); then
  echo "$comparisons comparisons of a name with a literal in backends engine dsl cli (at most 40):" >&2
  grep -rnE '== *"[A-Z][A-Za-z0-9]*"' backends engine dsl cli >&2
  echo "ask the op registry's traits (engine/ops/op_traits.h) or a table instead" >&2
  status=1
fi
exit "$status"
