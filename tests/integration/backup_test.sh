#!/usr/bin/env bash
# A backup taken during a boot storm restores to an identical inventory:
# 1,000 simulated nodes enroll, fetch their boot scripts and phone home at
# once; `provisiond backup` runs in the middle of it. The backup is one
# instant of the inventory (SQLite's online backup): its database passes
# integrity_check, every node row has its enrolled event (written in one
# transaction), and nodes enrolled after it are not in it. Restored into a
# fresh data folder, provisiond serves exactly the backup's rows (nodes,
# states, facts, host keys), with the same tokens and control key.
# Usage: backup_test.sh PROVISIOND PROVISIONCTL BENCH_NODE_SIM
PROVISIOND="$(realpath "$1")"
PROVISIONCTL="$(realpath "$2")"
NODE_SIM="$(realpath "$3")"
source "$(dirname "$0")/../lib.sh"
ctl() { "$PROVISIONCTL" "$@"; }

# Port 1: nothing there, so the configure runs a hello starts fail at once
# (never this machine's own sshd).
# The storm's lab image is a kernel and an initrd: nothing to bake into.
bash "$REPO/tests/profiles-without-bake.sh" "$REPO/profiles" "$WORK/storm-profiles"
PROFILES_DIR="$WORK/storm-profiles" start_provisiond storm "ssh.port: 1" "configure.task_timeout: 5"
boot_storm "$NODE_SIM" 200
check "provisiond backup during the storm" "$PROVISIOND" --config "$DATA/provisiond.yaml" backup "$WORK/storm.tar"
cat "$WORK/out"
wait "$SIM" || fail "the node simulator failed: $(tail -n 5 "$WORK/sim.err")"
expect_eq "every simulated node phoned home" "$(hellos)" 1000
# The storm's boot stages in /metrics: each node's script fetch, then its hello.
hello_count="$(curl -sf "${AUTH[@]}" "$URL/metrics" |
  sed -n 's/^provisiond_boot_stage_seconds_count{stage="hello"} //p')"
expect_eq "/metrics times the step to every phone-home" "$hello_count" 1000

tar -xOf "$WORK/storm.tar" provisiond.db >"$WORK/snap.db"
SNAP="$WORK/snap.db"
expect_eq "the backup's database passes integrity_check" "$(sqlite3 "$SNAP" 'PRAGMA integrity_check')" ok
expect_eq "its foreign keys hold" "$(sqlite3 "$SNAP" 'PRAGMA foreign_key_check' | wc -l)" 0
in_backup="$(sqlite3 "$SNAP" "select count(*) from nodes where hostname like 'lab%'")"
home="$(sqlite3 "$SNAP" "select count(*) from nodes where hostname like 'lab%' and host_key != ''")"
echo "the backup holds $in_backup of the 1,000 nodes, $home of them phoned home"
[ "$home" -ge 200 ] && [ "$home" -lt 1000 ] && pass "the backup is one instant in the middle of the storm" ||
  fail "the backup holds $home phoned-home nodes: not taken during the storm"
expect_eq "every node row in it has its enrolled event (whole transactions only)" \
  "$(sqlite3 "$SNAP" "select count(*) from nodes n where not exists
     (select 1 from events e where e.node_id = n.id and e.kind = 'enrolled')")" 0
rows() { sqlite3 "$1" "select mac, hostname, state, ip, image_version, host_key, facts from nodes order by mac"; }
rows "$SNAP" >"$WORK/expected"
token="$(cat "$DATA/data/tokens")"
key="$(cat "$DATA/data/ssh/id_ed25519.pub")"
kill "$PROVISIOND_PID" && wait "$PROVISIOND_PID" || true

echo "== restored into a fresh data folder"
RESTORED="$WORK/restored"
mkdir -p "$RESTORED"
sed "s#$DATA/data#$RESTORED/data#" "$DATA/provisiond.yaml" >"$RESTORED/provisiond.yaml"
check "provisiond restore" "$PROVISIOND" --config "$RESTORED/provisiond.yaml" restore "$WORK/storm.tar"
expect_output "restore counts the nodes" "restored $(sqlite3 "$SNAP" 'select count(*) from nodes') node(s)"
rows "$RESTORED/data/provisiond.db" >"$WORK/restored-rows"
cmp -s "$WORK/expected" "$WORK/restored-rows" && pass "the restored rows are the backup's, byte for byte" ||
  fail "the restored rows differ: $(diff "$WORK/expected" "$WORK/restored-rows" | head -n 5)"
expect_eq "the tokens came back" "$(cat "$RESTORED/data/tokens")" "$token"
expect_eq "the control key came back" "$(cat "$RESTORED/data/ssh/id_ed25519.pub")" "$key"
"$PROVISIOND" --config "$RESTORED/provisiond.yaml" >"$WORK/provisiond-restored.log" 2>&1 &
PROVISIOND_PID=$!
PIDS+=("$PROVISIOND_PID")
wait_for 20 "provisiond starts on the restored data" test -s "$RESTORED/data/provisiond.url"
export PROVISIOND_URL="$(cat "$RESTORED/data/provisiond.url")"
check "node list from the restored provisiond (the old token)" ctl node list --json
python3 -c '
import json, sys
answer = json.load(open(sys.argv[1]))
nodes = answer["nodes"] if isinstance(answer, dict) else answer
for n in sorted(nodes, key=lambda n: n["mac"]):
    print(n["mac"], n.get("hostname", ""))
' "$WORK/out" >"$WORK/api-rows"
# Names only: the restored provisiond goes on configuring the nodes that had
# phoned home (their states move on; the rows above compared them as restored).
awk -F'|' '{print $1, $2}' "$WORK/expected" >"$WORK/expected-api"
cmp -s "$WORK/expected-api" "$WORK/api-rows" && pass "the API serves the backed-up inventory" ||
  fail "the API's inventory differs: $(diff "$WORK/expected-api" "$WORK/api-rows" | head -n 5)"
finish
