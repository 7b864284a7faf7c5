#!/usr/bin/env bash
# Integration: the SSH client (prov::SshSession) against three real sshd
# processes on loopback, each with its own host key (tests/sshd/sshd-targets.sh),
# through ssh_client_check: pinned host keys, exact rc/stdout/stderr/fd 3,
# 5 MB binary data, become_user, timeouts, wrong keys, a closed port, a
# target killed mid-task, and the mean per-Run latency over one session.
# Usage: ssh_client_test.sh SSH_CLIENT_CHECK
# Needs root (sshd's privilege separation, become_user) and openssh-server;
# exits 77 (skipped) when not root.
CHECK_BIN="$1"
source "$(dirname "$0")/../lib.sh"
FIXTURE="$REPO/tests/sshd/sshd-targets.sh"

if [ "$(id -u)" -ne 0 ]; then
  echo "skipped: needs root to run sshd targets"
  exit 77
fi
[ -x /usr/sbin/sshd ] || { echo "FAIL: /usr/sbin/sshd is missing: install openssh-server (scripts/install-deps.sh)"; exit 1; }

TARGETS="$WORK/targets"
stop_targets() {
  local rc=$?
  bash "$FIXTURE" stop "$TARGETS" || true
  if [ $rc -ne 0 ] || [ "$FAILURES" -ne 0 ]; then
    for log in "$TARGETS"/t*/sshd.log; do
      [ -f "$log" ] && { echo "--- $log (last 10 lines)"; tail -n 10 "$log"; }
    done
  fi
  cleanup
}
trap stop_targets EXIT

echo "== fixture"
ssh-keygen -q -t ed25519 -N '' -C control -f "$WORK/control_key"
ssh-keygen -q -t ed25519 -N '' -C stranger -f "$WORK/other_key"
check "start 3 sshd targets" bash "$FIXTURE" start 3 "$TARGETS" "$WORK/control_key.pub"
expect_eq "three targets listed" "$(wc -l <"$TARGETS/targets")" 3
expect_eq "three pids listed" "$(wc -l <"$TARGETS/pids")" 3
expect_eq "three distinct host keys" "$(awk '{print $4}' "$TARGETS/targets" | sort -u | wc -l)" 3
while read -r name pid; do
  if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = sshd ]; then pass "$name is an sshd ($pid)"; else
    fail "$name: pid $pid is not a running sshd"
  fi
done <"$TARGETS/pids"

echo "== ssh_client_check"
rc=0
"$CHECK_BIN" "$TARGETS" "$WORK/control_key" "$WORK/other_key" "$FIXTURE" >"$WORK/check.out" 2>&1 || rc=$?
cat "$WORK/check.out"
expect_eq "ssh_client_check passes" "$rc" 0

# The fingerprints in the host key message, computed by OpenSSH itself: the
# connection to t1 pinned t2's key.
fp() { ssh-keygen -l -E sha256 -f "$TARGETS/$1/ssh_host_ed25519_key.pub" | awk '{print $2}'; }
msg="$(grep '^host key message:' "$WORK/check.out" || true)"
case "$msg" in
  *"pinned $(fp t2), offered $(fp t1)"*) pass "the message has t2's pinned and t1's offered fingerprint" ;;
  *) fail "host key message lacks 'pinned $(fp t2), offered $(fp t1)': $msg" ;;
esac
grep -q '^mean per-Run latency:' "$WORK/check.out" && pass "latency reported" || fail "no latency line"

echo "== fixture stop"
listeners="$(awk '{print $2}' "$TARGETS/pids")"
check "stop" bash "$FIXTURE" stop "$TARGETS"
for pid in $listeners; do
  st="$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null || true)"
  if [ -z "$st" ] || [ "$st" = Z ]; then pass "sshd $pid stopped"; else fail "sshd $pid still runs"; fi
done

finish
