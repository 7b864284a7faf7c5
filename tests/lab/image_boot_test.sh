#!/usr/bin/env bash
# Lab test of the second half of the boot: the lab image built by provisiond
# (mmdebstrap), exported read-only over NFS by provisiond's nfs-ganesha and
# read back with libnfs, and QEMU machines that boot it all the way: PXE, iPXE,
# kernel and initrd, NFS root + tmpfs overlay, systemd, phone-home with facts.
#   1. two machines powered on by provisiond at the same time boot, phone
#      home with their facts and a pinned host key and reach `ready` through
#      the lab profile's playbooks: lab0 its derived image (the compute user,
#      hello and the node exporter baked at image stage), lab1 the plain lab
#      image with the same playbooks at node stage only (the compute user, a
#      package from the lab's Debian mirror, files, a service; a report
#      of its facts written once natively and once under ansible-playbook,
#      which must agree) and health checks; `provisionctl cmd` reaches them as the compute user; over SSH
#      / is an overlay, and a file written there does not reach the export
#   1d. local storage: lab0 has three blank virtio disks; its profile's volumes
#      (an md RAID-0 of the two large ones at /mnt/scratch with a folder of
#      the compute user bound onto it, the small one at /srv/data) are made
#      at its first boot, before its services, and a file is written there
#   2. lab0 is powered off and a partition table written on its data disk:
#      it boots with its RAID-0 assembled and mounted, not formatted again
#      (same filesystem UUID, the file there), and is `failed` with the disk
#      named; after `node storage wipe` and a power cycle with the lab's
#      mirror stopped, the file on / is gone, the node phoned home again and
#      was configured again (its overlay is new) to `ready` with no mirror,
#      its data disk wiped and made again; the other one stayed ready and
#      reachable meanwhile
#   3. node why names the stage when the export cannot be read, and when a
#      phone-home comes with a wrong token
#   1c. Debian's Prometheus finds lab0 and lab1 through provisiond's service
#      discovery (GET /api/v1/sd/prometheus) and scrapes the node exporters the
#      lab profile installed: both targets up
#   4. the network console: lab0's boot in `node console` in order (what
#      provisiond served, the kernel, the initrd's steps, the journal); a
#      machine whose initrd cannot mount its root shows the failing line in
#      node why; a line from an address that is no node is dropped and counted
# The image store is cached between runs (keyed by what goes into the image),
# so only the first run on a machine builds the image.
# Usage: image_boot_test.sh PROVISIOND PROVISIONCTL   (root)
set -euo pipefail
PROVISIOND="$(realpath "$1")"
PROVISIONCTL="$(realpath "$2")"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
TOOLS="$(dirname "$PROVISIOND")"
TIMEOUT="${LAB_TIMEOUT:-420}"
dump() {
  [ -n "${LAB_DIR:-}" ] || return 0
  lab_dump 25 "$LAB_DIR"/provisiond.log "$LAB_DIR"/data/nfs/ganesha.log "$LAB_DIR"/*.serial \
    "$LAB_DIR"/prometheus.log "$LAB_DIR"/targets.json
}
source "$HERE/lab-test.sh"
node_json() { ctl node show "$1" --json; }
field() { node_json "$1" | sed -n "s/.*\"$2\":\"\\([^\"]*\\)\".*/\\1/p"; }
state_is() { [ "$(field "$1" state)" = "$2" ]; }
# Output is captured before grep: `cmd | grep -q` fails under pipefail when
# grep stops reading early (SIGPIPE in cmd).
hellos() {
  ctl events --node "$1" --limit 100000 >"$LAB_DIR/hellos.out"
  grep -c "hello: from" "$LAB_DIR/hellos.out" || true
}
more_hellos() { [ "$(hellos "$1")" -gt "$2" ]; }

[ "$(id -u)" -eq 0 ] || fail "run as root (network namespaces, taps)"

source "$HERE/lab.sh"
source "$HERE/lab-image.sh"
lab_init images
lab_start_repo || fail "the lab apt repository did not start"
DATA="$LAB_DIR/data"
# The shipped profiles, plus one whose image has an export nobody can read.
cp -r "$REPO/profiles" "$LAB_DIR/profiles"
mkdir -p "$LAB_DIR/profiles/broken"
printf 'version: broken\nimage: {name: broken}\nnodes: {pattern: "bad*"}\n' >"$LAB_DIR/profiles/broken/profile.yaml"
# And one whose nodes are told a root export that does not exist (the last
# provision.nfs= on the command line wins), failing once per round.
mkdir -p "$LAB_DIR/profiles/noroot"
cat >"$LAB_DIR/profiles/noroot/profile.yaml" <<'PROFILE'
version: noroot
image: {name: lab}
nodes: {pattern: "noroot*"}
kernel_args: ["console=ttyS0", "provision.nfs=10.99.0.1:/no/such/export", "provision.tries=1"]
PROFILE
# The lab profile also runs node-report.yml on each runner: a node reaches
# ready through a playbook that runs under ansible-playbook, and the facts the
# native runner derives match the ones Ansible gathers on the node.
# (Added at the end of the playbooks list: before the next top-level key.)
awk 'list && /^[^ #-]/ {
  print "  - playbook: node-report.yml"; print "    runner: native"
  print "    vars: {report_path: /run/node-report-native.txt}"
  print "  - playbook: node-report.yml"; print "    runner: ansible"
  print "    vars: {report_path: /run/node-report-ansible.txt}"; list = 0 }
  /^playbooks:/ { list = 1 }
  { print }' "$REPO/profiles/lab/profile.yaml" >"$LAB_DIR/profiles/lab/profile.yaml"
grep -q "node-report-ansible" "$LAB_DIR/profiles/lab/profile.yaml" ||
  fail "node-report.yml was not added to the lab profile's playbooks"
# lab0 boots the lab profile's derived image (its bake: the compute user,
# hello, the node exporter); lab1 the same profile without `bake:` (the
# plain lab image: hello from the lab's repository at node stage), side by
# side: the time from phone-home to ready of each.
bash "$REPO/tests/profiles-without-bake.sh" "$LAB_DIR/profiles" "$LAB_DIR/unbaked" ||
  fail "could not copy the profiles without their bake lists"
mkdir -p "$LAB_DIR/profiles/lab-nobake"
sed -e 's/^version: lab$/version: lab-nobake/' -e 's/^  pattern: lab\*$/  pattern: "nobake*"/' \
  "$LAB_DIR/unbaked/lab/profile.yaml" >"$LAB_DIR/profiles/lab-nobake/profile.yaml"
if grep -q "^bake:" "$LAB_DIR/profiles/lab-nobake/profile.yaml" || ! grep -q "^version: lab-nobake$" "$LAB_DIR/profiles/lab-nobake/profile.yaml"; then
  cat "$LAB_DIR/profiles/lab-nobake/profile.yaml"; fail "could not make the lab-nobake profile"
fi
# lab0's local storage (lab1, on lab-nobake, has no disks and no volumes).
cat >>"$LAB_DIR/profiles/lab/profile.yaml" <<'STORAGE'
storage:
  - name: scratch
    disks: {transport: virtio, min_size: 1G}
    layout: raid0
    mount: /mnt/scratch
    binds:
      - {path: /home/compute/.cache, owner: compute, mode: "0700"}
  - name: data
    disks: {ids: [virtio-data-1]}
    mount: /srv/data
STORAGE
printf 'lab0 scratch-1 1G\nlab0 scratch-2 1G\nlab0 data-1 512M\n' >"$LAB_DIR/disks"
t="${EPOCHREALTIME//[!0-9]/}"
STORE="$(lab_image_store "$PROVISIOND" "$PROVISIONCTL" "$LAB_DIR/profiles" lab lab)" || fail "the lab image or the lab profile's derived image was not built"
say "lab image and the lab profile's derived image ready in $STORE ($(((${EPOCHREALTIME//[!0-9]/} - t) / 1000000)) s): lab@$(cat "$STORE/lab/current"), lab.baked@$(cat "$STORE/lab.baked/current")"
cat >"$LAB_DIR/provisiond.yaml" <<CONF
listen: 0.0.0.0:8080
data_dir: $DATA
profiles_dir: $LAB_DIR/profiles
playbooks_dir: $REPO/playbooks
images_dir: $REPO/images
pxe_dir: $REPO/pxe
image_store: $STORE
tools_dir: $TOOLS
interface: $LAB_BRIDGE
dhcp:
  range: 10.99.0.100-10.99.0.199
power:
  command: $HERE/power.sh
CONF
lab_spawn provisiond "$PROVISIOND" --config "$LAB_DIR/provisiond.yaml"
PROVISIOND_PID="$LAB_LAST_PID"
wait_for "provisiond's URL file" 30 test -s "$DATA/provisiond.url"
# provisionctl runs in the lab's namespace: the API over plain HTTP answers loopback only.
export PROVISIOND_URL="http://127.0.0.1:8080"
BOOT_URL="http://$LAB_ADDR:8080"  # what nodes use
export PROVISIOND_TOKEN="$(awk '!/^#/ && NF {print $1; exit}' "$DATA/tokens")"
wait_for "dnsmasq" 20 lab_wait_port udp 67 1
wait_for "the NFS server" 20 lab_wait_port tcp 2049 1

ctl image verify lab >"$LAB_DIR/verify.out" || { cat "$LAB_DIR/verify.out"; fail "image verify failed"; }
ctl events --limit 100000 >"$LAB_DIR/events.out"
grep -q "image-verified.*reads" "$LAB_DIR/events.out" || fail "no image-verified event (libnfs read)"
say "the export reads back over NFS (libnfs): $(grep -i nfs "$LAB_DIR/verify.out" | head -1)"
ctl profile apply lab --yes >/dev/null
ctl profile plan lab >"$LAB_DIR/plan-lab.out"
grep -q "^image reused: lab.baked@" "$LAB_DIR/plan-lab.out" || { cat "$LAB_DIR/plan-lab.out"; fail "the lab profile's derived image is not the one built"; }

# 1. Power on two machines at once (one CPU each), boot to `booted` with facts;
# SSH in with the control key.
M0=52:54:00:97:00:10
ctl node add lab0 --mac "$M0" --power command >/dev/null
ctl node add lab1 --mac 52:54:00:97:00:11 --profile lab-nobake --power command >/dev/null
ctl node power on 'lab[0-1]' >/dev/null
# Phone-home, then the lab profile's playbooks and health checks: ready.
wait_ready 'lab[0-1]'
say "lab0 and lab1 booted at the same time: ready $(lab_vm_elapsed lab0)s and $(lab_vm_elapsed lab1)s after power-on; from phone-home to ready: lab0 (baked image) $(hello_to_ready lab0) s, lab1 (hello installed at node stage) $(hello_to_ready lab1) s"
# Where each node's configure run spent its time (the node stage's cost per
# task under TCG), for the log.
configure_cost lab0 lab1
ctl node show lab0 >"$LAB_DIR/show-lab0.out"
grep -q "lab.baked@" "$LAB_DIR/show-lab0.out" || { cat "$LAB_DIR/show-lab0.out"; fail "lab0 does not boot the lab profile's derived image"; }

# 1a. The network console of lab0's boot, in order: provisiond's lines for the
# stages it served, the kernel's (netconsole sends what the log held before it
# started), the initrd's steps, then the journal of the booted system.
console_json() { ctl node console "$1" --json >"$LAB_DIR/console-$1.json"; }
first_line() { grep -n -m1 -- "$2" "$LAB_DIR/console-$1.json" | cut -d: -f1; }
has_system_lines() { console_json "$1" && grep -q '"source":"system"' "$LAB_DIR/console-$1.json"; }
wait_for "lab0's journal in its network console" 120 has_system_lines lab0
ctl node console lab0 >"$LAB_DIR/console-lab0.out"
served="$(first_line lab0 '"source":"provisiond","text":"script: ')"
banner="$(first_line lab0 '"source":"kernel","text":"[^"]*Linux version ')"
initrd="$(first_line lab0 '"source":"initrd","text":"[^"]*provision: network ')"
system="$(first_line lab0 '"source":"system","text":"[^"]*systemd\[1\]: ')"
for v in served banner initrd system; do
  [ -n "${!v}" ] || { cat "$LAB_DIR/console-lab0.out"; fail "lab0's network console has no $v line"; }
done
[ "$served" -lt "$banner" ] && [ "$banner" -lt "$initrd" ] && [ "$initrd" -lt "$system" ] ||
  { cat "$LAB_DIR/console-lab0.out"; fail "lab0's console lines are out of order ($served $banner $initrd $system)"; }
grep -q '"boot":1,' "$LAB_DIR/console-lab0.json" || fail "lab0's first boot is not boot 1"
say "lab0's network console: $(wc -l <"$LAB_DIR/console-lab0.json") lines, provisiond's stages (line $served), the kernel (banner at $banner), the initrd ($initrd), the journal ($system)"
# A line from an address that is no node (provisiond's own, on the lab
# network) is dropped and counted.
metric() {
  lab_exec curl -sf -H "Authorization: Bearer $PROVISIOND_TOKEN" "$PROVISIOND_URL/metrics" >"$LAB_DIR/metrics.out"
  awk -v m="$1" 'index($0, m) == 1 {print $2}' "$LAB_DIR/metrics.out"
}
dropped_before="$(metric 'provisiond_console_dropped_total{reason="unknown_address"}')"
lab_exec bash -c "echo 'made-up line from no node' >/dev/udp/$LAB_ADDR/6666"
dropped_more() { [ "$(metric 'provisiond_console_dropped_total{reason="unknown_address"}')" -gt "${dropped_before:-0}" ]; }
wait_for "the line from no node to be counted as dropped" 30 dropped_more
[ "$(sqlite3 "$DATA/console.db" "select count(*) from console_lines where line like '%made-up line%'")" = 0 ] ||
  fail "a line from an address that is no node was kept"
say "a line from $LAB_ADDR (no node) was dropped and counted: $(grep 'provisiond_console_dropped_total{reason="unknown_address"}' "$LAB_DIR/metrics.out")"

# 1c. Prometheus (Debian's) discovers the nodes through provisiond and scrapes
# the node exporters the lab profile installed.
# The token without a newline; the type said outright (Prometheus 2.42 sends
# no "Bearer" for service discovery otherwise).
printf '%s' "$PROVISIOND_TOKEN" >"$LAB_DIR/prometheus.token"
chmod 0600 "$LAB_DIR/prometheus.token"
cat >"$LAB_DIR/prometheus.yml" <<PROM
global:
  scrape_interval: 2s
  scrape_timeout: 2s
scrape_configs:
  - job_name: provisiond-nodes
    http_sd_configs:
      - url: $PROVISIOND_URL/api/v1/sd/prometheus
        refresh_interval: 2s
        authorization:
          type: Bearer
          credentials_file: $LAB_DIR/prometheus.token
PROM
lab_spawn prometheus /usr/bin/prometheus --config.file="$LAB_DIR/prometheus.yml" \
  --storage.tsdb.path="$LAB_DIR/prometheus" --web.listen-address=127.0.0.1:9090
PROMETHEUS_PID="$LAB_LAST_PID"
targets_up() {
  lab_exec curl -sf http://127.0.0.1:9090/api/v1/targets >"$LAB_DIR/targets.json" || return 1
  python3 - "$LAB_DIR/targets.json" >"$LAB_DIR/targets.up" <<'PY'
import json, sys
targets = json.load(open(sys.argv[1]))["data"]["activeTargets"]
up = sorted(t["labels"].get("hostname", "") for t in targets if t["health"] == "up")
print(" ".join(up))
sys.exit(0 if {"lab0", "lab1"} <= set(up) else 1)
PY
}
wait_for "Prometheus to discover lab0 and lab1 through provisiond and scrape them" 90 targets_up
# What the reading that passed saw (a later scrape under load may time out).
up="$(cat "$LAB_DIR/targets.up")"
say "Prometheus discovered the nodes through /api/v1/sd/prometheus and scrapes their node exporters: up: $up"
# Stopped once seen: its scrapes every 2 s cost each node under TCG about a
# tenth of a core for the rest of the test.
kill "$PROMETHEUS_PID" 2>/dev/null || true

# 1d. provisiond killed with SIGKILL while lab0 and lab1 are up: its NFS
# server and dnsmasq keep running and serving them, and the next provisiond
# adopts both (same processes, nothing restarted). Meanwhile lab0 reads
# files from its NFS root it has not read before, one every 50 ms, from
# before the kill until it has read 5 more after the adoption: none fails;
# the longest wait between two reads is reported, not asserted. (Counted in
# reads, not seconds: under TCG beside other machines a read may take
# seconds.)
comm_pid() {
  local p
  for p in $(ip netns pids "$LAB_NS"); do
    if [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$1" ]; then echo "$p"; fi
  done
}
nfs_pid="$(comm_pid ganesha.nfsd)" dns_pid="$(comm_pid dnsmasq)"
[ -n "$nfs_pid" ] && [ -n "$dns_pid" ] || fail "no NFS server ($nfs_pid) or dnsmasq ($dns_pid) in the lab"
probe='end=$((SECONDS + 900))
find /usr/lib /usr/share -type f 2>/dev/null | while read -r f; do
  [ ! -e /tmp/nfs-probe.stop ] && [ $SECONDS -lt $end ] || break
  if head -c 4096 "$f" >/dev/null; then echo "$EPOCHREALTIME ok"; else echo "$EPOCHREALTIME failed $f"; fi
  sleep 0.05
done >/tmp/nfs-probe.log 2>&1
echo done >>/tmp/nfs-probe.log'
printf '%s\n' "$probe" >"$LAB_DIR/nfs-probe.sh"
# One word: provisionctl cmd passes it as a shell line.
ctl cmd lab0 -- "echo $(base64 -w0 "$LAB_DIR/nfs-probe.sh") | base64 -d >/tmp/nfs-probe.sh && setsid bash /tmp/nfs-probe.sh </dev/null >/dev/null 2>&1 &" >/dev/null ||
  fail "cannot start the NFS probe on lab0"
probe_reads() { ctl cmd lab0 -- "grep -c ' ok\$' /tmp/nfs-probe.log || true" | grep -Eo '^[0-9]+$' | tail -n 1; }
probe_read_past() { local n; n="$(probe_reads)" && [ -n "$n" ] && [ "$n" -ge "$1" ]; }
wait_for "lab0's NFS probe to read 5 files" 120 probe_read_past 5
lab_kill_hard "$PROVISIOND_PID" || fail "provisiond ($PROVISIOND_PID) did not exit after SIGKILL"
lab_spawn provisiond "$PROVISIOND" --config "$LAB_DIR/provisiond.yaml"
PROVISIOND_PID="$LAB_LAST_PID"
both_adopted() {
  ctl events --limit 100000 >"$LAB_DIR/events.out" &&
    grep -q "adopted (pid $nfs_pid)" "$LAB_DIR/events.out" && grep -q "adopted (pid $dns_pid)" "$LAB_DIR/events.out"
}
wait_for "the restarted provisiond to adopt the NFS server ($nfs_pid) and dnsmasq ($dns_pid)" 60 both_adopted
[ "$(comm_pid ganesha.nfsd)" = "$nfs_pid" ] && [ "$(comm_pid dnsmasq)" = "$dns_pid" ] ||
  fail "the NFS server or dnsmasq was replaced: $(comm_pid ganesha.nfsd) $(comm_pid dnsmasq)"
adopted_at="$(probe_reads)"
[ -n "$adopted_at" ] || fail "cannot count lab0's NFS probe's reads after the restart"
wait_for "lab0's NFS probe to read 5 more files after the adoption ($adopted_at so far)" 120 probe_read_past $((adopted_at + 5))
ctl cmd lab0 -- touch /tmp/nfs-probe.stop >/dev/null || fail "cannot stop lab0's NFS probe"
probe_done() { ctl cmd lab0 -- tail -n 1 /tmp/nfs-probe.log >"$LAB_DIR/probe.tail" && grep -q done "$LAB_DIR/probe.tail"; }
wait_for "lab0's NFS probe to end" 90 probe_done
ctl cmd lab0 -- cat /tmp/nfs-probe.log >"$LAB_DIR/nfs-probe.log"
grep -Eo '[0-9]+\.[0-9]+ ok' "$LAB_DIR/nfs-probe.log" >"$LAB_DIR/nfs-probe.ok" || true
reads="$(wc -l <"$LAB_DIR/nfs-probe.ok")"
! grep -Eq '[0-9]+\.[0-9]+ failed ' "$LAB_DIR/nfs-probe.log" ||
  fail "reads from lab0's NFS root failed: $(grep -E -m3 '[0-9]+\.[0-9]+ failed ' "$LAB_DIR/nfs-probe.log")"
[ "$reads" -ge $((adopted_at + 5)) ] || fail "lab0's NFS probe's log holds $reads reads, fewer than it counted: $(head -5 "$LAB_DIR/nfs-probe.log")"
gap="$(awk '{ if (last) { d = $1 - last; if (d > max) max = d } last = $1 } END { printf "%.2f", max }' "$LAB_DIR/nfs-probe.ok")"
state_is lab0 ready && state_is lab1 ready || fail "a node left ready across provisiond's restart"
say "provisiond killed with SIGKILL and restarted: NFS server ($nfs_pid) and dnsmasq ($dns_pid) adopted; lab0 read $reads files from its NFS root meanwhile, none failed, longest wait between two ${gap} s"
ctl run list --node lab0 --status ok >"$LAB_DIR/runs0.out"
grep -q "lab0 .*configure" "$LAB_DIR/runs0.out" || { ctl run list --node lab0 >&2; fail "lab0 has no configure run that is ok"; }
ctl run show "$(awk '$2 == "lab0" && $3 == "configure" {print $1; exit}' "$LAB_DIR/runs0.out")" >"$LAB_DIR/run0.out" || true
grep -q "The node's report" "$LAB_DIR/run0.out" || { cat "$LAB_DIR/run0.out"; fail "lab0's configure run has no node-report task"; }
ctl cmd lab0 -- cat /run/node-report-native.txt >"$LAB_DIR/report-native.out" || fail "no native report on lab0"
ctl cmd lab0 -- cat /run/node-report-ansible.txt >"$LAB_DIR/report-ansible.out" || fail "no report from ansible-playbook on lab0"
diff "$LAB_DIR/report-native.out" "$LAB_DIR/report-ansible.out" >&2 ||
  fail "the facts the native runner derived differ from the ones Ansible gathered on lab0"
grep -q "^os_family=Debian$" "$LAB_DIR/report-native.out" || { cat "$LAB_DIR/report-native.out"; fail "no os_family in the report"; }
say "lab0 ready through a playbook under ansible-playbook; its facts as Ansible gathers them match the native runner's: $(tr '\n' ' ' <"$LAB_DIR/report-native.out")"
ctl cmd lab0 --user compute -- id -un >"$LAB_DIR/cmd0.out" || { cat "$LAB_DIR/cmd0.out"; fail "cmd as compute failed"; }
grep -qx "compute" "$LAB_DIR/cmd0.out" || { cat "$LAB_DIR/cmd0.out"; fail "cmd on lab0 did not run as compute"; }
ctl cmd lab0 -- hello >"$LAB_DIR/hello0.out" || { cat "$LAB_DIR/hello0.out"; fail "hello (baked into lab0's image) does not run"; }
grep -q "Hello, world" "$LAB_DIR/hello0.out" || { cat "$LAB_DIR/hello0.out"; fail "hello did not greet"; }
say "lab0: configured by its playbooks, cmd runs as compute, hello (baked) greets"
facts="$(node_json lab0)"
for want in '"cpu":{' '"memory_bytes":' "\"mac\":\"$M0\"" '"pci":[{' '"image":"lab.baked@'; do
  grep -qF -- "$want" <<<"$facts" || fail "lab0's facts lack $want: $facts"
done
hostkey="$(field lab0 host_key)"
[ -n "$hostkey" ] || fail "no host key pinned for lab0"
ip0="$(field lab0 ip)"
echo "$ip0 $hostkey" >"$LAB_DIR/known_hosts"
ssh_node() {
  lab_exec ssh -i "$DATA/ssh/id_ed25519" -o UserKnownHostsFile="$LAB_DIR/known_hosts" \
    -o StrictHostKeyChecking=yes -o BatchMode=yes -o ConnectTimeout=20 "root@$1" "${@:2}"
}
ssh_ok() { ssh_node "$1" true; }
wait_for "sshd on lab0" 120 ssh_ok "$ip0"
[ "$(ssh_node "$ip0" findmnt -n -o FSTYPE /)" = overlay ] || fail "/ on lab0 is not an overlay"
[ "$(ssh_node "$ip0" hostname)" = lab0 ] || fail "lab0's hostname is not from its overlay"
ssh_node "$ip0" 'echo written >/root/written-on-node && sync'
ver="$(node_json lab0 | sed -n 's/.*"image":"lab\.baked@\([0-9a-f]*\)".*/\1/p')"
[ -d "$STORE/lab.baked/$ver/root/root" ] || fail "no image root at $STORE/lab.baked/$ver/root"
[ ! -e "$STORE/lab.baked/$ver/root/root/written-on-node" ] || fail "a file written on lab0 reached the export"
say "lab0: / is an overlay, hostname from its overlay, a write stays on the node (host key pinned, SSH with the control key)"

# 1d. lab0's volumes, made at its first boot.
# py NODE EXPRESSION: a Python expression over the node's JSON (n), printed.
py() { node_json "$1" | python3 -c "import json, sys; n = json.load(sys.stdin); print($2)"; }
storage_of() { py "$1" 'json.dumps(n["facts"].get("storage"))'; }
volume() {  # volume NODE NAME FIELD: from the node's facts ("" when absent)
  py "$1" "next((v.get('$3', '') for v in n['facts'].get('storage', {}).get('volumes', []) if v['name'] == '$2'), '')"
}
[ "$(volume lab0 scratch state)" = created ] || fail "lab0's scratch volume was not made: $(storage_of lab0)"
[ "$(volume lab0 data state)" = created ] || fail "lab0's data volume was not made: $(storage_of lab0)"
uuid0="$(volume lab0 scratch uuid)"
[ -n "$uuid0" ] || fail "lab0's scratch volume has no UUID"
[ "$(py lab0 "sum(1 for d in n['facts']['disks'] if d.get('by_id') == '/dev/disk/by-id/virtio-scratch-1' and d['transport'] == 'virtio')")" = 1 ] ||
  fail "lab0's facts do not list its disks by id: $(py lab0 "json.dumps(n['facts']['disks'])")"
ssh_node "$ip0" 'findmnt -n -o SOURCE,FSTYPE /mnt/scratch' >"$LAB_DIR/scratch.out"
grep -qE '^/dev/md[0-9a-z/_-]* +ext4$' "$LAB_DIR/scratch.out" || { cat "$LAB_DIR/scratch.out"; fail "/mnt/scratch on lab0 is not an ext4 on an md array"; }
ssh_node "$ip0" 'cat /sys/block/md*/md/level' | grep -qx raid0 || fail "lab0's array is not a RAID-0"
ssh_node "$ip0" 'findmnt -n /home/compute/.cache >/dev/null && stat -c %U /mnt/scratch/.binds/home/compute/.cache' | grep -qx compute ||
  fail "the compute user's cache is not bound onto /mnt/scratch, owned by compute"
ssh_node "$ip0" 'systemctl show -p ActiveState --value provision-storage.service' | grep -qx active || fail "provision-storage.service is not active on lab0"
ssh_node "$ip0" 'echo kept >/mnt/scratch/kept && sync'
ctl node show lab0 >"$LAB_DIR/show-lab0-disks.out"
grep -q "virtio-scratch-1" "$LAB_DIR/show-lab0-disks.out" || { cat "$LAB_DIR/show-lab0-disks.out"; fail "node show does not list lab0's disks"; }
say "lab0: an md RAID-0 of its two blank disks made at its first boot (ext4, UUID $uuid0) at /mnt/scratch with the compute user's cache bound onto it, and its data disk at /srv/data"

# 1b. An unprivileged user on lab0 (compute) tries to act as the node: nothing it can read holds
# the node's token or this boot's ticket; every hex string it can read, tried as a token and as
# a ticket for the hello, the overlay and a report, is refused; the boot's ticket is spent (no
# ticket.img to fetch); the pinned key and the facts stay as they were; node why shows refusals.
token0="$(sqlite3 "$DATA/provisiond.db" "select token from nodes where hostname = 'lab0'")"
[ -n "$token0" ] || fail "lab0 has no token"
facts_before="$(sqlite3 "$DATA/provisiond.db" "select facts from nodes where hostname = 'lab0'")"
cat >"$LAB_DIR/attack.sh" <<ATTACK
url=$BOOT_URL mac=$M0 hy=${M0//:/-}
grep -rsF -l -e "$token0" /proc/cmdline /etc /run/provision/rw /run/user /tmp /var/tmp /home /var/log && echo "LEAK: the token is readable"
grep -q -e token= -e ticket= /proc/cmdline && echo "LEAK: the command line names a credential"
echo "ticket.img \$(curl -s -o /dev/null -w '%{http_code}' "\$url/boot/\$hy/ticket.img")"
cands="\$({ cat /proc/cmdline; cat /etc/provision/* /run/provision/* /etc/machine-id; env; } 2>/dev/null |
  grep -oE '[0-9a-f]{16,}' | sort -u) made-up-0123456789abcdef"
for c in \$cands; do
  key='{"ssh_host_key":"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIattacker compute"}'
  echo "hello-token \$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer \$c" -d "\$key" "\$url/api/v1/nodes/\$mac/hello")"
  echo "hello-ticket \$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "X-Provision-Ticket: \$c" -d "\$key" "\$url/api/v1/nodes/\$mac/hello")"
  echo "overlay \$(curl -s -o /dev/null -w '%{http_code}' "\$url/boot/\$hy/overlay.tar?ticket=\$c")"
  echo "report \$(curl -s -o /dev/null -w '%{http_code}' -X POST -d "{\\"ticket\\":\\"\$c\\",\\"stage\\":\\"x\\",\\"error\\":\\"y\\"}" "\$url/api/v1/nodes/\$mac/report")"
done
ATTACK
ssh_node "$ip0" "cat >/tmp/attack.sh && chmod 0755 /tmp/attack.sh" <"$LAB_DIR/attack.sh"
ctl cmd lab0 --user compute -- sh /tmp/attack.sh >"$LAB_DIR/attack.out" 2>&1 || true
cat "$LAB_DIR/attack.out"
grep -q LEAK "$LAB_DIR/attack.out" && fail "lab0 leaks a credential to its users: $(grep LEAK "$LAB_DIR/attack.out")"
grep -q "^ticket.img 404" "$LAB_DIR/attack.out" || fail "the boot's ticket was not spent by its hello (ticket.img answered)"
tries="$(grep -cE '^(hello-token|hello-ticket|overlay|report) ' "$LAB_DIR/attack.out")" || true
[ "${tries:-0}" -ge 4 ] || fail "the attack tried too little ($tries requests)"
grep -E '^(hello-token|hello-ticket|overlay|report) ' "$LAB_DIR/attack.out" | grep -vE ' 40[34]$' &&
  fail "a request of lab0's compute user was not refused"
[ "$(field lab0 host_key)" = "$hostkey" ] || fail "the pinned host key of lab0 changed"
[ "$(sqlite3 "$DATA/provisiond.db" "select facts from nodes where hostname = 'lab0'")" = "$facts_before" ] ||
  fail "lab0's facts changed"
ctl node why lab0 >"$LAB_DIR/why-attack.out"
grep -q "phone-home from .*: it needs that node's own token" "$LAB_DIR/why-attack.out" || { cat "$LAB_DIR/why-attack.out"; fail "node why does not show the refusals"; }
say "lab0's compute user cannot act as the node: $tries requests with what it can read refused, the ticket spent, key and facts unchanged"

# Where a node's time went: its boot timeline, its runs and the tasks of its
# latest configure run (for the log only).
time_spent() {
  ctl node why "$1" || true
  ctl run list --node "$1" >"$LAB_DIR/runs-$1.out" || true
  cat "$LAB_DIR/runs-$1.out"
  local last
  last="$(awk -v n="$1" '$2 == n && $3 == "configure" && $1 > m {m = $1} END {print m}' "$LAB_DIR/runs-$1.out")"
  [ -z "$last" ] || ctl run show "$last" || true
}
time_spent lab0

# 2. lab0 off, a GPT written on its data disk (another system's disk put in):
# its next boot assembles and mounts its RAID-0 as it was and leaves the data
# disk alone: failed, the disk named.
ctl node power off lab0 >/dev/null
printf 'EFI PART' | dd of="$LAB_DIR/lab0-data-1.img" bs=1 seek=512 conv=notrunc status=none
before="$(hellos lab0)"
ctl node power on lab0 >/dev/null
wait_for "lab0 to phone home with the foreign disk" "$TIMEOUT" more_hellos lab0 "$before"
wait_for "lab0 to be failed for its data disk" 60 state_is lab0 failed
reason="$(field lab0 reason)"
case "$reason" in
  *"storage: volume data: disk /dev/disk/by-id/virtio-data-1"*"holds gpt"*"node storage wipe"*) ;;
  *) fail "lab0's reason does not name its data disk and the wipe: $reason" ;;
esac
[ "$(volume lab0 scratch state)" = mounted ] || fail "lab0's RAID-0 was not assembled and mounted as it was: $(storage_of lab0)"
[ "$(volume lab0 scratch uuid)" = "$uuid0" ] || fail "lab0's scratch volume was formatted again (UUID $uuid0 -> $(volume lab0 scratch uuid))"
echo "$ip0 $(field lab0 host_key)" >"$LAB_DIR/known_hosts"
wait_for "sshd on the failed lab0" 120 ssh_ok "$ip0"
[ "$(ssh_node "$ip0" cat /mnt/scratch/kept)" = kept ] || fail "the file on lab0's RAID-0 did not survive its reboot"
[ "$(sqlite3 "$LAB_DIR/data/provisiond.db" "select count(*) from events where node = 'lab0' and kind = 'storage'")" = 0 ] ||
  fail "a storage event before any wipe was allowed"
say "lab0 rebooted with a partition table on its data disk: RAID-0 assembled and mounted as it was (UUID $uuid0, the file there), failed with: $reason"
ctl node storage wipe lab0 --disk virtio-data-1 --yes >"$LAB_DIR/wipe.out" || { cat "$LAB_DIR/wipe.out"; fail "node storage wipe failed"; }
ctl events --node lab0 --limit 100 >"$LAB_DIR/wipe-events.out"
grep -q "wipe allowed at its next boot: /dev/disk/by-id/virtio-data-1" "$LAB_DIR/wipe-events.out" || { cat "$LAB_DIR/wipe-events.out"; fail "no event for the wipe"; }

# Power cycle lab0: the write on / is gone, the data disk wiped and made
# again, and the node phoned home again; lab1 stays ready and answers
# meanwhile.
before="$(hellos lab0)"
# With the lab's repository stopped: a node of the baked image needs none.
kill "$LAB_REPO_PID" && wait "$LAB_REPO_PID" 2>/dev/null || true
ctl node power cycle lab0 >/dev/null
# noroot0 (section 4 below) boots meanwhile: its initrd fails while lab0
# boots and is configured again.
ctl node add noroot0 --mac 52:54:00:97:00:14 --profile noroot --power command >/dev/null
ctl node power on noroot0 >/dev/null
ctl cmd lab1 --user compute -- hello >"$LAB_DIR/hello1.out" || { cat "$LAB_DIR/hello1.out"; fail "cmd on lab1 failed while lab0 rebooted"; }
grep -q "Hello, world" "$LAB_DIR/hello1.out" || { cat "$LAB_DIR/hello1.out"; fail "hello on lab1 did not greet"; }
wait_for "lab0 to phone home again" "$TIMEOUT" more_hellos lab0 "$before"
wait_ready lab0
state_is lab1 ready || fail "lab1 left ready while lab0 rebooted: $(field lab1 state)"
echo "$ip0 $(field lab0 host_key)" >"$LAB_DIR/known_hosts"
wait_for "sshd on lab0 again" 120 ssh_ok "$ip0"
ssh_node "$ip0" 'test ! -e /root/written-on-node' || fail "the file written before the power cycle survived"
[ "$(volume lab0 data state)" = created ] || fail "lab0's data disk was not made again after the wipe: $(storage_of lab0)"
[ "$(volume lab0 data wiped)" = "['/dev/disk/by-id/virtio-data-1']" ] ||
  fail "lab0's data disk was not reported wiped: $(storage_of lab0)"
[ "$(volume lab0 scratch uuid)" = "$uuid0" ] || fail "lab0's scratch volume was formatted again by the wipe of another disk"
[ "$(ssh_node "$ip0" cat /mnt/scratch/kept)" = kept ] || fail "the file on lab0's RAID-0 did not survive the second reboot"
[ "$(py lab0 "n['storage_wipe']")" = "[]" ] || fail "the wipe was not spent by the boot that used it"
ctl cmd lab0 --user compute -- id -un >"$LAB_DIR/cmd0b.out" || { cat "$LAB_DIR/cmd0b.out"; fail "cmd after the power cycle failed"; }
say "lab0 power-cycled with the lab's apt repository stopped: the file written before is gone, configured again to ready ($(lab_vm_elapsed lab0)s after the power cycle, $(hello_to_ready lab0) s after its phone-home); lab1 stayed ready and answered"
time_spent lab0
ctl node power off 'lab[0-1]' >/dev/null

# 4. A machine whose initrd cannot mount its root: its failing line, from the
# network console, in node why (powered on with lab0's power cycle above).
why_quotes_mount() {
  ctl node why noroot0 >"$LAB_DIR/why-noroot0.out" 2>&1 &&
    grep -q "provision: ERROR mount-nfs" "$LAB_DIR/why-noroot0.out"
}
wait_for "node why noroot0 to quote the initrd's failing line" "$TIMEOUT" why_quotes_mount
grep -q "its console, boot 1, last lines:" "$LAB_DIR/why-noroot0.out" ||
  { cat "$LAB_DIR/why-noroot0.out"; fail "node why does not show noroot0's console"; }
ctl node power off noroot0 >/dev/null
say "noroot0 cannot mount its root: node why quotes it: $(grep -m1 'ERROR mount-nfs' "$LAB_DIR/why-noroot0.out" | cut -c1-160)"

# 3. node why: an export that cannot be read; a phone-home with a wrong token.
bad="$STORE/broken/0000000000000001"
mkdir -p "$bad/root"
cp "$STORE/lab.baked/$ver/vmlinuz" "$STORE/lab.baked/$ver/initrd.img" "$bad/"
echo '{"name":"broken","version":"0000000000000001","created":0}' >"$bad/image.json"
echo 0000000000000001 >"$STORE/broken/current"
ctl node add bad0 --mac 52:54:00:97:00:13 --profile broken >/dev/null
lab_exec curl -sf "$BOOT_URL/boot/52-54-00-97-00-13.ipxe" >"$LAB_DIR/lab3.ipxe"
grep -q "cannot be read over NFS" "$LAB_DIR/lab3.ipxe" || fail "bad0's script does not say the export cannot be read"
ctl node why bad0 >"$LAB_DIR/why3.out"
grep -q "cannot be read over NFS" "$LAB_DIR/why3.out" || { cat "$LAB_DIR/why3.out"; fail "node why does not name the unreadable export"; }
code="$(lab_exec curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Authorization: Bearer not-its-token' \
  "$BOOT_URL/api/v1/nodes/lab0/hello" -d '{}')"
[ "$code" = 403 ] || fail "a hello with a wrong token got $code, not 403"
ctl node why lab0 >"$LAB_DIR/why0.out"
grep -q "wrong token" "$LAB_DIR/why0.out" || { cat "$LAB_DIR/why0.out"; fail "node why does not name the wrong token"; }
say "node why names the unreadable export (bad0) and the wrong-token phone-home (lab0)"
rm -rf "$STORE/broken"
say "all image boot lab checks passed"
