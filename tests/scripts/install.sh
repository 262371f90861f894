#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `cmake --install` puts gpuvs where a package would (bin/, the CUDA plugin in lib/gpuvs/ where built, the license
# and README in share/doc/gpuvs/, the bash completion and the manual page), and the installed binary answers from there, in a folder far from the source
# tree: everything it reads is compiled in or found relative to itself.
set -euo pipefail
build=$1
here=$(cd "$(dirname "$0")" && pwd)
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
test -x "$prefix/bin/gpuvs" || { echo "no bin/gpuvs under the prefix"; exit 1; }
test -f "$prefix/share/doc/gpuvs/LICENSE" || { echo "no share/doc/gpuvs/LICENSE"; exit 1; }
test -s "$prefix/share/bash-completion/completions/gpuvs" || { echo "no bash completion under share/bash-completion/completions"; exit 1; }
test -s "$prefix/share/man/man1/gpuvs.1" || { echo "no manual page under share/man/man1"; exit 1; }
for s in common predict compare advise run; do
  test -s "$prefix/share/gpuvs/schemas/$s.schema.json" || { echo "no share/gpuvs/schemas/$s.schema.json"; exit 1; }
done
# The installed completion completes: a command, then an option of it, then a catalog GPU id.
complete_line() {  # WORDS...: the reply the completion gives for the last word
  bash -c 'complete() { :; }; source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _gpuvs; echo "${COMPREPLY[*]}"' _ \
    "$prefix/share/bash-completion/completions/gpuvs" "$@"
}
case " $(complete_line gpuvs pred) " in *' predict '*) ;; *) echo "completion: 'gpuvs pred' does not offer predict"; exit 1 ;; esac
case " $(complete_line gpuvs predict --wor) " in *' --workload '*) ;; *) echo "completion: predict's --workload not offered"; exit 1 ;; esac
case " $(complete_line gpuvs predict --gpu h100-s) " in *' h100-sxm '*) ;; *) echo "completion: --gpu does not offer catalog ids"; exit 1 ;; esac
case " $(complete_line gpuvs compare rtx-40) " in *' rtx-4090 '*) ;; *) echo "completion: compare's cards are not offered"; exit 1 ;; esac
grep -q '^\.TH GPUVS 1' "$prefix/share/man/man1/gpuvs.1" || { echo "the manual page has no .TH header"; exit 1; }
grep -q '^\.SS predict$' "$prefix/share/man/man1/gpuvs.1" || { echo "the manual page has no predict section"; exit 1; }
if command -v groff >/dev/null; then  # the page renders without a warning where groff is installed
  warnings=$(groff -man -ww -z "$prefix/share/man/man1/gpuvs.1" 2>&1)
  [ -z "$warnings" ] || { echo "groff warns about the manual page: $warnings"; exit 1; }
fi
if [ -f "$build/src/libgpuvs_cuda.so" ]; then test -f "$prefix/lib/gpuvs/libgpuvs_cuda.so" || { echo "the CUDA plugin was not installed"; exit 1; }; fi
cd "$prefix"
out=$(env -i HOME="$prefix" PATH=/usr/bin:/bin "$prefix/bin/gpuvs" compare rtx-4090 a100-80gb-sxm --workload resnet50 --json)
case "$out" in *'"gpu": "a100-80gb-sxm"'*) ;; *) echo "the installed gpuvs did not answer: $out"; exit 1 ;; esac
# The installed schema describes the installed binary's document (Debian's python3-jsonschema, where installed).
if /usr/bin/python3 -c 'import jsonschema' 2>/dev/null; then
  printf '%s' "$out" | /usr/bin/python3 "$here/../python/json_schemas.py" "$prefix/share/gpuvs/schemas" compare.schema.json || exit 1
fi
env -i HOME="$prefix" PATH=/usr/bin:/bin "$prefix/bin/gpuvs" validate --data /nonexistent.csv 2>/dev/null && { echo "a missing file was not refused"; exit 1; }
# `import gpuvs` from the prefix's Python module folder (where a /usr/local install puts it on Debian's sys.path),
# the build tree out of reach, giving the binary's answer.
if [ -d "$build/python/gpuvs" ]; then
  site=$(ls -d "$prefix"/lib/python3*/dist-packages 2>/dev/null | head -1)
  [ -f "$site/gpuvs/__init__.py" ] || { echo "import gpuvs was not installed under lib/python3*/dist-packages"; exit 1; }
  same=$(printf '%s' "$out" | env -i HOME="$prefix" PATH=/usr/bin:/bin PYTHONPATH="$site" python3 -c \
    'import json, sys, gpuvs; print(gpuvs.compare(["rtx-4090", "a100-80gb-sxm"], workload="resnet50") == json.load(sys.stdin))')
  [ "$same" = True ] || { echo "the installed Python module's answer differs from the binary's"; exit 1; }
fi
echo "installed and ran from $prefix"
