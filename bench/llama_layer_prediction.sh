#!/usr/bin/env bash
# The seed's LLaMA-7B table (per decoder layer on Ascend 910: no fusion 4.2 ms, FA+LN
# 2.8 ms, full fusion 1.6 ms, full fusion with memory reuse and streams 1.3 ms) as
# geopt's prediction (docs/COSTMODEL.md, "LLaMA-7B"): one LLaMA-2-7B-shaped decoder layer
# (hidden 4096, 32 heads, SwiGLU 11008, RMSNorm, rotary, causal) at a prefill of 1024
# tokens, on Ascend910A and Ascend910B2, optimized
#   - with every fusion rule switched off (tag `fusion`; layouts still chosen),
#   - with only the attention fusions (FlashAttention) switched on,
#   - with everything,
# printing modeled latency and HBM traffic. The last row compiles the fully fused layer and
# simulates its plan (memory reuse, up to 4 streams: `geopt profile`).
#
#   bench/llama_layer_prediction.sh        (BUILD, default build/ci; OUT, default bench/out/fidelity)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build/ci}
OUT=${OUT:-bench/out/fidelity}
geopt=$BUILD/cli/geopt
/usr/bin/python3 bench/cost_fidelity_models.py "$OUT" --only llama_layer >/dev/null
model=$OUT/llama_layer.onnx
work=$OUT/llama_prediction
mkdir -p "$work"
printf '[tags]\nfusion = "off"\n' > "$work/no_fusion.toml"
{
  printf '[tags]\nfusion = "off"\n[rules]\n'
  grep -oE '^rule (Attention[A-Za-z]*) \[fusion, attention\]' rules/attention.gerule | awk '{print $2 " = \"on\""}'
} > "$work/attention_only.toml"
summary() {  # summary SOC LABEL [optimize options...]
  local soc=$1 label=$2
  shift 2
  "$geopt" optimize "$model" --soc-version "$soc" --input_shape hidden:1,1024,4096 --no-check --json -o "$work/$soc.onnx" "$@" |
    /usr/bin/python3 -c 'import json, sys
d = json.load(sys.stdin)
print("| %s | %s | %d | %.2f ms | %.2f GB |" % (sys.argv[1], sys.argv[2], d["kernels"]["after"], d["latency_us"]["after"] / 1000, d["hbm_bytes"]["after"] / 1e9))' "$soc" "$label"
}
echo "| soc | configuration | kernels | modeled latency | HBM traffic |"
echo "|---|---|---|---|---|"
for soc in Ascend910A Ascend910B2; do
  summary "$soc" "no fusion" --fusion-switch-file "$work/no_fusion.toml"
  summary "$soc" "FlashAttention only" --fusion-switch-file "$work/attention_only.toml"
  summary "$soc" "everything"
  "$geopt" compile "$model" --soc-version "$soc" --input_shape hidden:1,1024,4096 --no-check -o "$work/$soc.plan" >/dev/null
  "$geopt" profile "$work/$soc.plan" --json | /usr/bin/python3 -c 'import json, sys
d = json.load(sys.stdin)
print("| %s | everything, memory reuse %.0f%%, %d streams (simulated) | | %.2f ms | |" % (sys.argv[1], 100 * d["memory_reuse_rate"], len(d["streams"]), d["latency_us"] / 1000))' "$soc"
done
