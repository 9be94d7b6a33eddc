#!/usr/bin/env bash
# Installs the Debian 12 packages geopt needs. Does nothing when they are already there.
#   scripts/install-deps.sh            build + test dependencies
#   scripts/install-deps.sh --examples also python3-torch etc. to regenerate examples/
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  tao-pegtl-dev libprotobuf-dev protobuf-compiler libonnx-dev libtomlplusplus-dev
  doctest-dev libspdlog-dev libcli11-dev nlohmann-json3-dev libdnnl-dev libmimalloc-dev zlib1g-dev
  ocl-icd-opencl-dev  # dnnl-config.cmake looks for OpenCL (oneDNN is built with its GPU runtime)
  libonnx-testdata
  # the coverage-guided fuzzers (tests/fuzz/): clang with libFuzzer's runtime; LLVM's OpenMP
  # runtime, which the executables run their OpenMP regions on (GEOPT_LLVM_OPENMP)
  clang libclang-rt-14-dev libomp-14-dev
  clang-format  # the style check (scripts/check-format.sh, a CTest test)
  # the Python module and its tests (torch exports a model, as users' scripts do)
  python3-dev python3-pybind11 pybind11-dev python3-pytest python3-numpy python3-onnx python3-torch
)
if [[ "${1:-}" == "--examples" ]]; then
  packages+=(python3-torchvision)
  # bench/ocr_accuracy_bench.sh renders text
  packages+=(python3-pil fonts-dejavu-core)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
