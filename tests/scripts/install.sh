#!/usr/bin/env bash
# `cmake --install` puts gpuvs where a package would (bin/, the CUDA plugin in lib/gpuvs/ where built, the license
# and README in share/doc/gpuvs/), and the installed binary answers from there, in a folder far from the source
# tree: everything it reads is compiled in or found relative to itself.
set -euo pipefail
build=$1
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
test -x "$prefix/bin/gpuvs" || { echo "no bin/gpuvs under the prefix"; exit 1; }
test -f "$prefix/share/doc/gpuvs/LICENSE" || { echo "no share/doc/gpuvs/LICENSE"; exit 1; }
if [ -f "$build/src/libgpuvs_cuda.so" ]; then test -f "$prefix/lib/gpuvs/libgpuvs_cuda.so" || { echo "the CUDA plugin was not installed"; exit 1; }; fi
cd "$prefix"
out=$(env -i HOME="$prefix" PATH=/usr/bin:/bin "$prefix/bin/gpuvs" compare rtx-4090 a100-80gb-sxm --workload resnet50 --json)
case "$out" in *'"gpu": "a100-80gb-sxm"'*) ;; *) echo "the installed gpuvs did not answer: $out"; exit 1 ;; esac
env -i HOME="$prefix" PATH=/usr/bin:/bin "$prefix/bin/gpuvs" validate --data /nonexistent.csv 2>/dev/null && { echo "a missing file was not refused"; exit 1; }
echo "installed and ran from $prefix"
