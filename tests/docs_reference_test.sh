#!/usr/bin/env bash
# The reference pages under docs/reference/ are what the code prints today:
# scripts/make-reference.sh run again on this build must give the same bytes
# (the settings, the API routes with their roles, provisionctl's verbs, the
# playbook modules). A difference is printed; the fix is
#   scripts/make-reference.sh BUILD_DIR docs/reference
# Also: the man pages made from the same tables render without a groff warning.
# Usage: docs_reference_test.sh REPO BUILD_DIR
set -euo pipefail
repo="$(realpath "$1")"
build="$(realpath "$2")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
bash "$repo/scripts/make-reference.sh" "$build" "$work/reference"
status=0
for page in settings api cli modules; do
  if ! diff -u "$repo/docs/reference/$page.md" "$work/reference/$page.md" >"$work/$page.diff"; then
    echo "FAIL: docs/reference/$page.md differs from what the code prints:"
    head -n 40 "$work/$page.diff"
    status=1
  else
    echo "ok: docs/reference/$page.md is current ($(wc -l <"$work/reference/$page.md") lines)"
  fi
done
[ "$(ls "$repo/docs/reference")" = "$(printf 'api.md\ncli.md\nmodules.md\nsettings.md')" ] ||
  { echo "FAIL: docs/reference holds pages the generator does not make: $(ls "$repo/docs/reference")"; status=1; }
bash "$repo/scripts/make-reference.sh" --man "$build" "$work/man"
for page in provisiond.8 provisionctl.1; do
  warnings="$(groff -man -ww -Tutf8 "$work/man/$page" 2>&1 >/dev/null)"
  if [ -n "$warnings" ]; then
    echo "FAIL: groff warns about $page: $warnings"
    status=1
  else
    echo "ok: $page renders without a warning ($(groff -man -Tutf8 "$work/man/$page" 2>/dev/null | wc -l) lines)"
  fi
done
[ "$status" -eq 0 ] || echo "to refresh: scripts/make-reference.sh $build docs/reference"
exit "$status"
