#!/usr/bin/env bash
# Lab test of two control nodes (docs/ha.md): cn1 and cn2, each a network
# namespace of its own on the lab bridge (eth0 10.99.0.11 and .12) and a mount
# namespace of its own, run provisiond with the cluster address 10.99.0.1
# moving with the lease, on a PostgreSQL inventory replicated as docs/ha.md
# sets it up: pg_auto_failover (tests/autofailover.sh), a data node on each
# control node, synchronous replication, the monitor on a third machine (the
# lab's own namespace, 10.99.0.2). QEMU machines netboot the lab profile's
# derived image from whichever control node is active.
#   1. cn1 is active; cn2, a standby, copies the derived image from it (over
#      HTTPS, its erofs image with it) before the profile may be applied
#   2. lab0 boots from cn1 to `ready`; a loop on lab0 reads files of its NFS
#      root again and again (caches dropped each round) and prints each
#      round on its serial console
#   3. lab1 is powered on and cn1 dies at once: every process of its
#      namespace killed with SIGKILL (its database primary with it), its
#      link down
#   4. pg_auto_failover promotes cn2's data node and cn2 takes over: the
#      times to the new primary's first write, to cn2's first boot script at
#      10.99.0.1 and to lab0's next good read are measured; lab0 sees no
#      failed read and no stale file handle; lab1 reaches `ready` through
#      cn2; the writes cn1 acknowledged before it died are there
#   5. cn1 comes back as a standby, its data node as the secondary
# With HA_ROUNDS=N (tests/bench/failover_bench.sh) the active is killed N
# times, the two taking turns; each round prints its figures.
# Usage: ha_test.sh PROVISIOND PROVISIONCTL   (root)
set -euo pipefail
PROVISIOND="$(realpath "$1")"
PROVISIONCTL="$(realpath "$2")"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
TIMEOUT="${LAB_TIMEOUT:-420}"
ROUNDS="${HA_ROUNDS:-1}"
P="pvha$$"
dump() {
  [ -n "${LAB_DIR:-}" ] || return 0
  lab_dump 40 "$LAB_DIR"/cn1/provisiond.log "$LAB_DIR"/cn2/provisiond.log \
    "$LAB_DIR"/cn1/data/nfs/ganesha.log "$LAB_DIR"/cn2/data/nfs/ganesha.log \
    "$LAB_DIR"/lab0.serial "$LAB_DIR"/lab1.serial "$LAB_DIR"/af/*.log
}
source "$HERE/lab-test.sh"
[ "$(id -u)" -eq 0 ] || fail "run as root (network namespaces, taps, loop devices)"

# The control nodes' namespaces go when the test ends, whatever runs in them,
# before the lab's own cleanup removes the folder their mounts are in.
remove_control_nodes() {
  local ns pid
  for ns in "$P-cn1" "$P-cn2"; do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
  [ -z "${CHECKPOINTS:-}" ] || kill "$CHECKPOINTS" 2>/dev/null || true
  [ -z "${AF:-}" ] || af_stop
}
trap remove_control_nodes EXIT  # until lab_init; ha_cleanup below

source "$HERE/lab.sh"
source "$HERE/lab-image.sh"
say "the lab image and the lab profile's derived image"
STORE="$(lab_image_store "$PROVISIOND" "$PROVISIONCTL" "$REPO/profiles" lab lab)" ||
  fail "no lab image"
# The lab's own address is .2: 10.99.0.1 is the cluster address, which the
# active control node holds.
LAB_ADDR=10.99.0.2
LAB_ADDR6_DEFAULT=fd00:99::2
lab_init ha
ha_cleanup() {
  local rc=$?
  set +e
  remove_control_nodes
  lab_cleanup
  return $rc
}
trap ha_cleanup EXIT
trap 'ha_cleanup; exit 130' INT
trap 'ha_cleanup; exit 143' TERM
trap 'ha_cleanup; exit 129' HUP
lab_start_repo || fail "the lab apt repository did not start"


# The shipped profiles, the lab's repository at the lab's own address.
cp -r "$REPO/profiles" "$LAB_DIR/profiles"
sed -i 's|http://10.99.0.1:8081/debian-lab|http://10.99.0.2:8081/debian-lab|' "$LAB_DIR/profiles/lab/profile.yaml"
echo "$(openssl rand -hex 16) admin" >"$LAB_DIR/tokens"
chmod 600 "$LAB_DIR/tokens"
TOKEN="$(awk '{print $1; exit}' "$LAB_DIR/tokens")"

for n in 1 2; do
  ns="$P-cn$n"
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  ip link add "${P}c$n" type veth peer name "${P}b$n"
  ip link set "${P}c$n" netns "$ns"
  ip link set "${P}b$n" netns "$LAB_NS"
  ip -n "$ns" link set "${P}c$n" name eth0
  ip -n "$ns" address add "10.99.0.1$n/24" dev eth0
  ip -n "$ns" address add "fd00:99::1$n/64" dev eth0 nodad 2>/dev/null || true
  ip -n "$ns" link set eth0 up
  ip -n "$LAB_NS" link set "${P}b$n" master "$LAB_BRIDGE" up
done

# PostgreSQL with its failover tool: the monitor in the lab's namespace, a
# data node on each control node, each on a port of this test's own (their
# Unix sockets share one folder).
AF="$LAB_DIR/af"
source "$REPO/tests/autofailover.sh"
af_init || fail "pg_auto_failover cannot run here"
BASE=$((20000 + $$ % 20000))
af_monitor "$LAB_NS" "$LAB_ADDR" "$BASE" || fail "the pg_auto_failover monitor was not made"
monitor_up() { af_sql monitor pg_auto_failover "SELECT 1"; }
wait_for "the pg_auto_failover monitor" 60 monitor_up
af_fast
db_is() { [ "$(af_state "db$1")" = "$2" ]; }
primary_up() { case "$(af_state db1)" in single | wait_primary | primary) return 0 ;; esac; return 1; }
af_node db1 "$P-cn1" 10.99.0.11 $((BASE + 1))
wait_for "db1 (on cn1) up" 120 primary_up
# provisiond's connections come from the control nodes' addresses.
echo "host provisiond postgres 10.99.0.0/24 trust" >>"$AF/db1/pg_hba.conf"
af_sql db1 provisiond "SELECT pg_reload_conf()" >/dev/null
af_node db2 "$P-cn2" 10.99.0.12 $((BASE + 2)) # waited for below, before the rounds
# Its base backup waits for a checkpoint of the primary: asked for, every
# second until it is the secondary (in the background: the lab goes on).
(for _ in $(seq 1 300); do
  af_sql db1 provisiond CHECKPOINT >/dev/null 2>&1 || true
  ! db_is 2 secondary || break
  sleep 1
done) &
CHECKPOINTS=$!
replicated() { db_is 1 primary && db_is 2 secondary; }

for n in 1 2; do
  mkdir -p "$LAB_DIR/cn$n/store"
  # Its own data node first: a standby finds the new primary at once.
  hosts="10.99.0.1$n:$((BASE + n)),10.99.0.1$((3 - n)):$((BASE + 3 - n))"
  cat >"$LAB_DIR/cn$n/provisiond.yaml" <<CONF
listen: 0.0.0.0:8080
data_dir: $LAB_DIR/cn$n/data
profiles_dir: $LAB_DIR/profiles
playbooks_dir: $REPO/playbooks
images_dir: $REPO/images
pxe_dir: $REPO/pxe
image_store: $LAB_DIR/cn$n/store
tools_dir: $(dirname "$PROVISIOND")
interface: eth0
dhcp:
  range: 10.99.0.100-10.99.0.199
database: postgresql://postgres@$hosts/provisiond?target_session_attrs=read-write&connect_timeout=2&tcp_user_timeout=2000
tokens_file: $LAB_DIR/tokens
control.name: cn$n
control.address: 10.99.0.1/24
control.lease_ms: 3000
control.renew_ms: 500
control.stop_margin_ms: 1000
CONF
done
# cn1 holds the images as built (hard links into the cache: nothing there is
# ever written; each version's erofs image is a new file in cn1's folder).
# The lab profile's derived image: the newest lab.baked version baked from
# the current lab with its bake playbooks (lab-slurm's is a lab.baked too).
base="$(cat "$STORE/lab/current")"
derived="$(jq -r --arg base "lab@$base" 'select(.derived.base == $base and
    ([.derived.inputs.bake[].playbook] == ["compute-user.yml", "lab-node.yml", "metrics.yml"]))
  | "\(.created) \(.version)"' "$STORE"/lab.baked/*/image.json | sort -n | tail -n 1 | cut -d' ' -f2)"
[ -n "$derived" ] || fail "no derived image of the lab profile in $STORE"
# (A copy where the cache is on another filesystem.)
link_or_copy() { cp -al "$1" "$2" 2>/dev/null || { rm -rf "$2/${1##*/}" && cp -a "$1" "$2"; }; }
mkdir -p "$LAB_DIR/cn1/store/lab" "$LAB_DIR/cn1/store/lab.baked"
link_or_copy "$STORE/lab/$base" "$LAB_DIR/cn1/store/lab/"
link_or_copy "$STORE/lab.baked/$derived" "$LAB_DIR/cn1/store/lab.baked/"
echo "$base" >"$LAB_DIR/cn1/store/lab/current"
echo "$derived" >"$LAB_DIR/cn1/store/lab.baked/current"

# A control node: provisiond in its network namespace and a mount namespace of
# its own (its erofs mounts go with it, as with a machine).
CN_PID=()
start_cn() {
  local n="$1"
  ip netns exec "$P-cn$n" unshare -m --propagation private "$PROVISIOND" \
    --config "$LAB_DIR/cn$n/provisiond.yaml" </dev/null >>"$LAB_DIR/cn$n/provisiond.log" 2>&1 &
  CN_PID[n]=$!
}
ctl_on() {  # ctl_on N ARGS...: provisionctl on control node N (plain HTTP answers loopback)
  local n="$1"
  shift
  PROVISIOND_URL=http://127.0.0.1:8080 PROVISIOND_TOKEN="$TOKEN" ip netns exec "$P-cn$n" "$PROVISIONCTL" "$@"
}
logged() { grep -q -- "$2" "$LAB_DIR/cn$1/provisiond.log"; }
holds() { ip -n "$P-cn$1" -4 -o address show dev eth0 | grep -q ' 10.99.0.1/24 '; }
# A boot script from 10.99.0.1, as a node asks for it: served by the active.
boot_script() { lab_exec curl -sf -m 1 -o /dev/null http://10.99.0.1:8080/boot/start.ipxe; }
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }

start_cn 1
wait_for "cn1 to be active with the cluster address" 90 holds 1
wait_for "cn1's boot network" 60 logged 1 "boot network on eth0"
# The control nodes share the key they configure nodes with and the secrets
# store (an operator copies them, as the tokens file).
mkdir -p "$LAB_DIR/cn2/data"
cp -a "$LAB_DIR/cn1/data/ssh" "$LAB_DIR/cn1/data/secrets" "$LAB_DIR/cn2/data/"
# cn2 holds the base image as cn1 has it, erofs image included (as a copy
# would: to save the lab a second copy of 2 GB), and copies the derived one.
has_erofs() { [ -s "$LAB_DIR/cn1/store/lab/$base/root.erofs" ]; }
wait_for "cn1 to make the erofs image of lab@$base" 120 has_erofs
mkdir -p "$LAB_DIR/cn2/store/lab"
cp -al "$LAB_DIR/cn1/store/lab/$base" "$LAB_DIR/cn2/store/lab/"
# A file of its own, as on another machine (one file is one loop device).
cp --remove-destination "$LAB_DIR/cn1/store/lab/$base/root.erofs" "$LAB_DIR/cn2/store/lab/$base/root.erofs"
echo "$base" >"$LAB_DIR/cn2/store/lab/current"
start_cn 2
wait_for "cn2 to wait as a standby" 60 logged 2 "standby as cn2: cn1 is the active control node"
say "cn1 active at 10.99.0.1, cn2 standby"

# 1. The derived image reaches cn2 (with its erofs image) before the profile
#    may point a node at it.
has_copy() { [ -s "$LAB_DIR/cn2/store/lab.baked/$derived/root.erofs" ]; }
t0=$(date +%s%N)
wait_for "cn2 to copy lab.baked@$derived from cn1" 300 has_copy
say "cn2 copied lab.baked@$derived in $(ms_since "$t0") ms ($(du -sh "$LAB_DIR/cn2/store/lab.baked/$derived" | cut -f1))"
cmp "$LAB_DIR/cn1/store/lab.baked/$derived/root.erofs" "$LAB_DIR/cn2/store/lab.baked/$derived/root.erofs" ||
  fail "cn2's erofs image of lab.baked@$derived is not cn1's"
# Once cn2 has said so in its next report, preflight passes.
preflight_ok() { ctl_on 1 preflight >"$LAB_DIR/preflight.out" 2>&1; }
preflight_ok || wait_for "preflight to see the copy on cn2" 30 preflight_ok ||
  { cat "$LAB_DIR/preflight.out"; fail "preflight failed"; }

# 2. lab0 boots from cn1 and reads its root in a loop.
M0=52:54:00:99:40:10 M1=52:54:00:99:40:11
ctl_on 1 node add lab0 --mac "$M0" >/dev/null
ctl_on 1 profile apply lab --yes >/dev/null
grep -a -q "nfsroot" <(ctl_on 1 image verify lab.baked 2>&1) || fail "nodes are not pointed at the erofs root (nfsroot)"
lab_vm_start lab0 "$M0" bios
ctl_on 1 wait lab0 --state ready --timeout "$TIMEOUT" >"$LAB_DIR/wait-lab0.out" 2>&1 ||
  { cat "$LAB_DIR/wait-lab0.out"; ctl_on 1 node why lab0 || true; fail "lab0 did not reach ready"; }
say "lab0 ready through cn1"
# The reader: every round drops the caches (dentries and inodes too), then
# reads 300 files of the root anew by path and one file held open since its
# start; each round's result goes to the serial console.
reader='exec 3</usr/lib/os-release
n=0
while :; do
  n=$((n + 1))
  echo 3 >/proc/sys/vm/drop_caches
  err=$( { find /usr/lib/x86_64-linux-gnu -maxdepth 1 -type f -name "*.so*" | head -n 300 | xargs cat >/dev/null; } 2>&1 )
  rc=$?
  held=$(cat /proc/self/fd/3 2>&1 | head -n 1)
  case "$held" in PRETTY_NAME=*|NAME=*) ;; *) rc=1; err="$err held file: $held" ;; esac
  if [ "$rc" -eq 0 ] && [ -z "$err" ]; then
    echo "provision-ha-reader ok $n" >/dev/ttyS0
  else
    echo "provision-ha-reader FAILED $n: $err" | head -c 300 >/dev/ttyS0; echo >/dev/ttyS0
  fi
done'
ctl_on 1 cmd lab0 -- "echo $(printf '%s' "$reader" | base64 -w0) | base64 -d >/run/ha-reader.sh && systemd-run --unit=ha-reader /bin/sh /run/ha-reader.sh" >/dev/null ||
  fail "could not start the reader on lab0"
reads() { grep -a -c "provision-ha-reader ok" "$LAB_DIR/lab0.serial" || true; }
failed_reads() { grep -a -c -i "provision-ha-reader FAILED\|stale file handle" "$LAB_DIR/lab0.serial" || true; }
more_reads() { [ "$(reads)" -gt "$1" ]; }
wait_for "lab0's reader to read its root" 60 more_reads 2
say "lab0 reads its root: $(reads) rounds so far"

# The database replicated before any write the rounds check.
wait_for "db1 primary, db2 its synchronous secondary" 180 replicated
[ "$(af_sql db1 provisiond 'SHOW synchronous_standby_names')" = "ANY 1 (pgautofailover_standby_2)" ] ||
  fail "replication is not synchronous"
say "db1 (on cn1) primary, db2 (on cn2) its synchronous secondary"

# The rounds: kill the active, measure, bring it back as a standby.
active=1
for round in $(seq 1 "$ROUNDS"); do
  standby=$((3 - active))
  # Acknowledged writes just before the kill: they must be there afterwards.
  for i in 1 2 3; do ctl_on "$active" node add "ack$round-$i" --mac "52:54:00:99:5$round:0$i" >/dev/null; done
  if [ "$round" -eq 1 ]; then
    ctl_on "$active" node add lab1 --mac "$M1" >/dev/null
    lab_vm_start lab1 "$M1" bios # powering on while its control node dies
  fi
  before=$(reads)
  for ns in "$P-cn$active"; do
    for pid in $(ip netns pids "$ns"); do kill -KILL "$pid" 2>/dev/null || true; done
  done
  ip -n "$P-cn$active" link set eth0 down
  killed=$(date +%s%N)
  wait "${CN_PID[active]}" 2>/dev/null || true
  # All measured by polling from here: the database's new primary taking
  # writes, the first boot script and the next read.
  pg_writes() { af_sql "db$standby" provisiond "SELECT NOT pg_is_in_recovery()" 2>/dev/null | grep -qx t; }
  t_pg="" t_boot="" t_read=""
  deadline=$(($(date +%s) + 60))
  while [ -z "$t_pg" ] || [ -z "$t_boot" ] || [ -z "$t_read" ]; do
    [ "$(date +%s)" -lt "$deadline" ] ||
      fail "round $round: after 60 s: new primary ${t_pg:-none}, boot script ${t_boot:-none}, next read ${t_read:-none}"
    [ -n "$t_pg" ] || ! pg_writes || t_pg=$(ms_since "$killed")
    [ -n "$t_boot" ] || ! boot_script || t_boot=$(ms_since "$killed")
    [ -n "$t_read" ] || ! more_reads "$before" || t_read=$(ms_since "$killed")
    sleep 0.1
  done
  holds "$standby" || fail "round $round: cn$standby serves without holding the cluster address"
  # lab0's NFS connection, as cn$active reported it, was told that it ended.
  told() { logged "$standby" "told [1-9][0-9]* NFS client connection(s) of the old active that they ended"; }
  wait_for "cn$standby to tell the old active's NFS clients that their connections ended" 10 told
  say "round $round: cn$active killed with db$active; db$standby took writes $t_pg ms later; cn$standby served a boot script $t_boot ms later; lab0's next read $t_read ms later (lease 3000 ms)"
  echo "failover round=$round pg_primary_ms=$t_pg boot_script_ms=$t_boot next_read_ms=$t_read" >>"$LAB_DIR/failover.txt"
  [ "$(failed_reads)" -eq 0 ] || { grep -a "provision-ha-reader FAILED\|tale file" "$LAB_DIR/lab0.serial" | head -5; fail "lab0 saw a failed read after the takeover"; }
  for i in 1 2 3; do
    ctl_on "$standby" node show "ack$round-$i" >/dev/null || fail "round $round: ack$round-$i, acknowledged by cn$active, is gone"
  done
  if [ "$round" -eq 1 ]; then
    # lab1's firmware may have asked for an address while no control node
    # answered, and given up (SeaBIOS: "No bootable device"): it is reset, as
    # its BMC or a person would. Either way it must reach ready through cn2.
    resets=0 t1=$(date +%s)
    until ctl_on "$standby" node show lab1 --json 2>/dev/null | grep -q '"state":"ready"'; do
      [ $(($(date +%s) - t1)) -lt "$TIMEOUT" ] ||
        { ctl_on "$standby" node why lab1 || true; fail "lab1 did not reach ready through cn$standby"; }
      if [ "$(grep -a -c "No bootable device" "$LAB_DIR/lab1.serial" || true)" -gt "$resets" ]; then
        resets=$((resets + 1))
        [ "$resets" -le 2 ] || fail "lab1's firmware gave up $resets times"
        say "lab1's firmware gave up while no control node answered (no DHCP offer): reset"
        lab_vm_reset lab1
      fi
      sleep 1
    done
    say "lab1, powered on as cn$active died, ready through cn$standby (firmware resets: $resets)"
  fi
  # The dead one comes back, as a standby; its data node as the secondary.
  ip -n "$P-cn$active" link set eth0 up
  af_start "db$active"
  mv "$LAB_DIR/cn$active/provisiond.log" "$LAB_DIR/cn$active/provisiond.log.round$round"
  start_cn "$active"
  wait_for "cn$active to come back as a standby" 60 logged "$active" "standby as cn$active: cn$standby is the active control node"
  holds "$active" && fail "cn$active holds the cluster address as a standby"
  more=$(reads)
  wait_for "lab0 to go on reading" 60 more_reads "$more"
  rejoined() { db_is "$standby" primary && db_is "$active" secondary; }
  wait_for "db$active to rejoin as db$standby's secondary" 180 rejoined
  say "round $round: cn$active back as a standby, db$active the secondary; lab0 has read $(reads) rounds, none failed"
  active=$standby
done
[ "$(failed_reads)" -eq 0 ] || fail "lab0 saw a failed read"
ctl_on "$active" node show lab0 >/dev/null
say "PASS: $ROUNDS takeover(s); lab0 read its root through each without a failed read"
