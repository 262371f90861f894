#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every source file names its license (Apache-2.0, LICENSE) in an SPDX line within its first three lines: C and C++
# sources and headers, CUDA, protobuf, Python, CMake and the shell scripts. Data, documents and fixtures are not code.
#   bash tests/scripts/spdx.sh SRC_DIR
set -euo pipefail
cd "$1"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  list() { git ls-files; }
else
  list() { find . -type f -not -path './.git/*' -not -path './build*' | sed 's|^\./||'; }
fi
missing=0
while IFS= read -r f; do
  case "$f" in
    data/*|docs/*|fuzz/corpus/*|fuzz/dict/*|tests/data/*|examples/*) continue ;;
    *.cpp|*.hpp|*.cu|*.cuh|*.h|*.c|*.proto|*.py|*.cmake|*.sh|*CMakeLists.txt|scripts/*|tests/tools/*|.ci/run) ;;
    *) continue ;;
  esac
  if ! head -3 "$f" | grep -q 'SPDX-License-Identifier: Apache-2.0'; then
    echo "spdx: $f has no 'SPDX-License-Identifier: Apache-2.0' line in its first three lines"
    missing=$((missing + 1))
  fi
done < <(list)
[ "$missing" -eq 0 ] || { echo "spdx: $missing file(s) without their license line"; exit 1; }
echo "spdx: every source file names its license"
