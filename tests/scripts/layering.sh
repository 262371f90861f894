#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every #include "ROOM/..." in src/ follows the CMake link graph: a file in src/R includes only R's own headers and
# those of the rooms R links, directly or through them. BUILD/rooms.txt (written at configure time from the
# targets' LINK_LIBRARIES) gives each room's direct links. The CUDA plugin's sources (src/gpu/cuda, the .cu/.cuh
# files of src/engine/cuda) are one MODULE target of their own, linked to `ir` and compiling engine and gpu
# sources: they may include core, ir, engine and gpu. So may the contract between the binary and the plugin,
# src/gpu/plugin_api.hpp, compiled into both; it names engine types while engine links the plugin loader
# (gpuvs_gpu), a cycle at the header level that the next step of the split (issue 32) is to cut.
#   bash tests/scripts/layering.sh SRC_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
rooms=$build/rooms.txt
[ -f "$rooms" ] || { echo "layering: no $rooms (configure first)"; exit 1; }
closure() {  # the rooms $1 may include: itself and everything it links, transitively
  local todo=("$1") seen=" " r d
  while [ ${#todo[@]} -gt 0 ]; do
    r=${todo[0]}; todo=("${todo[@]:1}")
    case "$seen" in *" $r "*) continue ;; esac
    seen="$seen$r "
    for d in $(awk -F': ' -v r="$r" '$1 == r { print $2 }' "$rooms"); do todo+=("$d"); done
  done
  echo "$seen"
}
failures=0 checked=0
check_file() {  # check_file FILE ALLOWED
  local f=$1 allowed=$2 line room
  while IFS= read -r line; do
    room=${line#*\"}; room=${room%%/*}
    checked=$((checked + 1))
    case "$allowed" in *" $room "*) ;; *)
      echo "FAIL ${f#$src/}: includes \"${line#*\"} but ${f#$src/src/} is in a room that does not link $room"
      failures=$((failures + 1)) ;;
    esac
  done < <(grep -E '^#include "[a-z_]+/' "$f" || true)
}
rooms_seen=0
while IFS=': ' read -r room _; do
  [ -d "$src/src/$room" ] || { echo "FAIL rooms.txt names '$room' but there is no src/$room"; failures=$((failures + 1)); continue; }
  rooms_seen=$((rooms_seen + 1))
  allowed=$(closure "$room")
  while IFS= read -r f; do
    case "$f" in "$src/src/gpu/cuda/"*|"$src/src/engine/cuda/"*.cu|"$src/src/engine/cuda/"*.cuh|"$src/src/gpu/plugin_api.hpp") continue ;; esac
    check_file "$f" "$allowed"
  done < <(find "$src/src/$room" -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' \))
done < "$rooms"
plugin=" core ir engine gpu "
while IFS= read -r f; do check_file "$f" "$plugin"; done < <(find "$src/src/gpu/cuda" "$src/src/engine/cuda" -type f \( -name '*.cu' -o -name '*.cuh' -o -name '*.hpp' -o -name '*.cpp' \) | grep -E '/gpu/cuda/|\.cuh?$'; echo "$src/src/gpu/plugin_api.hpp")
# A room folder that rooms.txt does not know has no rule: name it.
for d in "$src"/src/*/; do
  r=$(basename "$d")
  grep -q "^$r:" "$rooms" || { echo "FAIL src/$r is no room of the link graph (add its library to src/CMakeLists.txt's rooms)"; failures=$((failures + 1)); }
done
echo "layering: $checked includes in $rooms_seen rooms checked, $failures outside the link graph"
[ "$failures" -eq 0 ]
