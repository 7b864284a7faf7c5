#!/usr/bin/env bash
# provisiond on a replicated PostgreSQL whose primary is lost: pg_auto_failover
# (Debian's postgresql-15-auto-failover: a monitor and two data nodes, each
# its own "machine" here, a process group under one folder, on loopback)
# with synchronous replication, as docs/ha.md sets it up. A client enrolls
# nodes through provisiond (one control node, the libpq multi-host URI with
# target_session_attrs=read-write) while the primary machine is killed with
# SIGKILL: pg_auto_failover promotes the secondary, provisiond's connections
# follow it, every node provisiond acknowledged is there afterwards, and
# writes go on. Prints PostgreSQL's failover time (kill to the new primary
# taking writes) beside provisiond's (kill to its next acknowledged write).
# provisiond's lease outlasts PostgreSQL's failover (control.lease_ms minus
# control.stop_margin_ms, 12 s, against about 6 s with the monitor's timings
# below, as docs/ha.md says to set them), so it rides through without a
# restart; it runs under a restart loop anyway, as systemd's Restart= runs
# it, so that a restart shows as one.
# Usage: pg_failover_test.sh PROVISIOND PROVISIONCTL
set -euo pipefail
PROVISIOND="$1"
WORK_NAME=provision-pg-failover
source "$(dirname "$0")/../lib.sh"
AF="$WORK/af"
source "$REPO/tests/autofailover.sh"
af_init || die "pg_auto_failover cannot run here"
CLEANUP_HOOKS+=(af_stop)
FAILURE_LOGS+=("$AF/monitor.log" "$AF/db1.log" "$AF/db2.log")
BASE=$((20000 + $$ % 20000))  # this test's ports: BASE (monitor), BASE+1, BASE+2

check "the monitor is made" af_monitor "" 127.0.0.1 "$BASE"
monitor_up() { af_sql monitor pg_auto_failover "SELECT 1" >/dev/null 2>&1; }
wait_for 60 "the monitor answers" monitor_up
af_fast
db1_up() { case "$(af_state db1)" in single | wait_primary | primary) return 0 ;; esac; return 1; }
af_node db1 "" 127.0.0.1 $((BASE + 1))
wait_for 120 "db1 is up" db1_up
af_node db2 "" 127.0.0.1 $((BASE + 2))
# The secondary's base backup waits for a checkpoint of the primary: asked for.
secondary_ready() {
  af_sql db1 provisiond CHECKPOINT >/dev/null 2>&1 || true
  [ "$(af_state db1)" = primary ] && [ "$(af_state db2)" = secondary ]
}
wait_for 180 "db1 primary, db2 its synchronous secondary" secondary_ready
expect_eq "replication is synchronous (a commit waits for db2)" \
  "$(af_sql db1 provisiond 'SHOW synchronous_standby_names')" "ANY 1 (pgautofailover_standby_2)"

# provisiond, restarted when it exits (as systemd's Restart= would).
URI="postgresql://postgres@127.0.0.1:$((BASE + 1)),127.0.0.1:$((BASE + 2))/provisiond?target_session_attrs=read-write&connect_timeout=2"
TOKEN_FILE="$WORK/tokens"
echo "$(openssl rand -hex 16) admin" >"$TOKEN_FILE"
chmod 600 "$TOKEN_FILE"
cat >"$WORK/provisiond.yaml" <<CONF
listen: 127.0.0.1:0
api_listen: 'off'
data_dir: $WORK/data
profiles_dir: $REPO/profiles
playbooks_dir: $REPO/playbooks
database: $URI
tokens_file: $TOKEN_FILE
control.name: cn1
control.lease_ms: 15000
control.renew_ms: 1000
control.stop_margin_ms: 3000
CONF
(while :; do
  "$PROVISIOND" --config "$WORK/provisiond.yaml" >>"$WORK/provisiond.log" 2>&1 && break
  echo "provisiond exited $?: started again" >>"$WORK/restarts"
  sleep 1
done) &
PIDS+=($!)
serving() { [ -s "$WORK/data/provisiond.url" ] && curl -sf "${AUTH[@]}" "$(cat "$WORK/data/provisiond.url")/api/v1/status" >/dev/null; }
AUTH=(-H "Authorization: Bearer $(cut -d' ' -f1 "$TOKEN_FILE")")
wait_for 60 "provisiond serves on the replicated inventory" serving

# The client: one enrollment after another, for as long as the test runs;
# a write that fails is tried again with the next name (the URL is read each
# time: a restarted provisiond listens on another port).
: >"$WORK/acked"
(
  for i in $(seq 1 100000); do
    mac="$(printf '52:54:00:fb:%02x:%02x' $((i / 256)) $((i % 256)))"
    url="$(cat "$WORK/data/provisiond.url" 2>/dev/null)" || continue
    sent=$(date +%s%N)
    code="$(curl -s -o /dev/null -w '%{http_code}' -m 5 "${AUTH[@]}" -X POST "$url/api/v1/nodes" \
      -d "{\"hostname\":\"n$i\",\"mac\":\"$mac\"}")" || code=000
    if [ "$code" = 201 ]; then echo "n$i $(date +%s%N) $sent" >>"$WORK/acked"; else sleep 0.2; fi
  done
) &
PIDS+=($!)
acked() { wc -l <"$WORK/acked"; }
acked_at_least() { [ "$(acked)" -ge "$1" ]; }
wait_for 60 "the first writes are acknowledged" acked_at_least 20

# The primary machine dies.
af_kill db1
killed=$(date +%s%N)
before=$(acked)
db2_takes_writes() { af_sql db2 provisiond "SELECT NOT pg_is_in_recovery()" 2>/dev/null | grep -qx t; }
wait_for 120 "pg_auto_failover promotes db2" db2_takes_writes
pg_ms=$((($(date +%s%N) - killed) / 1000000))
# (A write sent after the kill: one in flight at the kill may be answered
# after it, by the old primary.)
acked_after_kill() { awk -v k="$killed" '$3 > k' "$WORK/acked" | grep -q .; }
wait_for 120 "provisiond acknowledges writes again" acked_after_kill
first_after="$(awk -v k="$killed" '$3 > k {print $2; exit}' "$WORK/acked")"
prov_ms=$(((first_after - killed) / 1000000))
pass "failover: PostgreSQL took writes again $pg_ms ms after the primary's SIGKILL, provisiond $prov_ms ms ($before writes acknowledged before)"
expect_eq "provisiond rode through without a restart (its connections followed the new primary)" \
  "$(cat "$WORK/restarts" 2>/dev/null | head -n 3)" ""

# Every write provisiond acknowledged, before the kill and after, is on the
# new primary.
cp "$WORK/acked" "$WORK/acked.now"
missing=0
while read -r name _; do
  af_sql db2 provisiond "SELECT 1 FROM nodes WHERE hostname = '$name'" | grep -qx 1 || missing=$((missing + 1))
done <"$WORK/acked.now"
expect_eq "all $(wc -l <"$WORK/acked.now") acknowledged writes are on db2" "$missing" 0
finish
