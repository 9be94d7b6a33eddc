#!/usr/bin/env bash
# Sets up a Debian 12 machine and runs every test twice: in a -Werror build and
# in an AddressSanitizer + UndefinedBehaviorSanitizer build; then each coverage-guided
# fuzzer (clang's libFuzzer, tests/fuzz/): its corpus, then GEOPT_FUZZ_RUNS (20000) seeded inputs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)

# -g1 (line tables) instead of RelWithDebInfo's -g: a fifth less compile time, and CI's
# budget is 40 minutes on 2 cores.
cmake -S . -B build/ci -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGEOPT_WERROR=ON -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
cmake --build build/ci -j "$jobs"
ctest --test-dir build/ci --output-on-failure -j "$jobs"

cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGEOPT_WERROR=ON -DGEOPT_SANITIZE=ON
cmake --build build/asan -j "$jobs"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The sweeps (label `sweep`: one pipeline repeated over every example model) run in the
# -Werror build only; under the sanitizers every model still goes through optimize, compile
# and its plan in "every example model compiles, optimized or not", and CI's 45 minutes hold.
ctest --test-dir build/asan --output-on-failure -j "$jobs" -LE sweep

# The fuzzers build only what they link (the libraries, not the CLI or the tests).
cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -DNDEBUG" -DGEOPT_FUZZ=ON -DGEOPT_BUILD_TESTS=OFF -DGEOPT_FUZZ_RUNS="${GEOPT_FUZZ_RUNS:-20000}"
cmake --build build/fuzz -j "$jobs" --target fuzz_plan_loader fuzz_npy_reader fuzz_rule_parser fuzz_option_parsers
ctest --test-dir build/fuzz --output-on-failure -L fuzz
