#!/usr/bin/env bash
# Configures and builds provisiond: every target, or those after `--`.
# Usage: scripts/build.sh [BUILD_DIR] [cmake args...] [-- TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-build}"
shift || true
# ccache (from Debian) keeps compiled units between builds and fresh clones;
# the precompiled header needs its sloppiness settings to be cached.
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_SLOPPINESS="pch_defines,time_macros,include_file_mtime,include_file_ctime"
  # Paths relative to the checkout: other build folders and clones share hits.
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
fi
cmake_args=() targets=()
while [ "$#" -gt 0 ]; do
  if [ "$1" = "--" ]; then
    shift
    targets=("$@")
    break
  fi
  cmake_args+=("$1")
  shift
done
cmake -S . -B "$dir" -G Ninja "${launcher[@]}" "${cmake_args[@]}" >/dev/null
ninja -C "$dir" "${targets[@]}"
