#!/usr/bin/env bash
# Crash safety: provisiond killed with SIGKILL (a) while 1,000 simulated nodes
# enroll and phone home at once, (b) in the middle of `profile apply` with
# playbooks running over SSH on real sshd targets. After a restart on the same
# data directory: every request that got a 2xx answer has its row, the
# database passes integrity_check, no half-written file is left, interrupted
# runs are marked `interrupted` and the restart configures their nodes again,
# to `ready`, without an apply.
# (dnsmasq and the NFS server after a SIGKILL, adopted: lab.netboot and lab.images, see
# docs/reliability.md.)
# Usage: crash_test.sh PROVISIOND PROVISIONCTL BENCH_NODE_SIM
PROVISIOND="$(realpath "$1")"
PROVISIONCTL="$(realpath "$2")"
NODE_SIM="$(realpath "$3")"
source "$(dirname "$0")/../lib.sh"
ctl() { "$PROVISIONCTL" "$@"; }

# kill9: SIGKILL provisiond and reap it; nothing of it may be left.
kill9() {
  kill -KILL "$PROVISIOND_PID"
  wait "$PROVISIOND_PID" 2>/dev/null || true
  PIDS=("${PIDS[@]/$PROVISIOND_PID/}")
}

# restart NAME: provisiond again on $WORK/NAME's config and data directory.
restart() {
  local name="$1"
  rm -f "$DATA/data/provisiond.url"
  "$PROVISIOND" --config "$DATA/provisiond.yaml" >>"$WORK/provisiond-$name.log" 2>&1 &
  PROVISIOND_PID=$!
  PIDS+=("$PROVISIOND_PID")
  wait_for 20 "provisiond restarts" test -s "$DATA/data/provisiond.url"
  URL="$(cat "$DATA/data/provisiond.url")"
  export PROVISIOND_URL="$URL"
}

# Files a node, dnsmasq or the NFS server reads are written to a temporary
# file and renamed: a SIGKILL leaves at most such a temporary file, never a
# partial file under the real name. Lists what is left.
leftover_tmp() { find "$DATA/data" -name '*.tmp.*' -o -name '.*.tmp' | sort; }

if [ "${CRASH_PART:-ab}" != b ]; then
echo "== (a) SIGKILL during 1,000 concurrent enrolls and phone-homes"
# The storm's lab image is a kernel and an initrd: nothing to bake into.
bash "$REPO/tests/profiles-without-bake.sh" "$REPO/profiles" "$WORK/storm-profiles"
PROFILES_DIR="$WORK/storm-profiles" start_provisiond storm "ssh.port: 1" "configure.task_timeout: 5"
DB="$DATA/data/provisiond.db"
# Kill once a quarter of the nodes have phoned home: enrolls, scripts and
# hellos are all in flight then.
boot_storm "$NODE_SIM" 250
kill9
pass "provisiond killed with $(hellos) phone-homes answered"
wait "$SIM" || true
enrolled_ok="$(awk '$2 == "enroll" && $3 == 201 {print $1}' "$WORK/answers" | sort -u)"
hello_ok="$(awk '$2 == "hello" && $3 == 200 {print $1}' "$WORK/answers" | sort -u)"
unanswered="$(awk '$3 == 0' "$WORK/answers" | wc -l)"
echo "client: $(echo "$enrolled_ok" | grep -c .) enrolls and $(echo "$hello_ok" | grep -c .) hellos answered 2xx, $unanswered requests cut off"
[ "$unanswered" -gt 0 ] && pass "the kill cut requests off (it was mid-storm)" ||
  fail "no request was cut off: the kill came after the storm"

expect_eq "the database passes integrity_check" "$(sqlite3 "$DB" 'PRAGMA integrity_check')" ok
expect_eq "foreign keys hold" "$(sqlite3 "$DB" 'PRAGMA foreign_key_check' | wc -l)" 0
expect_eq "no temporary file left" "$(leftover_tmp)" ""
restart storm
check "status after restart" ctl status
sqlite3 "$DB" "select hostname from nodes where hostname like 'lab%'" | sort -u >"$WORK/rows"
missing="$(comm -23 <(echo "$enrolled_ok") "$WORK/rows")"
expect_eq "every enroll answered 201 has its row" "$missing" ""
expect_eq "every node row has its enrolled event (one transaction)" \
  "$(sqlite3 "$DB" "select count(*) from nodes n where hostname like 'lab%' and not exists
     (select 1 from events e where e.node_id = n.id and e.kind = 'enrolled')")" 0
# A hello answered 200 stored the facts and the host key it carried.
sqlite3 "$DB" "select hostname from nodes where hostname like 'lab%' and host_key like 'ssh-ed25519 %' and facts like '%\"image\":\"sim\"%'" |
  sort -u >"$WORK/hello_rows"
expect_eq "every hello answered 200 has its facts and host key" \
  "$(comm -23 <(echo "$hello_ok") "$WORK/hello_rows")" ""
# (A hello committed just before the kill may have lost its answer: rows
# without a 2xx are allowed, 2xx without rows are not.)
sqlite3 "$DB" "select distinct node from events where kind = 'boot' and detail like 'hello:%' and node like 'lab%'" |
  sort -u >"$WORK/hello_events"
expect_eq "and its hello event" "$(comm -23 <(echo "$hello_ok") "$WORK/hello_events")" ""
echo "committed but unanswered when killed: $(comm -13 <(echo "$hello_ok") "$WORK/hello_events" | wc -l) hellos, $(comm -13 <(echo "$enrolled_ok") "$WORK/rows" | wc -l) enrolls"
# The nodes the kill cut off can finish: run the whole storm again (enrolls of
# rows that exist are refused with 409 and counted as failures; hellos not).
"$NODE_SIM" --url "$URL" --nodes 1000 --prefix lab --hello --log "$WORK/answers2" >"$WORK/sim2.json" 2>&1 || true
expect_eq "after the restart every enrolled node phones home" \
  "$(awk '$2 == "hello" && $3 == 200' "$WORK/answers2" | wc -l)" "$(wc -l <"$WORK/rows")"
expect_eq "integrity_check after the restart" "$(sqlite3 "$DB" 'PRAGMA integrity_check')" ok

fi

echo "== (b) SIGKILL in the middle of profile apply with playbooks running"
NODES="$WORK/nodes"
mkdir -p "$WORK/ap/data/ssh"
ssh-keygen -q -t ed25519 -N '' -C provisiond-crash -f "$WORK/ap/data/ssh/id_ed25519"
SSHD_START_TIMEOUT="${SSHD_START_TIMEOUT:-60}" start_sshd_targets 3 "$WORK/ap/data/ssh/id_ed25519.pub"
# The long task sleeps as many seconds as the file says: 60 while provisiond
# is killed, 0 for the apply after the restart.
long_run_profiles "$WORK/profiles" "$WORK/playbooks" "$NODES"
PROFILES_DIR="$WORK/profiles" PLAYBOOKS_DIR="$WORK/playbooks" \
  start_provisiond ap "ssh.port: $PORT" "configure.task_timeout: 120"
DB="$DATA/data/provisiond.db"
# The nodes boot the lab image under a profile without playbooks first (a
# node phones home at the end of a boot), then the crash profile is applied.
fake_boot_files "$WORK" 4096 4096
check "image import" ctl image import lab --kernel "$WORK/vmlinuz" --initrd "$WORK/initrd.img"
for i in 1 2 3; do
  check "enroll cr$i" ctl node add "cr$i" --mac "52:54:00:dd:00:0$i" --ip "$(addr_of "t$i")" --profile base
done
check "apply base" ctl profile apply base --yes
hello() {
  node_hello "$URL" "$(sqlite3 "$DB" "select mac from nodes where hostname = '$1'")" \
    "{\"ssh_host_key\": \"$2\"}"
}
for i in 1 2 3; do check "cr$i phones home (booted)" hello "cr$i" "$(key_of "t$i")"; done
check "cr1-3 ready under the base profile" ctl wait 'cr[1-3]' --timeout 120
# Through the API: provisionctl would follow the runs to their end.
expect_eq "apply crash: configures the booted nodes" \
  "$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $TOKEN" "$URL/api/v1/profiles/crash/apply" -d '{}')" 200
for i in 1 2 3; do
  wait_for 60 "cr$i starts its long task" test -s "$NODES/started-cr$i"
done
three_running() { [ "$(sqlite3 "$DB" "select count(*) from runs where status = 'running'")" = 3 ]; }
wait_for 30 "three runs are running" three_running
kill9
pass "provisiond killed with three playbooks running"
expect_eq "integrity_check after the kill" "$(sqlite3 "$DB" 'PRAGMA integrity_check')" ok
for i in 1 2 3; do [ -e "$NODES/finished-cr$i" ] && fail "cr$i finished before the kill"; done
expect_eq "the nodes were left configuring" \
  "$(sqlite3 "$DB" "select count(*) from nodes where hostname like 'cr%' and state = 'configuring'")" 3
# The runs the restart resumes take no time.
echo 0 >"$NODES/sleep_s"
restart ap
check "run list after the restart" ctl run list --json
expect_eq "the three cut-off runs are interrupted" \
  "$(sqlite3 "$DB" "select count(*) from runs where kind = 'configure' and status = 'interrupted'")" 3
check "provisionctl run list shows them" ctl run list --status interrupted
expect_output "interrupted runs are listed" "interrupted"
check "each has its event" ctl events
expect_output "the event says why" "interrupted: provisiond stopped while it ran"
# No apply: the restart itself configures them again.
check "the restart resumes them to ready" ctl wait 'cr[1-3]' --state ready --timeout 60
expect_output "all three ready" "3/3 ready"
expect_eq "their resumed runs are ok, by the restart" \
  "$(sqlite3 "$DB" "select count(*) from runs where kind = 'configure' and what = 'crash' and status = 'ok'
     and who = 'provisiond (resumed after a restart)'")" 3
for i in 1 2 3; do check "cr$i ran the last task" test -s "$NODES/finished-cr$i"; done

echo "== a clean stop is prompt while a client long-polls the events"
curl -s "${AUTH[@]}" "$URL/api/v1/events?after=999999999&wait=60" >/dev/null &
POLL=$!
PIDS+=("$POLL")
wait_for 10 "the long-poll is open" bash -c "ss -Htn state established '( dport = :${URL##*:} )' | grep -q ."
t0=$EPOCHREALTIME
kill -TERM "$PROVISIOND_PID"
wait "$PROVISIOND_PID" || true
stop_ms="$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d", (b - a) * 1000 }')"
wait "$POLL" || true
echo "provisiond stopped in $stop_ms ms"
[ "$stop_ms" -lt 3000 ] && pass "stopped in under 3 s with a long-poll open" ||
  fail "stopping took $stop_ms ms with a long-poll open"

finish
