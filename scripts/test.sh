#!/usr/bin/env bash
# The test command: installs what is needed, builds, and runs every test,
# twice: a normal build, then the same tests under AddressSanitizer and
# UndefinedBehaviorSanitizer. Usage: scripts/test.sh [--no-install] [--no-sanitize]
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
[ "$install" -eq 0 ] || scripts/install-deps.sh

echo "== build (RelWithDebInfo)"
scripts/build.sh build -DCMAKE_BUILD_TYPE=RelWithDebInfo
echo "== tests"
ctest --test-dir build --output-on-failure --timeout 900

if [ "$sanitize" -eq 1 ]; then
  echo "== build (ASan + UBSan)"
  scripts/build.sh build-asan -DCMAKE_BUILD_TYPE=Debug -DPROVISION_SANITIZE=ON
  echo "== tests under ASan + UBSan"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure --timeout 900
fi
echo "== all tests passed"
