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
PG_BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"
command -v pg_autoctl >/dev/null || die "pg_autoctl is not installed: scripts/install-deps.sh"
id postgres >/dev/null 2>&1 || die "no postgres user: install postgresql-15"

AF="$WORK/af"
mkdir -p "$AF"
chmod o+x "$WORK"
chown postgres: "$AF"
BASE=$((20000 + $$ % 20000))  # this test's ports: BASE (monitor), BASE+1, BASE+2
af() { runuser -u postgres -- env PATH="$PG_BIN:$PATH" XDG_CONFIG_HOME="$AF/config" XDG_DATA_HOME="$AF/data" pg_autoctl "$@"; }
SESSIONS=()
# Everything this test started under $AF goes: each server stopped by pg_ctl,
# each machine's process group killed, then whatever of ours is left (a
# server pg_autoctl started in a session of its own runs in $AF).
stop_machines() {
  local s d p
  for d in monitor db1 db2; do
    [ -f "$AF/$d/postmaster.pid" ] &&
      runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$AF/$d" -m immediate -w -t 10 stop >/dev/null 2>&1
  done
  for s in "${SESSIONS[@]:-}"; do [ -n "$s" ] && kill -KILL -- "-$s" 2>/dev/null; done
  for p in /proc/[0-9]*; do
    case "$(readlink "$p/cwd" 2>/dev/null) $(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)" in
      *"$AF/"*) kill -KILL "${p#/proc/}" 2>/dev/null ;;
    esac
  done
  return 0
}
CLEANUP_HOOKS+=(stop_machines)
# machine NAME ARGS...: `pg_autoctl ARGS` as a process group of its own (one
# machine); sets MACHINE to its group.
machine() {
  local name="$1"
  shift
  setsid bash -c 'exec "$@"' machine runuser -u postgres -- env PATH="$PG_BIN:$PATH" \
    XDG_CONFIG_HOME="$AF/config" XDG_DATA_HOME="$AF/data" pg_autoctl "$@" >"$AF/$name.log" 2>&1 &
  MACHINE=$!
  SESSIONS+=("$MACHINE")
  FAILURE_LOGS+=("$AF/$name.log")
}

check "the monitor is made" af create monitor --pgdata "$AF/monitor" --pgport "$BASE" \
  --hostname 127.0.0.1 --auth trust --no-ssl
machine monitor run --pgdata "$AF/monitor"
mon_sql() { runuser -u postgres -- "$PG_BIN/psql" -h 127.0.0.1 -p "$BASE" -d pg_auto_failover -X -q -t -A -c "$1"; }
monitor_up() { mon_sql "SELECT 1" >/dev/null 2>&1; }
wait_for 60 "the monitor answers" monitor_up
# Health checks every second, a node unhealthy after 3 s, the old primary
# given 3 s to confirm its demotion (defaults: 5 s, 20 s, 30 s).
for setting in health_check_period=1000 health_check_timeout=1000 health_check_max_retries=1 \
  health_check_retry_delay=500 node_considered_unhealthy_timeout=3000 primary_demote_timeout=3000; do
  mon_sql "ALTER SYSTEM SET pgautofailover.${setting%%=*} = ${setting#*=}" >/dev/null
done
mon_sql "SELECT pg_reload_conf()" >/dev/null
state_of() { mon_sql "SELECT reportedstate FROM pgautofailover.node WHERE nodename = '$1'" 2>/dev/null; }
db1_up() { case "$(state_of db1)" in single | wait_primary | primary) return 0 ;; esac; return 1; }
MONITOR_URI="postgres://autoctl_node@127.0.0.1:$BASE/pg_auto_failover?sslmode=disable"
for i in 1 2; do
  machine "db$i" create postgres --pgdata "$AF/db$i" --pgport $((BASE + i)) --hostname 127.0.0.1 \
    --name "db$i" --monitor "$MONITOR_URI" --auth trust --no-ssl --dbname provisiond --run
  eval "DB${i}=\$MACHINE"
  [ "$i" = 2 ] || wait_for 120 "db1 is up" db1_up
done
# The secondary's base backup waits for a checkpoint of the primary: asked for.
secondary_ready() {
  runuser -u postgres -- "$PG_BIN/psql" -h 127.0.0.1 -p $((BASE + 1)) -d provisiond -X -q -c CHECKPOINT >/dev/null 2>&1 || true
  [ "$(state_of db1)" = primary ] && [ "$(state_of db2)" = secondary ]
}
wait_for 180 "db1 primary, db2 its synchronous secondary" secondary_ready
expect_eq "replication is synchronous (a commit waits for db2)" \
  "$(runuser -u postgres -- "$PG_BIN/psql" -h 127.0.0.1 -p $((BASE + 1)) -d provisiond -X -t -A -c 'SHOW synchronous_standby_names')" \
  "ANY 1 (pgautofailover_standby_2)"

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
    code="$(curl -s -o /dev/null -w '%{http_code}' -m 5 "${AUTH[@]}" -X POST "$url/api/v1/nodes" \
      -d "{\"hostname\":\"n$i\",\"mac\":\"$mac\"}")" || code=000
    if [ "$code" = 201 ]; then echo "n$i $(date +%s%N)" >>"$WORK/acked"; else sleep 0.2; fi
  done
) &
PIDS+=($!)
acked() { wc -l <"$WORK/acked"; }
acked_at_least() { [ "$(acked)" -ge "$1" ]; }
wait_for 60 "the first writes are acknowledged" acked_at_least 20

# The primary machine dies.
kill -KILL -- "-$DB1"
killed=$(date +%s%N)
before=$(acked)
db2_takes_writes() { runuser -u postgres -- "$PG_BIN/psql" "postgresql://postgres@127.0.0.1:$((BASE + 2))/provisiond" -X -t -A -c "SELECT NOT pg_is_in_recovery()" 2>/dev/null | grep -qx t; }
wait_for 120 "pg_auto_failover promotes db2" db2_takes_writes
pg_ms=$((($(date +%s%N) - killed) / 1000000))
acked_after_kill() { awk -v k="$killed" '$2 > k' "$WORK/acked" | grep -q .; }
wait_for 120 "provisiond acknowledges writes again" acked_after_kill
first_after="$(awk -v k="$killed" '$2 > k {print $2; exit}' "$WORK/acked")"
prov_ms=$(((first_after - killed) / 1000000))
pass "failover: PostgreSQL took writes again $pg_ms ms after the primary's SIGKILL, provisiond $prov_ms ms ($before writes acknowledged before)"
expect_eq "provisiond rode through without a restart (its connections followed the new primary)" \
  "$(cat "$WORK/restarts" 2>/dev/null | head -n 3)" ""

# Every write provisiond acknowledged, before the kill and after, is on the
# new primary.
cp "$WORK/acked" "$WORK/acked.now"
missing=0
while read -r name _; do
  runuser -u postgres -- "$PG_BIN/psql" "postgresql://postgres@127.0.0.1:$((BASE + 2))/provisiond" -X -t -A \
    -c "SELECT 1 FROM nodes WHERE hostname = '$name'" | grep -qx 1 || missing=$((missing + 1))
done <"$WORK/acked.now"
expect_eq "all $(wc -l <"$WORK/acked.now") acknowledged writes are on db2" "$missing" 0
finish
