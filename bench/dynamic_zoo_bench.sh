#!/usr/bin/env bash
# Range plans and plans of gears across the zoo (examples/zoo.py --dynamic: the small
# models exported with dynamic axes, a CNN's H and W, a sequence model's length): each
# compiled both ways, with compile's own check (the plan against the model as given, at
# the range's minimum, middle and maximum, or at each gear), and the kernel counts side by
# side: a range plan fuses less where a rule needs a number the range leaves open.
#
#   bench/dynamic_zoo_bench.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/ci}
geopt=$build/cli/geopt
out=bench/out/zoo_dynamic
models=(bert torch_encoder gpt2 gpt2_gelu_b llama t5_encoder resnet50 mobilenet_v2 efficientnet_b0 convnext_tiny shufflenet_v2_x1_0 regnet_y_400mf densenet121)
mkdir -p "$out"
[[ -f $out/densenet121_op17.onnx ]] || /usr/bin/python3 examples/zoo.py --dynamic --out "$out" --only "${models[@]}" > /dev/null 2>&1
field() { /usr/bin/python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {'j': j}))" "$@"; }
echo "| model | range | its check | range plan kernels | gears | their check | kernels per gear |"
echo "|---|---|---|---|---|---|---|"
for name in "${models[@]}"; do
  for opset in 13 17; do
    f=$out/${name}_op$opset.onnx
    ins=$("$geopt" info --json "$f" | /usr/bin/python3 -c "import json,sys; print(' '.join(i['name'] for i in json.load(sys.stdin)['inputs']))")
    if [[ $ins == image ]]; then
      range="image:[1,3,32~64,32~64]" shape="image:1,3,-1,-1" gears=(--dynamic_image_size "32,32;64,64") glabel="32x32, 64x64"
    else
      range="" shape=""
      for i in $ins; do range+="${range:+;}$i:[1,1~16]"; shape+="${shape:+;}$i:1,-1"; done
      gears=(--dynamic_dims "4;16") glabel="seq 4, 16"
    fi
    r="| ${name}_op$opset | $range |"
    if "$geopt" compile "$f" --input_shape_range "$range" --json > "$out/${name}_op$opset.range.json" 2> "$out/err"; then
      r+=" $(field "$out/${name}_op$opset.range.json" "'ok' if j['check']['ok'] else 'FAILED'") | $(field "$out/${name}_op$opset.range.json" "'%d -> %d' % (j['kernels']['before'], j['kernels']['after'])") |"
    else
      r+=" error: $(tail -1 "$out/err") | |"
    fi
    if "$geopt" compile "$f" --input_shape "$shape" "${gears[@]}" --json > "$out/${name}_op$opset.gears.json" 2> "$out/err"; then
      r+=" $glabel | $(field "$out/${name}_op$opset.gears.json" "'ok' if all(g['check']['ok'] for g in j['gears']) else 'FAILED'") | $(field "$out/${name}_op$opset.gears.json" "', '.join(str(g['kernels']['after']) for g in j['gears'])") |"
    else
      r+=" $glabel | error: $(tail -1 "$out/err") | |"
    fi
    echo "$r"
  done
done
