#!/usr/bin/env bash
# The test command: installs what is needed, builds, and runs the tests in two
# builds: a normal one (RelWithDebInfo), then one with AddressSanitizer and
# UndefinedBehaviorSanitizer. Every test runs under the sanitizers. The lab
# tests (label `lab`: QEMU machines under TCG, most of the time spent in the
# guests) run in the sanitizer build only, unless --lab-twice; the other tests
# run in both.
# Usage: scripts/test.sh [--no-install] [--no-sanitize] [--lab-twice]
#   --no-sanitize   one build, every test (lab ones included) in it
set -euo pipefail
cd "$(dirname "$0")/.."
install=1 sanitize=1 lab_twice=0
for arg in "$@"; do
  case "$arg" in
    --no-install) install=0 ;;
    --no-sanitize) sanitize=0 ;;
    --lab-twice) lab_twice=1 ;;
    *) echo "usage: scripts/test.sh [--no-install] [--no-sanitize] [--lab-twice]" >&2; exit 2 ;;
  esac
done
normal_args=()
[ "$sanitize" -eq 0 ] || [ "$lab_twice" -eq 1 ] || normal_args=(-LE lab)
[ "$install" -eq 0 ] || scripts/install-deps.sh

echo "== build (RelWithDebInfo)"
scripts/build.sh build -DCMAKE_BUILD_TYPE=RelWithDebInfo
echo "== tests${normal_args[*]:+ (all but the lab tests: they run under the sanitizers below)}"
ctest --test-dir build --output-on-failure --timeout 900 "${normal_args[@]}"

if [ "$sanitize" -eq 1 ]; then
  echo "== build (ASan + UBSan)"
  scripts/build.sh build-asan -DCMAKE_BUILD_TYPE=Debug -DPROVISION_SANITIZE=ON
  echo "== tests under ASan + UBSan"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure --timeout 900
fi
echo "== all tests passed"
