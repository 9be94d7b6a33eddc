#!/usr/bin/env bash
# Operator tuning (geopt tune --job_type 2) on models nobody tuned the kernels for: per
# model, the untuned plan and the plan compiled with the bank against ONNX Runtime and
# against each other, each pair interleaved in one process (bench/ab_bench.cpp: the same
# .npy inputs and intra-op threads on both sides, PAIRS pairs of blocks of RUNS runs, 200
# ms pauses, the median of the per-pair ratios; tuned against untuned with twice the pairs,
# and not at all where the two plans are the same bytes); the tuning's wall time; and the compile
# time with and without the bank (hyperfine-free: the median of 3 runs of each).
#   bench/tune_bench.sh [BUILD_DIR] [THREADS] [PAIRS] [RUNS] [MODEL...]
# A model is a zoo entry (examples/zoo.py --list, full size, opset 17) or resnet50.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
threads=${2:-2}
pairs=${3:-8}
runs=${4:-5}
shift $(( $# < 4 ? $# : 4 ))
models=("$@")
[[ ${#models[@]} -gt 0 ]] || models=(efficientnet_b0 shufflenet_v2_x1_0 resnet50 mobilenet_v3_large densenet121 squeezenet1_0
                                     regnet_y_400mf convnext_tiny csp_darknet deeplabv3_mobilenet_v3_large vit_b_16
                                     whisper_encoder t5_encoder)
geopt=$build/cli/geopt
ab_bench=$build/bench/geopt_ab_bench
zoo=bench/out/zoo
work=bench/out/tune
mkdir -p "$work" "$zoo"
source bench/ort/setup.sh
ensure_ort
export OMP_NUM_THREADS=$threads  # the bank's key: tune, compile and run at one team size

model_of() {
  case $1 in
    resnet50)
      [[ -f bench/out/resnet50_op13.onnx ]] || /usr/bin/python3 examples/export_models.py --resnet50 bench/out/resnet50_op13.onnx >&2
      echo bench/out/resnet50_op13.onnx ;;
    *)
      [[ -f $zoo/$1_op17.onnx ]] || /usr/bin/python3 examples/zoo.py --size full --out "$zoo" --only "$1" --opsets 17 >&2
      echo "$zoo/$1_op17.onnx" ;;
  esac
}
field() { /usr/bin/python3 -c "import json,sys; j=json.load(sys.stdin); print(eval(sys.argv[1], {}, {'j': j}))" "$1"; }
seconds() { local t0=$EPOCHREALTIME; "$@" > /dev/null; /usr/bin/python3 -c "print($EPOCHREALTIME - $t0)"; }
median3() { /usr/bin/python3 -c 'import statistics,sys; print("%.2f" % statistics.median(float(v) for v in sys.argv[1:]))' "$@"; }

echo "| model | signatures (switched / kept / taken back) | whole-plan check | tuning (s) | untuned / ORT | tuned / ORT | tuned / untuned | compile with bank / without |"
echo "|---|---|---|---|---|---|---|---|"
for model in "${models[@]}"; do
  src=$(model_of "$model")
  bank=$work/$model.bank.json
  rm -f "$bank"
  t0=$EPOCHREALTIME
  report=$("$geopt" tune "$src" --job_type 2 --output "$bank" --no-progress --json 2> "$work/$model.tune.err")
  tune_s=$(/usr/bin/python3 -c "print('%.1f' % ($EPOCHREALTIME - $t0))")
  outcomes=$(field "'%d / %d / %d' % (j['outcomes'].get('switched', 0), j['outcomes'].get('kept', 0), j['outcomes'].get('taken back', 0))" <<< "$report")
  check=$(field "j['plan']['check']" <<< "$report")
  "$geopt" compile "$src" -o "$work/$model.untuned.plan" > /dev/null
  "$geopt" compile "$src" -o "$work/$model.tuned.plan" --op_bank_path "$bank" > /dev/null
  plain=() with=()
  for i in 1 2 3; do
    plain+=("$(seconds "$geopt" compile "$src")")
    with+=("$(seconds "$geopt" compile "$src" --op_bank_path "$bank")")
  done
  compile_ratio=$(/usr/bin/python3 -c "print('%.2f' % ($(median3 "${with[@]}") / $(median3 "${plain[@]}")))")
  inputs=$work/inputs/$model
  rm -rf "$inputs"
  "$geopt" run "$work/$model.untuned.plan" --random-inputs --seed 1 --save-inputs "$inputs" > /dev/null
  untuned=$("$ab_bench" "ort:$src" "$work/$model.untuned.plan" "$inputs" "$threads" "$pairs" "$runs" 200)
  tuned=$("$ab_bench" "ort:$src" "$work/$model.tuned.plan" "$inputs" "$threads" "$pairs" "$runs" 200)
  # Identical plans (every switch taken back) cannot differ: no A/B, which would read its noise.
  if cmp -s "$work/$model.untuned.plan" "$work/$model.tuned.plan"; then
    ab='{"b_over_a": 1.0}'
  else
    ab=$("$ab_bench" "$work/$model.untuned.plan" "$work/$model.tuned.plan" "$inputs" "$threads" "$((2 * pairs))" "$runs" 200)
  fi
  echo "| $model | $outcomes | $check | $tune_s | $(field "'%.2f' % j['b_over_a']" <<< "$untuned") | $(field "'%.2f' % j['b_over_a']" <<< "$tuned") | $(field "'%.3f' % j['b_over_a']" <<< "$ab") | $compile_ratio |"
done
