#!/usr/bin/env bash
# Two control nodes on one PostgreSQL inventory (loopback, API only): one is
# active (it holds the lease), the other a standby that serves nothing. The
# active is killed with SIGKILL while a client writes: the standby takes
# over within a bounded time, every write acknowledged before the kill is
# there, the configure runs the kill cut off (playbooks over SSH on real sshd
# targets) are marked interrupted and run again by the new active, to ready,
# status says who is active and since when, /metrics counts the failover; the
# old active comes back as a standby. Then the database goes away: the active
# steps down (exit 75) instead of serving without a lease.
# Usage: failover_test.sh PROVISIOND PROVISIONCTL
set -euo pipefail
PROVISIOND="$1" PROVISIONCTL="$2"
WORK_NAME=provision-failover
source "$(dirname "$0")/../lib.sh"
source "$REPO/tests/postgres.sh"

start_postgres
pass "PostgreSQL 15 on $PG_DIR"
# One token file for both: a client's token works on whichever is active.
TOKEN_FILE="$WORK/tokens"
echo "$(openssl rand -hex 16) admin" >"$TOKEN_FILE"
chmod 600 "$TOKEN_FILE"
LEASE=(
  "database: $PG_URI"
  "tokens_file: $TOKEN_FILE"
  "control.lease_ms: 3000"
  "control.renew_ms: 500"
  "control.stop_margin_ms: 1000"
)

# The key the control nodes configure nodes with, alike on both (docs/ha.md),
# and three real sshd targets it logs in to; the shipped profiles and
# playbooks, and two of the tests' own for them (tests/lib.sh).
KEY="$WORK/control-key"
ssh-keygen -q -t ed25519 -N '' -C provisiond-failover -f "$KEY"
SSHD_START_TIMEOUT="${SSHD_START_TIMEOUT:-60}" start_sshd_targets 3 "$KEY.pub"
NODES="$WORK/nodes"
cp -r "$REPO/profiles" "$WORK/profiles"
cp -r "$REPO/playbooks" "$WORK/playbooks"
long_run_profiles "$WORK/profiles" "$WORK/playbooks" "$NODES"

# control_node NAME [KEY [PLAYBOOKS]]: starts a control node in the
# background (no wait: a standby writes no URL file); sets CN_PID.
control_node() {
  local name="$1" dir="$WORK/$1" key="${2:-$KEY}" playbooks="${3:-$WORK/playbooks}"
  mkdir -p "$dir/data/ssh"
  rm -f "$dir/data/provisiond.url"
  cp "$key" "$dir/data/ssh/id_ed25519"
  cp "$key.pub" "$dir/data/ssh/id_ed25519.pub"
  {
    echo "listen: 127.0.0.1:0"
    echo "data_dir: $dir/data"
    echo "profiles_dir: $WORK/profiles"
    echo "playbooks_dir: $playbooks"
    echo "ssh.port: $PORT"
    echo "control.name: $name"
    for line in "${LEASE[@]}"; do echo "$line"; done
  } >"$dir/provisiond.yaml"
  "$PROVISIOND" --config "$dir/provisiond.yaml" >>"$WORK/provisiond-$name.log" 2>&1 &
  CN_PID=$!
  PIDS+=("$CN_PID")
}
url_of() { cat "$WORK/$1/data/provisiond.url"; }
serving() { [ -s "$WORK/$1/data/provisiond.url" ] && curl -sf "${AUTH[@]}" "$(url_of "$1")/api/v1/status" >/dev/null; }
logged() { grep -q -- "$2" "$WORK/provisiond-$1.log"; }
AUTH=(-H "Authorization: Bearer $(cut -d' ' -f1 "$TOKEN_FILE")")

control_node cn1
CN1=$CN_PID
wait_for 60 "cn1 is active and serves" serving cn1
control_node cn2
CN2=$CN_PID
wait_for 30 "cn2 waits as a standby" logged cn2 "standby as cn2: cn1 is the active control node"
check "the standby serves nothing" test ! -e "$WORK/cn2/data/provisiond.url"
status="$(curl -sf "${AUTH[@]}" "$(url_of cn1)/api/v1/status")"
expect_eq "status names the active" "$(jq -r '.control.node + " " + .control.database' <<<"$status")" "cn1 postgresql"

# Images on every control node: the standby copies each version the active
# holds (over the active's HTTPS API, its key pinned as the active reported
# it in the database), checks it and keeps it byte for byte.
ctl1() { PROVISIOND_URL="$(url_of cn1)" PROVISIOND_TOKEN="$(cut -d' ' -f1 "$TOKEN_FILE")" "$PROVISIONCTL" "$@"; }
IMPORT="$WORK/cn1/data/import"  # what an import may read
fake_boot_files "$IMPORT" 65536 131072
check "an image imported on the active" ctl1 image import lab --kernel "$IMPORT/vmlinuz" --initrd "$IMPORT/initrd.img"
V1="$(ctl1 image list --json | jq -r '.images[] | select(.current) | .version')"
copied() { [ -f "$WORK/cn2/data/images/lab/$1/image.json" ]; }
wait_for 60 "the standby copies lab@$V1" copied "$V1"
for f in vmlinuz initrd.img image.json; do
  check "cn2's lab@$V1 $f is cn1's, byte for byte" cmp "$WORK/cn1/data/images/lab/$V1/$f" "$WORK/cn2/data/images/lab/$V1/$f"
done
check "cn2 copied it over HTTPS, the key pinned" logged cn2 "copied lab@$V1 from cn1"
expect_eq "cn1 reported its HTTPS API, with its key's pin" \
  "$(pg_sql "SELECT url LIKE 'https://127.0.0.1:%' AND tls_pin LIKE 'sha256//%' FROM control_nodes WHERE name = 'cn1'")" t

# A standby that cannot copy (stopped): the active's preflight and status name
# what it lacks, and no node is pointed at an image it lacks.
kill -STOP "$CN2"
head -c 70000 /dev/urandom >"$IMPORT/vmlinuz2"
printf 'HdrS' | dd of="$IMPORT/vmlinuz2" bs=1 seek=514 conv=notrunc status=none
check "a new version imported on the active" ctl1 image import lab --kernel "$IMPORT/vmlinuz2" --initrd "$IMPORT/initrd.img"
V2="$(ctl1 image list --json | jq -r '.images[] | select(.current) | .version')"
[ "$V2" != "$V1" ] || fail "the second import made no new version"
expect_exit 1 "preflight on the active: the standby lacks lab@$V2" ctl1 preflight
expect_output "it names the standby and the version" "cn2 lacks lab@$V2"
expect_exit 1 "profile apply is refused while a standby lacks the image" ctl1 profile apply lab-boot --yes
expect_output "it names the image and the standby" "image lab@$V2 is not on control node cn2 yet"
check "status lists the control nodes" ctl1 status
expect_output "status says what cn2 lacks" "lacks lab@$V2"
# Half of the archive already there, as a copy cut off leaves it: the
# standby asks for the rest only (HTTP Range) and checks the whole.
curl -sf "${AUTH[@]}" -o "$WORK/v2.tar" "$(url_of cn1)/api/v1/images/lab@$V2/archive"
mkdir -p "$WORK/cn2/data/image-copies"
head -c $(($(stat -c %s "$WORK/v2.tar") / 2)) "$WORK/v2.tar" >"$WORK/cn2/data/image-copies/lab@$V2.tar.part"
kill -CONT "$CN2"
wait_for 60 "the standby copies lab@$V2 once it runs again" copied "$V2"
check "it went on from the half it had" logged cn2 "lab@$V2 from cn1: going on after the $(($(stat -c %s "$WORK/v2.tar") / 2)) bytes"
check "and the copy is whole" cmp "$WORK/cn1/data/images/lab/$V2/vmlinuz" "$WORK/cn2/data/images/lab/$V2/vmlinuz"
wait_for 30 "the active sees it" bash -c "PROVISIOND_URL=$(url_of cn1) PROVISIOND_TOKEN=$(cut -d' ' -f1 "$TOKEN_FILE") $PROVISIONCTL preflight >/dev/null"
check "profile apply goes through once every control node holds it" ctl1 profile apply lab-boot --yes
# The archives were for the copies: gone once every control node holds them.
archives_gone() { ! ls "$WORK/cn1/data/image-archives/"*.tar >/dev/null 2>&1; }
wait_for 30 "the active removes the archives every control node has copied" archives_gone
check "and says so" logged cn1 "removed the archive of lab@$V2: every control node holds it"
check "status: no control node lacks anything" ctl1 status
expect_output "cn2 holds every version in use" "image version(s), every one in use"

# Configure runs for the takeover to cut off: three sshd targets boot (their
# hello) under `base`, then `crash` is applied, whose playbook runs long.
for i in 1 2 3; do
  check "enroll cr$i" ctl1 node add "cr$i" --mac "52:54:00:dd:00:0$i" --ip "$(addr_of "t$i")" --profile base
done
check "apply base" ctl1 profile apply base --yes
for i in 1 2 3; do
  check "cr$i phones home (booted)" node_hello "$(url_of cn1)" "52:54:00:dd:00:0$i" "{\"ssh_host_key\": \"$(key_of "t$i")\"}"
done
check "cr1-3 ready under the base profile" ctl1 wait 'cr[1-3]' --timeout 120
expect_eq "apply crash: configures the three (through the API: provisionctl would follow them)" \
  "$(curl -s -o /dev/null -w '%{http_code}' -X POST "${AUTH[@]}" "$(url_of cn1)/api/v1/profiles/crash/apply" -d '{}')" 200
for i in 1 2 3; do wait_for 60 "cr$i starts its long task" test -s "$NODES/started-cr$i"; done
three_running() { [ "$(pg_sql "SELECT count(*) FROM runs WHERE what = 'crash' AND status = 'running'")" = 3 ]; }
wait_for 30 "three runs are running" three_running

# A client enrolls nodes on the active, one request each, until the active
# is gone; every 201 is a write provisiond acknowledged.
URL1="$(url_of cn1)"
: >"$WORK/acked"
(
  for i in $(seq 1 100000); do
    mac="$(printf '52:54:00:fa:%02x:%02x' $((i / 256)) $((i % 256)))"
    code="$(curl -s -o /dev/null -w '%{http_code}' -m 5 "${AUTH[@]}" -X POST "$URL1/api/v1/nodes" \
      -d "{\"hostname\":\"n$i\",\"mac\":\"$mac\"}")" || break
    [ "$code" = 201 ] || break
    echo "n$i" >>"$WORK/acked"
  done
) &
WRITER=$!
acked_at_least() { [ "$(wc -l <"$WORK/acked")" -ge "$1" ]; }
wait_for 60 "the client's first writes are acknowledged" acked_at_least 20
kill -KILL "$CN1"
killed_ns=$(date +%s%N)
wait "$CN1" 2>/dev/null || true
wait_for 30 "cn2 takes over and serves" serving cn2
took_ms=$((($(date +%s%N) - killed_ns) / 1000000))
wait "$WRITER" 2>/dev/null || true
pass "failover: from cn1's SIGKILL to cn2 answering took $took_ms ms (lease 3000 ms, renewals every 500 ms)"
acked=$(wc -l <"$WORK/acked")
missing=0
while read -r name; do
  curl -sf -o /dev/null "${AUTH[@]}" "$(url_of cn2)/api/v1/nodes/$name" || missing=$((missing + 1))
done <"$WORK/acked"
expect_eq "all $acked acknowledged writes are on cn2" "$missing" 0
status="$(curl -sf "${AUTH[@]}" "$(url_of cn2)/api/v1/status")"
expect_eq "status names the new active and its takeover" \
  "$(jq -r '.control.node + " " + (.control.epoch | tostring) + " " + (.control.since > 0 | tostring)' <<<"$status")" \
  "cn2 2 true"
# The runs the kill cut off: interrupted, and run again by cn2 on its own
# (no apply), this time without the long sleep.
for i in 1 2 3; do [ -e "$NODES/finished-cr$i" ] && fail "cr$i finished before the kill"; done
echo 0 >"$NODES/sleep_s"
expect_eq "the three runs cn1's death cut off are marked interrupted" \
  "$(pg_sql "SELECT count(*) FROM runs WHERE what = 'crash' AND status = 'interrupted'")" 3
ctl2() { PROVISIOND_URL="$(url_of cn2)" PROVISIOND_TOKEN="$(cut -d' ' -f1 "$TOKEN_FILE")" "$PROVISIONCTL" "$@"; }
check "cn2 configures them again, to ready" ctl2 wait 'cr[1-3]' --state ready --timeout 120
expect_output "all three ready" "3/3 ready"
expect_eq "their runs again, by cn2" \
  "$(pg_sql "SELECT count(*) FROM runs WHERE what = 'crash' AND status = 'ok'
     AND who = 'provisiond on cn2 (resumed when it became active)'")" 3
for i in 1 2 3; do check "cr$i ran the last task" test -s "$NODES/finished-cr$i"; done

# provisionctl given both control nodes reaches the active one.
out="$(PROVISIOND_URL="$(url_of cn1 2>/dev/null || echo http://127.0.0.1:1),$(url_of cn2)" \
  PROVISIOND_TOKEN="$(cut -d' ' -f1 "$TOKEN_FILE")" "$PROVISIONCTL" status 2>&1)" || true
check "provisionctl given both control nodes reaches the active (cn2)" \
  grep -q "control node: *cn2, active since" <<<"$out"
check "/metrics counts the failover" \
  bash -c "curl -sf -H 'Authorization: Bearer $(cut -d' ' -f1 "$TOKEN_FILE")' $(url_of cn2)/metrics | grep -qx 'provisiond_control_failovers_total 1'"

# The old active comes back: a standby now.
control_node cn1
CN1=$CN_PID
wait_for 30 "cn1 comes back as a standby" logged cn1 "standby as cn1: cn2 is the active control node"
check "cn1 serves nothing" test ! -e "$WORK/cn1/data/provisiond.url"

# What a takeover needs alike (docs/ha.md): cn1 has it; a third control node
# set up with a key of its own and a playbook more does not, and the
# active's preflight says so.
expect_exit 0 "preflight on cn2: cn1 has its control key, profiles, playbooks and secrets" ctl2 preflight
expect_output "the check says so" "every control node has this one's control key, profiles, playbooks and secrets"
ssh-keygen -q -t ed25519 -N '' -C provisiond-other -f "$WORK/other-key"
cp -r "$WORK/playbooks" "$WORK/other-playbooks"
echo "- hosts: all" >"$WORK/other-playbooks/extra.yml"
control_node cn3 "$WORK/other-key" "$WORK/other-playbooks"
wait_for 30 "cn3 waits as a standby" logged cn3 "standby as cn3: cn2 is the active control node"
unlike_seen() { ! ctl2 preflight >"$WORK/preflight-cn3.out" 2>&1 && grep -q "cn3's control key, playbooks differ from cn2's" "$WORK/preflight-cn3.out"; }
wait_for 30 "the active's preflight names what cn3 lacks alike" unlike_seen
stop_pid "$CN_PID"
# A secret set on the active after the standbys were set up: named until the
# operator copies the secrets store, as docs/ha.md says.
head -c 32 /dev/urandom | base64 >"$WORK/extra-secret"
check "a secret set on the active" ctl2 secret set extra --from-file "$WORK/extra-secret"
secrets_unlike() { ! ctl2 preflight >"$WORK/preflight-sec.out" 2>&1 && grep -q "cn1's secrets differ from cn2's" "$WORK/preflight-sec.out"; }
wait_for 30 "the active's preflight names cn1's secrets" secrets_unlike
rm -rf "$WORK/cn1/data/secrets" && cp -a "$WORK/cn2/data/secrets" "$WORK/cn1/data/secrets"
# (cn3, stopped, counts for a minute: its differences stay named.)
alike_again() {
  ctl2 preflight >"$WORK/preflight-sec.out" 2>&1 || true
  grep -q "control nodes alike" "$WORK/preflight-sec.out" && ! grep -q "cn1's" "$WORK/preflight-sec.out"
}
wait_for 30 "preflight no longer names cn1 once it holds the secrets store as cn2 has it" alike_again

# The database goes away: cn2 cannot renew and steps down before its lease
# would lapse; cn1 cannot take over without the database either.
stop_postgres
rc=0
for _ in $(seq 1 200); do kill -0 "$CN2" 2>/dev/null || break; sleep 0.05; done
wait "$CN2" 2>/dev/null || rc=$?
expect_eq "cn2 stepped down (exit 75) without its database" "$rc" 75
check "cn2 said why" logged cn2 "stepping down as the active control node: no renewal of the control lease"
check "cn1 is still a standby" test ! -e "$WORK/cn1/data/provisiond.url"
finish
