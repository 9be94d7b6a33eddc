#!/usr/bin/env bash
# Sets up a Debian 12 machine and runs every test twice: in a -Werror build (gcc) and
# in an AddressSanitizer + UndefinedBehaviorSanitizer build (clang), which also runs each
# coverage-guided fuzzer (libFuzzer, tests/fuzz/): its corpus, then GEOPT_FUZZ_RUNS (20000) seeded inputs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)

# -g1 (line tables) instead of RelWithDebInfo's -g: a fifth less compile time, and CI's
# budget is 40 minutes on 2 cores.
cmake -S . -B build/ci -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGEOPT_WERROR=ON -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
cmake --build build/ci -j "$jobs"
ctest --test-dir build/ci --output-on-failure -j "$jobs"

# One sanitizer build serves the test suite and the fuzzers: clang, AddressSanitizer +
# UndefinedBehaviorSanitizer, libFuzzer's coverage counters, -O1 (ASan's own advice: the
# tests run in half the time of -O0) and assertions on. Before, the suite's gcc -O0 build
# and the fuzzers' clang build compiled every library twice, and CI passed 45 minutes.
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O1 -DCMAKE_C_FLAGS_DEBUG=-O1 \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DGEOPT_WERROR=ON -DGEOPT_SANITIZE=ON -DGEOPT_FUZZ=ON \
  -DGEOPT_FUZZ_RUNS="${GEOPT_FUZZ_RUNS:-20000}"
cmake --build build/asan -j "$jobs"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The sweeps (label `sweep`: one pipeline repeated over every example model) run in the
# -Werror build only; under the sanitizers every model still goes through optimize, compile
# and its plan in "every example model compiles, optimized or not". The fuzzers (label
# `fuzz`) replay their corpus, then GEOPT_FUZZ_RUNS seeded inputs each.
ctest --test-dir build/asan --output-on-failure -j "$jobs" -LE sweep
