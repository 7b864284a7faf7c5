# shellcheck shell=bash
# tests/lab/lab-test.sh: what the lab tests share (source it after setting PROVISIONCTL):
#   say MSG                      a line with the seconds since the test started
#   fail MSG                     prints FAIL: MSG, then the test's own `dump` (if defined), exits 1;
#                                also the ERR trap, with the failing line and command
#   ctl ARGS...                  provisionctl in the lab's namespace
#   wait_for WHAT TIMEOUT_S CMD...  polls CMD (every LAB_POLL_S, default 0.5 s) until it succeeds
#   has_event NODE TEXT          true if one of NODE's events contains TEXT
#   wait_ready HOSTLIST [TIMEOUT_S] `provisionctl wait --state ready`, or fail with node why
#   profiles_without_bake DEST  the shipped profiles, their bake: lists left out
#   hello_to_ready NODE         seconds from NODE's last phone-home to ready (its events)
#   configure_cost NODE...       for the log: each NODE's latest configure run, its slowest
#                                tasks and its task count (from the inventory in $DATA)
#   lab_config PROFILES STORE    prints a provisiond config for the lab (full DHCP on the bridge,
#                                the repository's playbooks, pxe and images, the lab's power
#                                driver, data in $DATA); a test appends its own keys
#   lab_dump LINES FILE...       for a test's `dump`: the last LINES lines of each FILE that
#                                exists (printable characters: consoles carry escapes), then
#                                the last events when the lab is up
LAB_TEST_T0="${EPOCHREALTIME//[!0-9]/}"
say() { printf '[%6.1fs] %s\n' "$(((${EPOCHREALTIME//[!0-9]/} - LAB_TEST_T0) / 100000))e-1" "$*"; }
fail() {
  echo "FAIL: $*" >&2
  declare -F dump >/dev/null && dump
  exit 1
}
trap 'fail "line $LINENO: $BASH_COMMAND"' ERR
lab_dump() {
  local lines="$1" f
  shift
  for f in "$@"; do
    [ -f "$f" ] || continue
    echo "--- last $lines lines of $f"
    tail -n "$lines" "$f" | tr -cd '\11\12\40-\176'
  done
  if [ -n "${LAB_NS:-}" ]; then
    echo "--- events"
    lab_exec "$PROVISIONCTL" events --limit 400 2>&1 | tail -n 40
  fi
  return 0
} >&2
ctl() { lab_exec "$PROVISIONCTL" "$@"; }
lab_config() {
  local here
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  cat <<CONF
listen: 0.0.0.0:8080
data_dir: $DATA
profiles_dir: $1
playbooks_dir: $here/../../playbooks
images_dir: $here/../../images
pxe_dir: $here/../../pxe
image_store: $2
tools_dir: $(dirname "$PROVISIOND")
interface: $LAB_BRIDGE
dhcp:
  range: 10.99.0.100-10.99.0.199
power:
  command: $here/power.sh
CONF
}
wait_for() {
  local what="$1" timeout="$2"
  shift 2
  local deadline=$((${EPOCHREALTIME//[!0-9]/} + timeout * 1000000))
  until "$@" >/dev/null 2>&1; do
    [ "${EPOCHREALTIME//[!0-9]/}" -lt "$deadline" ] || fail "timed out after ${timeout}s waiting for: $what"
    sleep "${LAB_POLL_S:-0.5}"
  done
}
# Output is captured before grep: `cmd | grep -q` fails under pipefail when
# grep stops reading early (SIGPIPE in cmd).
has_event() {
  ctl events --node "$1" --limit 100000 >"$LAB_DIR/events.out"
  grep -q -- "$2" "$LAB_DIR/events.out"
}
# The shipped profiles copied to DEST without their `bake:` lists
# (tests/profiles-without-bake.sh).
profiles_without_bake() {
  bash "$(dirname "${BASH_SOURCE[0]}")/../profiles-without-bake.sh" "$REPO/profiles" "$1" ||
    fail "could not copy the profiles without their bake lists"
}
hello_to_ready() { lab_hello_to_ready "$PROVISIONCTL" "$1"; }
configure_cost() {
  local n run
  for n in "$@"; do
    run="(select max(id) from runs where node = '$n' and kind = 'configure')"
    echo "$n's configure run, by task (seconds): $(sqlite3 "$DATA/provisiond.db" "select group_concat(printf('%s %.1f', t.task, t.duration_ms / 1000.0), '; ') from (select task, duration_ms from run_tasks where run_id = $run order by duration_ms desc limit 12) t")" >&2
    echo "$n's configure run: $(sqlite3 "$DATA/provisiond.db" "select count(*) || ' tasks, ' || printf('%.1f', sum(duration_ms) / 1000.0) || ' s in tasks' from run_tasks where run_id = $run")" >&2
  done
}
wait_ready() {
  local out="$LAB_DIR/wait-$1.out" limit="${2:-$TIMEOUT}"
  ctl wait "$1" --state ready --timeout "$limit" >"$out" 2>&1 || {
    tail -n 20 "$out" >&2
    ctl node why "$1" >&2 || true
    ctl run list >&2 || true
    fail "$1 did not reach ready in ${limit}s"
  }
}
