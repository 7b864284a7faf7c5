#!/usr/bin/env bash
# Checks that every C++ file is formatted by clang-format with the project's
# .clang-format; prints the files that are not and fails. `--fix` formats them.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cc' '*.h')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
# One clang-format per CPU over a share of the files (one process per file
# took a minute here); each names the files it would change.
report="$(mktemp)"
trap 'rm -f "$report"' EXIT
printf '%s\0' "${files[@]}" |
  xargs -0 -P "$(nproc)" -n $(((${#files[@]} + $(nproc) - 1) / $(nproc))) \
    clang-format --dry-run --Werror 2>"$report" >/dev/null || true
mapfile -t bad < <(sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' "$report" | sort -u)
if [ ${#bad[@]} -eq 0 ] && grep -q . "$report"; then
  cat "$report" >&2
  exit 1
fi
if [ ${#bad[@]} -gt 0 ]; then
  echo "check-format: not formatted (scripts/check-format.sh --fix):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files formatted"
