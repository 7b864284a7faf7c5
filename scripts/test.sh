#!/usr/bin/env bash
# The test command: installs what is needed, then
#   1. checks the formatting and the library's layout (no build needed);
#   2. builds the normal build (RelWithDebInfo: what the demo and the
#      benchmarks run; its optimizer warns differently, and warnings are
#      errors) and runs its unit tests and fuzz replays (seconds);
#   3. builds with AddressSanitizer + UndefinedBehaviorSanitizer (Debug, -O0:
#      GCC 12 at -O1 with the sanitizers warns falsely inside <regex>, and
#      warnings are errors) and runs every test there: unit, integration, web,
#      fuzz replays and the lab tests (QEMU machines under TCG).
# So every test runs under the sanitizers, and none runs twice except the
# quick unit tests and replays, which also run optimized. Both builds compile
# units in batches (CMake's unity build: half the time of one unit at a time)
# with a precompiled header; ccache (from Debian) keeps compiled batches
# between runs on one machine.
# Usage: scripts/test.sh [--no-install] [--no-sanitize]
#   --no-sanitize   one build (the normal one), every test in it
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

phase_start=$SECONDS
echo "== build (RelWithDebInfo)"
scripts/build.sh build -DCMAKE_BUILD_TYPE=RelWithDebInfo
phase "build (RelWithDebInfo)"
phase_start=$SECONDS
if [ "$sanitize" -eq 1 ]; then
  echo "== unit tests and fuzz replays, optimized (everything runs under the sanitizers below)"
  ctest --test-dir build --output-on-failure --timeout 900 -L 'unit|fuzz'
else
  echo "== every test"
  ctest --test-dir build --output-on-failure --timeout 900
fi
phase "tests (RelWithDebInfo)"

if [ "$sanitize" -eq 1 ]; then
  phase_start=$SECONDS
  echo "== build (ASan + UBSan)"
  scripts/build.sh build-asan -DCMAKE_BUILD_TYPE=Debug -DPROVISION_SANITIZE=ON
  phase "build (ASan + UBSan)"
  phase_start=$SECONDS
  echo "== every test under ASan + UBSan"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure --timeout 900
  phase "tests (ASan + UBSan)"
fi
echo "== all tests passed in $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s"
printf '   %s\n' "${phases[@]}"
