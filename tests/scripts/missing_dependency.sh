#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A dependency missing at configure time is one line on stderr naming the Debian package, exit code 2, from
# the README's build (scripts/build) — never CMake's backtrace. Each case hides one dependency from CMake
# (CMAKE_DISABLE_FIND_PACKAGE_<name>, or an empty pkg-config search path) in a scratch build folder.
set -uo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
failures=0
check() {  # check <expected Debian package> <env assignments or -> <cmake arguments...>
  local package="$1" envs="$2"; shift 2
  local dir="$scratch/$package"
  local err rc
  if [ "$envs" = "-" ]; then envs=""; fi
  err="$(env $envs GPUVS_BUILD_DIR="$dir" bash "$src/scripts/build" -DGPUVS_CUDA=OFF -DGPUVS_BENCH=OFF "$@" 2>&1 >/dev/null)"
  rc=$?
  if [ $rc -ne 2 ] || [ "$(printf '%s\n' "$err" | wc -l)" -ne 1 ] || \
     ! printf '%s' "$err" | grep -q "^gpuvs: missing .*: install the Debian package $package "; then
    echo "FAIL ($package): exit $rc, stderr:"; printf '%s\n' "$err" | head -20
    failures=$((failures + 1))
  else
    echo "ok   ($package): $err"
  fi
  if [ -f "$dir/Makefile" ]; then echo "FAIL ($package): a build was generated"; failures=$((failures + 1)); fi
}
check ocl-icd-opencl-dev - -DCMAKE_DISABLE_FIND_PACKAGE_OpenCL=TRUE   # what oneDNN's own config requires
check libfmt-dev - -DCMAKE_DISABLE_FIND_PACKAGE_fmt=TRUE
check libgtest-dev - -DCMAKE_DISABLE_FIND_PACKAGE_GTest=TRUE
check libopenblas-dev "PKG_CONFIG_LIBDIR=$scratch/none PKG_CONFIG_PATH="   # first pkg-config module
echo "$((4 - failures)) passed, $failures failed"
[ $failures -eq 0 ]
