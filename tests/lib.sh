# Shared helpers for the shell integration tests: a provisiond on a temporary
# data directory and a free loopback port, assertions that say what failed,
# and cleanup of everything started, also when a test fails.
# Usage: source tests/lib.sh; needs PROVISIOND and PROVISIONCTL set. The
# benchmarks (tests/bench) use the same harness.
# WORK is made under WORK_BASE (default: $TMPDIR or /tmp), named
# WORK_NAME.XXXXXX (default provision-test): set them before sourcing.

set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="$(mktemp -d "${WORK_BASE:-${TMPDIR:-/tmp}}/${WORK_NAME:-provision-test}.XXXXXX")"
PIDS=()
FAILURES=0

# Commands run at cleanup before the started processes are stopped (a test
# adds "sshd-targets.sh stop DIR" and the like).
CLEANUP_HOOKS=()
# Files whose last lines cleanup prints, after provisiond's log, when the
# script fails (an nginx error log and the like).
FAILURE_LOGS=()
# A command start_provisiond runs provisiond under, e.g. (taskset -c 0); set
# it after sourcing.
PROVISIOND_PREFIX=()

# stop_pid PID [SECONDS]: stops a process this script started: SIGTERM, up to
# SECONDS (5) for it to exit, then SIGKILL; reaps it, and takes it out of PIDS
# (so cleanup never signals the number again, maybe another process's by then).
stop_pid() {
  local pid="$1" limit="${2:-5}" keep=() p i
  for p in "${PIDS[@]:-}"; do
    if [ -n "$p" ] && [ "$p" != "$pid" ]; then keep+=("$p"); fi
  done
  PIDS=("${keep[@]}")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < limit * 20; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
  wait "$pid" 2>/dev/null || true
}

cleanup() {
  local rc=$?
  for hook in "${CLEANUP_HOOKS[@]:-}"; do
    [ -n "$hook" ] && eval "$hook" || true
  done
  for pid in "${PIDS[@]:-}"; do
    stop_pid "$pid"
  done
  if [ $rc -ne 0 ] || [ "$FAILURES" -ne 0 ]; then
    echo "--- provisiond log (last 40 lines)"
    tail -n 40 "$WORK"/provisiond*.log 2>/dev/null || true
    for log in "${FAILURE_LOGS[@]:-}"; do
      if [ -s "$log" ]; then
        echo "--- $log (last 40 lines)"
        tail -n 40 "$log"
      fi
    done
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
  echo "FAIL: $*" >&2
  FAILURES=$((FAILURES + 1))
}
# die MESSAGE: fail, then end the script (exit 1; cleanup runs).
die() {
  fail "$@"
  exit 1
}
pass() { echo "ok: $*"; }

# check "description" command...: the command must succeed.
check() {
  local what="$1"
  shift
  if "$@" >"$WORK/out" 2>&1; then pass "$what"; else
    fail "$what (exit $?): $(head -c 2000 "$WORK/out")"
  fi
}
# expect_exit CODE "description" command...: the command must exit with CODE.
expect_exit() {
  local code="$1" what="$2"
  shift 2
  local rc=0
  "$@" >"$WORK/out" 2>&1 || rc=$?
  if [ "$rc" -eq "$code" ]; then pass "$what"; else
    fail "$what: expected exit $code, got $rc: $(head -c 2000 "$WORK/out")"
  fi
}
# expect_contains "description" TEXT: the last command's output has TEXT.
expect_output() {
  local what="$1" text="$2"
  if grep -qF -- "$text" "$WORK/out"; then pass "$what"; else
    fail "$what: output lacks '$text': $(head -c 2000 "$WORK/out")"
  fi
}
expect_eq() {
  if [ "$2" == "$3" ]; then pass "$1"; else fail "$1: expected '$3', got '$2'"; fi
}

# start_provisiond NAME [extra config lines]: starts provisiond on port 0 (or
# $PROVISIOND_LISTEN) with the shipped profiles (or $PROFILES_DIR and $PLAYBOOKS_DIR), under
# PROVISIOND_PREFIX; sets URL, TOKEN (an admin token), AUTH (curl's arguments that send it),
# DATA and PROVISIOND_PID; exports PROVISIOND_URL and PROVISIOND_TOKEN for provisionctl.
start_provisiond() {
  local name="$1"
  shift
  DATA="$WORK/$name"
  mkdir -p "$DATA"
  {
    echo "listen: ${PROVISIOND_LISTEN:-127.0.0.1:0}"
    echo "data_dir: $DATA/data"
    echo "profiles_dir: ${PROFILES_DIR:-$REPO/profiles}"
    echo "playbooks_dir: ${PLAYBOOKS_DIR:-$REPO/playbooks}"
    echo "import_dir: $WORK"  # image imports read only here: the test's own files
    for line in "$@"; do echo "$line"; done
  } >"$DATA/provisiond.yaml"
  "${PROVISIOND_PREFIX[@]}" "$PROVISIOND" --config "$DATA/provisiond.yaml" >"$WORK/provisiond-$name.log" 2>&1 &
  PIDS+=($!)
  local pid=$!
  # Bounded wait for the URL file, written once the server listens (an ASan
  # build beside three lab machines has taken seconds to get there).
  for _ in $(seq 1 1200); do
    [ -s "$DATA/data/provisiond.url" ] && break
    kill -0 "$pid" 2>/dev/null || { echo "provisiond exited:"; cat "$WORK/provisiond-$name.log"; exit 1; }
    sleep 0.05
  done
  [ -s "$DATA/data/provisiond.url" ] || { echo "provisiond did not start in 60 s"; exit 1; }
  URL="$(cat "$DATA/data/provisiond.url")"
  TOKEN="$(awk '!/^#/ && NF {print $1; exit}' "$DATA/data/tokens")"
  AUTH=(-H "Authorization: Bearer $TOKEN")
  export PROVISIOND_URL="$URL" PROVISIOND_TOKEN="$TOKEN"
  PROVISIOND_PID=$pid
}

# wait_for SECONDS DESCRIPTION COMMAND...: polls COMMAND (a function is fine:
# it is run again each time) every 50 ms; fails the check and returns 1 (so a
# test under set -e stops) when it is not true within SECONDS.
wait_for() {
  local limit="$1" what="$2"
  shift 2
  local deadline=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then
      fail "$what: not within $limit s"
      return 1
    fi
    sleep 0.05
  done
}

# add_read_token: a token with the role `read` in the running provisiond's
# tokens file (start_provisiond's), loaded by SIGHUP as an operator would; sets
# READ_TOKEN. AUTH and READ_AUTH are curl's header arguments for either token.
add_read_token() {
  READ_TOKEN="$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')"
  echo "$READ_TOKEN reader read" >>"$DATA/data/tokens"
  kill -HUP "$PROVISIOND_PID"
  READ_AUTH=(-H "Authorization: Bearer $READ_TOKEN")
  wait_for 10 "provisiond loaded the read token" \
    curl -sf -o /dev/null "${READ_AUTH[@]}" "$URL/api/v1/status"
}

# fake_boot_files DIR KERNEL_BYTES INITRD_BYTES: DIR/vmlinuz and DIR/initrd.img, random bytes
# that pass the import checks (the x86 boot header "HdrS" at 0x202; gzip's magic): nothing boots
# them, but provisiond serves them as it would real ones.
fake_boot_files() {
  head -c "$2" /dev/urandom >"$1/vmlinuz"
  printf 'HdrS' | dd of="$1/vmlinuz" bs=1 seek=514 conv=notrunc status=none
  head -c "$3" /dev/urandom >"$1/initrd.img"
  printf '\037\213' | dd of="$1/initrd.img" bs=1 seek=0 conv=notrunc status=none
}

# boot_storm NODE_SIM AT: 1,000 simulated nodes (tests/bench's node simulator)
# against the provisiond start_provisiond started, after the lab image (fake
# boot files) and profile: each enrolls (POST /api/v1/nodes, 201), fetches
# /boot/start.ipxe and its own script, and phones home (200), all at once, in
# the background (SIM is its PID, $WORK/answers its log, `hellos` counts the
# phone-homes answered). Returns once AT of them were answered.
boot_storm() {
  local sim="$1" at="$2"
  fake_boot_files "$WORK" 65536 262144
  check "image import" "$PROVISIONCTL" image import lab --kernel "$WORK/vmlinuz" --initrd "$WORK/initrd.img"
  check "apply lab (nodes lab* get its image)" "$PROVISIONCTL" profile apply lab --yes
  "$sim" --url "$URL" --token "$TOKEN" --nodes 1000 --prefix lab --enroll --hello \
    --log "$WORK/answers" >"$WORK/sim.json" 2>"$WORK/sim.err" &
  SIM=$!
  PIDS+=("$SIM")
  STORM_AT="$at"
  wait_for 90 "$at phone-homes answered" storm_reached
}
hellos() { awk '$2 == "hello" && $3 == 200' "$WORK/answers" 2>/dev/null | wc -l; }
storm_reached() { [ "$(hellos)" -ge "$STORM_AT" ]; }

# node_hello URL MAC FACTS_JSON: the end of a node's boot, as the node does it:
# its boot script (which issues this boot's ticket), ticket.img (the initrd part
# that carries the ticket), the overlay with the ticket and the hello with the
# token from the overlay's agent.conf and the ticket, both from a privileged
# port (only root can bind one; these tests run as root). Needs the node to
# have an image. Prints the hello's answer.
node_hello() {
  local url="$1" mac="$2" facts="$3" hy="${2//:/-}" ticket token
  curl -sf "$url/boot/$hy.ipxe" >/dev/null || { echo "node_hello: no boot script for $mac" >&2; return 1; }
  ticket="$(curl -sf "$url/boot/$hy/ticket.img" | cpio -i --quiet --to-stdout provision/ticket)" ||
    { echo "node_hello: no ticket.img for $mac" >&2; return 1; }
  token="$(curl -sf --local-port 512-1023 "$url/boot/$hy/overlay.tar?ticket=$ticket" |
    tar -xO etc/provision/agent.conf | sed -n 's/^PROVISION_TOKEN=//p')" ||
    { echo "node_hello: no overlay for $mac" >&2; return 1; }
  curl -sf --local-port 512-1023 -X POST -H "Authorization: Bearer $token" \
    -H "X-Provision-Ticket: $ticket" -d "$facts" "$url/api/v1/nodes/$mac/hello"
}

# start_sshd_targets N PUBKEY_FILE: N real sshd targets (tests/sshd/sshd-targets.sh)
# t1..tN on one port, t1 on 127.0.1.1 and so on, that PUBKEY_FILE's key logs in
# to; stopped at cleanup. Sets TARGETS (their folder) and PORT. key_of tN and
# addr_of tN print a target's host key ("type base64") and address.
start_sshd_targets() {
  TARGETS="$WORK/targets"
  mkdir -p "$TARGETS"
  CLEANUP_HOOKS+=("bash '$REPO/tests/sshd/sshd-targets.sh' stop '$TARGETS' >/dev/null 2>&1")
  SSHD_TARGETS_SHARED_PORT=1 bash "$REPO/tests/sshd/sshd-targets.sh" start "$1" "$TARGETS" "$2" >/dev/null
  PORT="$(awk 'NR==1 {print $2}' "$TARGETS/targets")"
}
key_of() { awk -v n="$1" '$1 == n {print $3 " " $4}' "$TARGETS/targets"; }
addr_of() { awk -v n="$1" '$1 == n {print $5}' "$TARGETS/targets"; }

# long_run_profiles PROFILES PLAYBOOKS NODES: two profiles for nodes cr*:
# `base` (the lab image, no playbook) and `crash`, whose playbook crash.yml
# writes NODES/started-HOST, sleeps as many seconds as NODES/sleep_s says
# (60 here), then writes NODES/finished-HOST: a configure run to cut off (a
# kill, a takeover) and to resume (sleep_s 0).
long_run_profiles() {
  local profiles="$1" playbooks="$2" nodes="$3"
  mkdir -p "$profiles/crash" "$profiles/base" "$playbooks" "$nodes"
  echo 60 >"$nodes/sleep_s"
  printf 'version: base\nimage: {name: lab}\nnodes: {pattern: cr*}\n' >"$profiles/base/profile.yaml"
  cat >"$profiles/crash/profile.yaml" <<EOF
version: crash
description: a playbook that runs long
image:
  name: lab
playbooks:
  - playbook: crash.yml
    vars:
      base: $nodes
nodes:
  pattern: cr*
EOF
  cat >"$playbooks/crash.yml" <<'EOF'
- name: Long-running configuration
  hosts: all
  tasks:
    - name: started
      shell: echo {{ inventory_hostname }} >> {{ base }}/started-{{ inventory_hostname }}
    - name: long
      shell: sleep $(cat {{ base }}/sleep_s)
    - name: finished
      shell: echo done > {{ base }}/finished-{{ inventory_hostname }}
EOF
}

finish() {
  if [ "$FAILURES" -ne 0 ]; then
    echo "$FAILURES check(s) failed"
    exit 1
  fi
  echo "all checks passed"
}
