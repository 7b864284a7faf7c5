#!/usr/bin/env bash
# The test command: installs what is needed, then
#   1. checks the formatting and the library's layout (no build needed);
#   2. builds once, with AddressSanitizer + UndefinedBehaviorSanitizer (Debug,
#      -O0: GCC 12 at -O1 with the sanitizers warns falsely inside <regex>, and
#      warnings are errors), and runs every test there, once: unit,
#      integration, web, fuzz replays and the lab tests (QEMU machines under
#      TCG).
# Every test runs under the sanitizers and none runs twice. Two at a time
# (ctest -j2): the lab lane (QEMU machines; lock lab) beside the host's
# heavy items (the lab images' builds, the package, the browser; lock host;
# at nice 10); unit, integration (nice 10) and fuzz replay tests wherever a
# slot is free (tests/CMakeLists.txt). The optimized
# build (build/: what the demo and the benchmarks run) is the demo command's;
# `--no-sanitize` runs every test in it instead. Units are compiled in batches
# (CMake's unity build: half the time of one unit at a time) with a
# precompiled header; ccache (from Debian) keeps compiled batches between runs
# on one machine.
# Usage: scripts/test.sh [--no-install] [--no-sanitize]
#   --no-sanitize   every test in the normal build (build/) instead
set -euo pipefail
cd "$(dirname "$0")/.."
install=1 sanitize=1
for arg in "$@"; do
  case "$arg" in
    --no-install) install=0 ;;
    --no-sanitize) sanitize=0 ;;
    *) echo "usage: scripts/test.sh [--no-install] [--no-sanitize]" >&2; exit 2 ;;
  esac
done
start=$SECONDS
phases=()
phase() { phases+=("$(printf '%-44s %4d s' "$1" $((SECONDS - phase_start)))"); }
phase_start=$SECONDS
[ "$install" -eq 0 ] || scripts/install-deps.sh
phase "packages"

phase_start=$SECONDS
echo "== format and layout"
scripts/check-format.sh
bash tests/layout_test.sh "$PWD"
phase "format and layout"

if [ "$sanitize" -eq 1 ]; then
  dir=build-asan what="ASan + UBSan"
  build_args=(-DCMAKE_BUILD_TYPE=Debug -DPROVISION_SANITIZE=ON)
else
  dir=build what="Release"
  build_args=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG")  # as the demo's
fi
phase_start=$SECONDS
echo "== build ($what)"
scripts/build.sh "$dir" "${build_args[@]}"
phase "build ($what)"
phase_start=$SECONDS
echo "== every test ($what)"
# Each test's time, longest first, also when one failed (from ctest's lines
# "N/M Test #K: NAME ...   Passed   12.34 sec").
times() {
  echo "== each test's time (longest first)"
  sed -n 's/^\(\[[^]]*\]\)\? *[0-9]*\/[0-9]* Test *#[0-9]*: \([^ ]*\) .* \([0-9.]*\) sec$/\3 \2/p' "$dir/ctest.log" |
    sort -rn | awk '{printf "   %-34s %7.1f s\n", $2, $1}'
}
# ctest's start and end lines with the seconds since the tests began: which
# tests ran beside which (the lanes).
stamp() {
  local line t0=$SECONDS
  while IFS= read -r line; do
    case "$line" in *"Start "* | *"Test "*"#"*) printf '[%5d s] %s\n' $((SECONDS - t0)) "$line" ;; *) printf '%s\n' "$line" ;; esac
  done
}
rc=0
# How busy the CPUs were meanwhile, and which programs used them
# (scripts/cpu-by-program.py).
python3 scripts/cpu-by-program.py "$dir/cpu-by-program.txt" &
sampler=$!
trap 'kill "$sampler" 2>/dev/null || true' EXIT
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$dir" --output-on-failure --timeout 900 -j2 2>&1 | stamp | tee "$dir/ctest.log" || rc=$?
kill "$sampler" && wait "$sampler" || true
times
echo "== the CPUs during the tests, by program:"
cat "$dir/cpu-by-program.txt" 2>/dev/null || true
[ "$rc" -eq 0 ] || exit "$rc"
phase "tests ($what)"
echo "== all tests passed in $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s"
printf '   %s\n' "${phases[@]}"
