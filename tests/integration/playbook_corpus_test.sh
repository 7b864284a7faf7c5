#!/usr/bin/env bash
# The playbook corpus (tests/playbooks/corpus: the project's own playbooks and
# roles in the shapes public roles take): every playbook ansible-playbook
# accepts is accepted by provisiond (`provisionctl playbook check`), on the
# runner recorded in tests/playbooks/corpus/runners.txt; every invalid one is
# refused with Ansible's own error. A change of runner (the native runner
# learning a construct) shows as a diff of that file.
# Usage: playbook_corpus_test.sh PROVISIOND PROVISIONCTL
PROVISIOND="$(realpath "$1")"
PROVISIONCTL="$(realpath "$2")"
source "$(dirname "$0")/../lib.sh"
ctl() { "$PROVISIONCTL" "$@"; }

CORPUS="$REPO/tests/playbooks/corpus"
command -v ansible-playbook >/dev/null || {
  echo "FAIL: ansible-playbook is not installed (scripts/install-deps.sh installs it)" >&2
  exit 1
}
mkdir -p "$WORK/profiles"
PROFILES_DIR="$WORK/profiles" PLAYBOOKS_DIR="$CORPUS" start_provisiond corpus

echo "== every valid playbook: Ansible's verdict, then provisiond's"
: >"$WORK/runners.txt"
for f in "$CORPUS"/*.yml; do
  name="$(basename "$f")"
  if ! ansible-playbook --syntax-check -i "$CORPUS/inventory.ini" "$f" >"$WORK/ansible.out" 2>&1; then
    fail "$name: ansible-playbook --syntax-check refuses it: $(tail -n 5 "$WORK/ansible.out")"
    continue
  fi
  # "<path>: runs on <runner> (<why>)"
  if ctl playbook check "$f" >"$WORK/check.out" 2>&1; then
    runner="$(sed -n 's/.*: runs on \([a-z]*\) (.*/\1/p' "$WORK/check.out")"
    pass "$name: accepted, runs on $runner"
    sed -n 's/.*: runs on [a-z]* (\(.*\))$/     why: \1/p' "$WORK/check.out" | head -c 300
    printf '%s %s\n' "$name" "$runner" >>"$WORK/runners.txt"
  else
    fail "$name: Ansible accepts it, provisiond refuses it: $(head -c 1500 "$WORK/check.out")"
  fi
done
echo "-- runners (tests/playbooks/corpus/runners.txt)"
cat "$WORK/runners.txt"
if diff -u "$CORPUS/runners.txt" "$WORK/runners.txt"; then
  pass "the runners are the recorded ones"
else
  fail "the runners differ from tests/playbooks/corpus/runners.txt (update it when the native runner learns a construct)"
fi
native="$(grep -c ' native$' "$WORK/runners.txt" || true)"
total="$(wc -l <"$WORK/runners.txt")"
echo "corpus: $total playbook(s), $native on the native runner, $((total - native)) on ansible-playbook"
[ "$total" -ge 25 ] && pass "at least 25 playbooks" || fail "only $total playbooks in the corpus"

echo "== invalid playbooks are refused, with Ansible's own error"
for f in "$CORPUS"/invalid/*.yml; do
  name="invalid/$(basename "$f")"
  expect_exit 1 "$name is refused" ctl playbook check "$f"
  expect_output "$name: the refusal quotes ansible-playbook" "ansible-playbook --syntax-check refuses it"
done

finish
