#!/usr/bin/env bash
# Exits 1, listing what clang-format would change, when a C++ source (*.cpp, *.h) departs
# from .clang-format. Apply the style with: scripts/check-format.sh --fix
set -euo pipefail
cd "$(dirname "$0")/.."
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cpp' '*.h')
else  # a source tree without git (an unpacked archive)
  mapfile -t files < <(find api backends bench cli dsl engine examples python tests -name '*.cpp' -o -name '*.h' | sort)
fi
if [[ "${1:-}" == "--fix" ]]; then
  clang-format -i "${files[@]}"
  exit 0
fi
clang-format --dry-run --Werror "${files[@]}"
