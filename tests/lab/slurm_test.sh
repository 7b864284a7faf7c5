#!/usr/bin/env bash
# Lab test of seed 003's cluster (and seed 002's tools) on real machines: three
# QEMU nodes under the lab-slurm profile reach `ready` with no mirror in
# reach, with the playbooks nvidia-slurm ships. As seed 003's node0, the
# controller slurm0 keeps its own OS: it boots Debian from its own virtual
# disk (the tree mmdebstrap made for the lab image, with the bake's packages:
# tests/lab/installed-disk.sh), never netboots, and is adopted over SSH
# (`node adopt`: the host key it shows, then pinned; its owner's one-time
# password puts provisiond's key in place through sudo, and is kept nowhere),
# so its profile's bake playbooks (at image stage) and then its node stage run
# on it. slurm1-2 netboot the profile's
# derived image (the lab image, into which the profile's bake playbooks
# installed Debian's slurm-wlm, munge, python3-torch and a DKMS module at
# image stage; the base's manifest lists none of them):
#   0. the image stage: the nodes boot lab.baked (`profile plan` says
#      "image reused"); a node-stage playbook's edit keeps it, a bake
#      playbook's edit rebuilds it (plan); the DKMS module built for the
#      image's kernel is loaded on every node (vermagic = uname -r); the RAM
#      the overlay holds on a ready node
#   1. the MUNGE key and the cluster key pair come from the secrets store
#      (made once, never in run output or events); slurm0 runs slurmctld,
#      all three slurmd; a job runs on all three; as the compute user, slurm0
#      reaches slurm2 over SSH (`ssh slurm2 hostname`)
#   2. three independent jobs run at once, one on each node
#   3. one PyTorch DDP job across all three (srun + torchrun, gloo): every
#      rank ends with the same weights (the profile's torch-ddp.yml gate; its
#      output is the configure run's)
#   4. the health gate: a failing check on slurm1 (its scratch space filled)
#      drains it in Slurm with the check as the reason; when it passes again
#      slurm1 is resumed; the checks' log and status are on each node and
#      `provisionctl gather` brings the status files home
#   5. the installed controller's state survives its reboot: a held job is
#      queued, slurm0 reboots itself (systemctl reboot, no boot request to
#      provisiond), its heartbeat sees another boot id, it is configured
#      again to ready (its node stage: the image stage is on its disk), and
#      squeue still has the job
# Usage: slurm_test.sh PROVISIOND PROVISIONCTL   (root)
set -euo pipefail
PROVISIOND="$(realpath "$1")"
PROVISIONCTL="$(realpath "$2")"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
TIMEOUT="${LAB_TIMEOUT:-1200}"
# PyTorch's import and a DDP job need more than the lab's default 512 MiB.
export LAB_VM_MEM="${LAB_VM_MEM:-1536}"
dump() {
  [ -n "${LAB_DIR:-}" ] || return 0
  lab_dump 25 "$LAB_DIR"/provisiond.log "$LAB_DIR"/*.serial
}
source "$HERE/lab-test.sh"
[ "$(id -u)" -eq 0 ] || fail "run as root (network namespaces, taps)"

source "$HERE/lab.sh"
source "$HERE/lab-image.sh"
lab_init slurm
DATA="$LAB_DIR/data"
t="${EPOCHREALTIME//[!0-9]/}"
STORE="$(lab_image_store "$PROVISIOND" "$PROVISIONCTL" "$REPO/profiles" lab lab-slurm)" ||
  fail "the lab image or lab-slurm's derived image was not built"
say "lab image and lab-slurm's derived image ready in $STORE ($(((${EPOCHREALTIME//[!0-9]/} - t) / 1000000)) s)"
# The profiles and playbooks as copies: step 0 edits them.
cp -a "$REPO/profiles" "$REPO/playbooks" "$LAB_DIR/"
lab_config "$LAB_DIR/profiles" "$STORE" >"$LAB_DIR/provisiond.yaml"
# The installed machine's heartbeat every 5 s (default 30): its reboot is seen sooner.
printf 'configure:\n  heartbeat: 5\n' >>"$LAB_DIR/provisiond.yaml"
sed -i "s|^playbooks_dir: .*|playbooks_dir: $LAB_DIR/playbooks|" "$LAB_DIR/provisiond.yaml"
lab_spawn provisiond "$PROVISIOND" --config "$LAB_DIR/provisiond.yaml"
wait_for "provisiond's URL file" 30 test -s "$DATA/provisiond.url"
export PROVISIOND_URL="http://127.0.0.1:8080"
export PROVISIOND_TOKEN="$(awk '!/^#/ && NF {print $1; exit}' "$DATA/tokens")"
wait_for "dnsmasq" 20 lab_wait_port udp 67 1
wait_for "the NFS server" 20 lab_wait_port tcp 2049 1
ctl profile apply lab-slurm --yes >"$LAB_DIR/apply.out" || { cat "$LAB_DIR/apply.out"; fail "profile apply lab-slurm failed"; }
ctl profile plan lab-slurm >"$LAB_DIR/plan.out"
# lab.baked has a version per bake list (the lab profile's, lab-slurm's):
# the plan names lab-slurm's.
baked="$(grep -o '^image reused: lab\.baked@[0-9a-f]*' "$LAB_DIR/plan.out" | cut -d' ' -f3)" || true
[ -n "$baked" ] || { cat "$LAB_DIR/plan.out"; fail "profile plan does not say lab-slurm's derived image is reused"; }

# 1. slurm1-2 netboot; slurm0 boots its own disk and is adopted; all three reach ready through
# the Slurm playbooks (the netbooted ones wait for slurm0: wait_for_peers).
ctl node add slurm0 --mac 52:54:00:98:00:10 --ip 10.99.0.50 --power command >/dev/null
for i in 1 2; do
  ctl node add "slurm$i" --mac "52:54:00:98:00:1$i" --power command >/dev/null
done
ctl node power on 'slurm[1-2]' >/dev/null
# slurm0's disk, while they boot: the baked tree, as the machine's owner installed it, with its
# own address, no key in root's authorized_keys, and the owner's account (sudo, a password).
t="${EPOCHREALTIME//[!0-9]/}"
password="lab-$(od -An -tx1 -N12 /dev/urandom | tr -d ' \n')"
(umask 077 && echo "$password" >"$LAB_DIR/owner.password")
bash "$HERE/installed-disk.sh" "$STORE/${baked%@*}/${baked#*@}/root" "$LAB_DIR" slurm0 10.99.0.50/24 \
  - "owner:$LAB_DIR/owner.password" 2>"$LAB_DIR/installed-disk.log" ||
  { cat "$LAB_DIR/installed-disk.log"; fail "could not make slurm0's disk"; }
echo "slurm0 disk" >>"$LAB_DIR/firmware"
say "slurm0's own disk made in $(((${EPOCHREALTIME//[!0-9]/} - t) / 1000000)) s: $(du -h --apparent-size "$LAB_DIR/slurm0.root.img" | cut -f1) ext4 ($(du -h "$LAB_DIR/slurm0.root.img" | cut -f1) used), its own initramfs-tools initrd"
ctl node power on slurm0 >/dev/null
# Adopting: first the key the machine shows (exit 2: no one confirmed it), which must be the one
# its disk holds; then adopted with that key confirmed and the owner's password (on stdin, as
# when provisionctl is not on a terminal).
host_key="$(cut -d' ' -f1-2 "$LAB_DIR/slurm0.ssh_host_ed25519_key.pub")"
slurm0_shows_its_key() {
  local rc=0
  ctl node adopt slurm0 >"$LAB_DIR/adopt-probe.out" 2>&1 || rc=$?
  [ "$rc" -eq 2 ] && grep -qF -- "$host_key" "$LAB_DIR/adopt-probe.out"
}
wait_for "slurm0's own OS to answer SSH with its host key" 600 slurm0_shows_its_key
say "slurm0 booted its own disk, $(lab_vm_elapsed slurm0) s after power-on; it shows $(grep -o 'SHA256:[^ ]*' "$LAB_DIR/adopt-probe.out")"
if ctl node adopt slurm0 --host-key "$host_key" >"$LAB_DIR/adopt-nokey.out" 2>&1 </dev/null; then
  fail "slurm0 was adopted without its control key in place or a password"
fi
grep -q "refused the control key" "$LAB_DIR/adopt-nokey.out" || { cat "$LAB_DIR/adopt-nokey.out"; fail "adopt without the key does not say the machine refused it"; }
echo wrong-password | ctl node adopt slurm0 --host-key "$host_key" --password --user owner >"$LAB_DIR/adopt-badpw.out" 2>&1 &&
  fail "slurm0 was adopted with a wrong password"
grep -q "refused the password" "$LAB_DIR/adopt-badpw.out" || { cat "$LAB_DIR/adopt-badpw.out"; fail "a wrong password is not named as such"; }
echo "$password" | ctl node adopt slurm0 --host-key "$host_key" --password --user owner >"$LAB_DIR/adopt.out" ||
  { cat "$LAB_DIR/adopt.out"; fail "node adopt slurm0 failed"; }
grep -q "slurm0: adopted" "$LAB_DIR/adopt.out" || { cat "$LAB_DIR/adopt.out"; fail "slurm0 was not adopted"; }
wait_ready 'slurm[0-2]'
ctl node show slurm0 >"$LAB_DIR/show-slurm0.out"
grep -q "boots its own OS" "$LAB_DIR/show-slurm0.out" || { cat "$LAB_DIR/show-slurm0.out"; fail "node show does not say slurm0 boots its own OS"; }
# Never netbooted: no boot stage (boot script, kernel, initrd, root) recorded for it.
netboot_events() { sqlite3 "$DATA/provisiond.db" "select count(*) from events where node = 'slurm0' and (stage != '' or who = 'boot')"; }
[ "$(netboot_events)" -eq 0 ] || fail "slurm0 has boot events: it was netbooted"
say "slurm0-2 ready: $(lab_vm_elapsed slurm0)s, $(lab_vm_elapsed slurm1)s, $(lab_vm_elapsed slurm2)s after power-on; slurm0 $(hello_to_ready slurm0) s after its adoption (bake and node stage), slurm1-2 $(hello_to_ready slurm1) s, $(hello_to_ready slurm2) s after their phone-home (when slurm0 had been adopted: wait_for_peers)"
configure_cost slurm0 slurm1 slurm2
# 0. slurm1-2 boot the derived image; its DKMS module, built for the image's kernel, is loaded
# (on slurm0 too: its own disk has it, and the bake playbooks ran on it).
for i in 0 1 2; do
  if [ "$i" -ne 0 ]; then
    ctl node show "slurm$i" >"$LAB_DIR/show-slurm$i.out"
    grep -q "$baked" "$LAB_DIR/show-slurm$i.out" || { cat "$LAB_DIR/show-slurm$i.out"; fail "slurm$i does not boot $baked"; }
  fi
  ctl cmd "slurm$i" -- 'test "$(modinfo -F vermagic v4l2loopback | cut -d" " -f1)" = "$(uname -r)" && grep -q "^v4l2loopback " /proc/modules && uname -r' \
    >"$LAB_DIR/module$i.out" || { cat "$LAB_DIR/module$i.out"; fail "the baked v4l2loopback module is not loaded on slurm$i for its kernel"; }
done
# The RAM the node's overlay (its tmpfs upper layer) holds once it is ready.
ctl cmd slurm1 -- 'echo "overlay_kib=$(df -k --output=used /run/provision/rw | tail -n 1 | tr -d " ")"' >"$LAB_DIR/overlay.out" ||
  { cat "$LAB_DIR/overlay.out"; fail "no overlay tmpfs on slurm1"; }
overlay_kib="$(grep -o 'overlay_kib=[0-9]*' "$LAB_DIR/overlay.out" | cut -d= -f2)"
[ -n "$overlay_kib" ] || { cat "$LAB_DIR/overlay.out"; fail "could not read the overlay's use on slurm1"; }
say "slurm1-2 boot $baked (plan: image reused); v4l2loopback (DKMS, image stage) loaded on all three for kernel $(grep -o '[0-9][^ ]*amd64' "$LAB_DIR/module0.out" | head -1); slurm1's overlay holds $((overlay_kib / 1024)) MiB ($overlay_kib KiB) of RAM"
# A node-stage edit (a playbook's vars) keeps the derived image; an edit to a baked playbook
# rebuilds it. (lab-slurm bakes compute-user.yml on ansible-playbook, which reaches every file of
# the playbooks folder, Ansible's layout: there, any playbook's edit is a baked one.)
cp "$LAB_DIR/profiles/lab-slurm/profile.yaml" "$LAB_DIR/profile.yaml.orig"
sed -i 's/^      torch_ddp_user: compute$/      torch_ddp_user: compute  # edited by the lab test/' "$LAB_DIR/profiles/lab-slurm/profile.yaml"
ctl profile plan lab-slurm >"$LAB_DIR/plan-node.out"
grep -q "changed since" "$LAB_DIR/plan-node.out" || { cat "$LAB_DIR/plan-node.out"; fail "the node-stage edit is not a change of the profile"; }
grep -q "^image reused: $baked " "$LAB_DIR/plan-node.out" || { cat "$LAB_DIR/plan-node.out"; fail "a node-stage edit does not reuse $baked"; }
cp "$LAB_DIR/profile.yaml.orig" "$LAB_DIR/profiles/lab-slurm/profile.yaml"
echo "# edited by the lab test" >>"$LAB_DIR/playbooks/torch-ddp.yml"
ctl profile plan lab-slurm >"$LAB_DIR/plan-image.out"
grep -q "^image rebuilt: playbooks/torch-ddp.yml changed" "$LAB_DIR/plan-image.out" || { cat "$LAB_DIR/plan-image.out"; fail "a bake playbook's edit does not rebuild the image in the plan"; }
cp "$REPO/playbooks/torch-ddp.yml" "$LAB_DIR/playbooks/"
say "plan after a node-stage edit: image reused; after an image-stage edit: $(grep '^image rebuilt' "$LAB_DIR/plan-image.out")"
ctl secret list >"$LAB_DIR/secrets.out"
for s in munge_key cluster_key; do
  grep -qE "^$s +yes " "$LAB_DIR/secrets.out" || { cat "$LAB_DIR/secrets.out"; fail "secret $s is not stored"; }
done
# No secret's value in what provisiond shows: events, every run's output.
munge_b64="$(cat "$DATA/secrets/munge_key")"
[ "${#munge_b64}" -gt 100 ] || fail "no MUNGE key in the secrets store"
ctl events --limit 100000 >"$LAB_DIR/all-events.out"
ctl run list >"$LAB_DIR/runs.out"
: >"$LAB_DIR/all-runs.out"
for id in $(awk 'NR > 1 {print $1}' "$LAB_DIR/runs.out"); do ctl run show "$id" >>"$LAB_DIR/all-runs.out"; done
for id in $(awk 'NR > 1 {print $1}' "$LAB_DIR/runs.out"); do ctl run logs "$id" >>"$LAB_DIR/all-runs.out"; done
for f in "$LAB_DIR/all-events.out" "$LAB_DIR/all-runs.out"; do
  grep -qF -- "${munge_b64:0:40}" "$f" && fail "the MUNGE key appears in $(basename "$f")"
  grep -q "PRIVATE KEY" "$f" && fail "the cluster's private key appears in $(basename "$f")"
done
# slurm0's one-time password: nowhere in what provisiond keeps or shows.
for f in "$LAB_DIR/all-events.out" "$LAB_DIR/all-runs.out" "$LAB_DIR/provisiond.log" "$DATA"/provisiond.db*; do
  grep -qaF -- "$password" "$f" && fail "slurm0's one-time password appears in $(basename "$f")"
done
grep -q "control key installed over SSH with a one-time password (as owner)" "$LAB_DIR/all-events.out" ||
  fail "no event says slurm0's control key was installed with a password"
ctl cmd slurm0 -- 'systemctl is-active slurmctld; systemctl is-active slurmd' >"$LAB_DIR/daemons.out" ||
  { cat "$LAB_DIR/daemons.out"; fail "slurmctld or slurmd is not active on slurm0"; }
for i in 1 2; do
  ctl cmd "slurm$i" -- systemctl is-active slurmd >/dev/null || fail "slurmd is not active on slurm$i"
done
idle_nodes() {
  ctl cmd slurm0 -- sinfo -h -N -o '%N|%t' >"$LAB_DIR/sinfo.out" || return 1
  [ "$(grep -cxE 'slurm[0-2]\|idle' "$LAB_DIR/sinfo.out")" -eq 3 ]
}
wait_for "sinfo to show three idle nodes" 120 idle_nodes
ctl cmd slurm0 --user compute -- srun -N3 hostname >"$LAB_DIR/srun.out" || { cat "$LAB_DIR/srun.out"; fail "srun -N3 failed"; }
for i in 0 1 2; do grep -qx "slurm$i" "$LAB_DIR/srun.out" || { cat "$LAB_DIR/srun.out"; fail "srun -N3 did not run on slurm$i"; }; done
ctl cmd slurm0 --user compute -- ssh slurm2 hostname >"$LAB_DIR/ssh.out" || { cat "$LAB_DIR/ssh.out"; fail "ssh slurm2 hostname failed from slurm0"; }
grep -qx "slurm2" "$LAB_DIR/ssh.out" || { cat "$LAB_DIR/ssh.out"; fail "ssh slurm2 hostname did not answer slurm2"; }
say "secrets made once and never shown; slurmctld on slurm0, slurmd on all, sinfo: three idle; srun -N3 answers from all three; compute on slurm0 runs 'ssh slurm2 hostname'"

# 2. Three independent jobs at once, one per node.
ctl cmd slurm0 --user compute -- \
  'for i in 1 2 3; do sbatch --parsable -N1 --exclusive -o /dev/null --wrap "sleep 600"; done' >"$LAB_DIR/sbatch.out" ||
  { cat "$LAB_DIR/sbatch.out"; fail "sbatch failed"; }
three_running() {
  ctl cmd slurm0 -- squeue -h -t R -o %N >"$LAB_DIR/squeue.out" || return 1
  [ "$(grep -xE 'slurm[0-2]' "$LAB_DIR/squeue.out" | sort -u | wc -l)" -eq 3 ]
}
wait_for "three jobs running at once on slurm0-2" 120 three_running
ctl cmd slurm0 -- scancel -u compute >/dev/null
say "three independent jobs ran at once, one on each node: $(grep -xE 'slurm[0-2]' "$LAB_DIR/squeue.out" | sort | tr '\n' ' ')"

# 3. The DDP job of the profile's gate: slurm0's configure run has every rank's line.
run0="$(awk '$2 == "slurm0" && $3 == "configure" {print $1; exit}' "$LAB_DIR/runs.out")"
[ -n "$run0" ] || fail "slurm0 has no configure run"
ctl run logs "$run0" >"$LAB_DIR/run0.logs"
for i in 0 1 2; do
  grep -q "rank [0-2]/3 on slurm$i backend gloo: loss .* weights identical on all ranks" "$LAB_DIR/run0.logs" ||
    { grep -i -A8 "DDP job" "$LAB_DIR/run0.logs" | head -30; fail "no DDP rank on slurm$i reported identical weights"; }
done
say "PyTorch DDP across slurm0-2 (srun + torchrun, gloo) in slurm0's configure run: $(grep -o "rank 0/3 on [a-z0-9]* backend gloo: loss [0-9.]* -> [0-9.]*" "$LAB_DIR/run0.logs" | head -1)"

# 4. The health gate: slurm1's scratch space filled fails a check; it is drained with the check as
# the reason; freed, it passes and is resumed.
ctl cmd slurm1 -- 'fallocate -l $(( ($(df -Pk /tmp | awk "NR == 2 {print \$4}") - 65536) * 1024 )) /tmp/fill' >/dev/null ||
  fail "could not fill slurm1's /tmp"
if ctl node check slurm1 >"$LAB_DIR/check1.out" 2>&1; then cat "$LAB_DIR/check1.out"; fail "node check passed with slurm1's scratch space full"; fi
grep -q "scratch-space" "$LAB_DIR/check1.out" || { cat "$LAB_DIR/check1.out"; fail "node check does not name the failing check"; }
# sinfo's %t|%E: slurm1's state and the reason of its drain.
slurm1_is() {
  ctl cmd slurm0 -- sinfo -h -N -n slurm1 -o '%t|%E' >"$LAB_DIR/sinfo1.out" &&
    grep -qE "$1" "$LAB_DIR/sinfo1.out"
}
slurm1_is '^drain\*?\|provisiond health: scratch-space' ||
  { cat "$LAB_DIR/sinfo1.out"; ctl events --node slurm1 | tail -5; fail "slurm1 was not drained with the failing check as the reason"; }
say "slurm1 drained in Slurm: $(grep '|' "$LAB_DIR/sinfo1.out")"
ctl cmd slurm1 -- rm -f /tmp/fill >/dev/null
ctl node check slurm1 >"$LAB_DIR/check1b.out" 2>&1 || { cat "$LAB_DIR/check1b.out"; fail "node check failed after /tmp was freed"; }
has_event slurm1 "hook: resumed slurm1" || fail "no health event says slurm1 was resumed"
slurm1_is '^idle\*?\|none$' || { cat "$LAB_DIR/sinfo1.out"; fail "slurm1 was not resumed when its checks passed"; }
# Resumed, it takes jobs again (once slurmctld hears from its slurmd: at most a ping interval).
ctl cmd slurm0 --user compute --timeout 300 -- timeout 280 srun -w slurm1 hostname >"$LAB_DIR/srun1.out" ||
  { cat "$LAB_DIR/srun1.out"; fail "a job on slurm1 did not run after it was resumed"; }
grep -qx slurm1 "$LAB_DIR/srun1.out" || { cat "$LAB_DIR/srun1.out"; fail "the job on slurm1 did not answer"; }
ctl gather 'slurm[0-2]' /var/log/provision-health.log.status "$LAB_DIR/gathered" >"$LAB_DIR/gather.out" ||
  { cat "$LAB_DIR/gather.out"; fail "gather of the health status failed"; }
for i in 0 1 2; do
  [ "$(cat "$LAB_DIR/gathered/slurm$i/provision-health.log.status")" = ok ] || fail "slurm$i's health status is not ok"
done
ctl cmd slurm2 -- touch /run/only-on-slurm2 >/dev/null
if ctl gather 'slurm[0-2]' /run/only-on-slurm2 "$LAB_DIR/gathered2" >"$LAB_DIR/gather2.out" 2>&1; then
  cat "$LAB_DIR/gather2.out"; fail "gather of a file two nodes lack exited 0"
fi
grep -q "slurm0" "$LAB_DIR/gather2.out" && grep -q "slurm1" "$LAB_DIR/gather2.out" ||
  { cat "$LAB_DIR/gather2.out"; fail "gather does not name the nodes that lack the file"; }
[ -f "$LAB_DIR/gathered2/slurm2/only-on-slurm2" ] || fail "gather did not bring slurm2's file"
ctl node show slurm1 >"$LAB_DIR/show1.out"
grep -q "scratch-space ok" "$LAB_DIR/show1.out" || { cat "$LAB_DIR/show1.out"; fail "node show has no health of slurm1"; }
say "slurm1 resumed when its checks passed; every node's health status gathered: ok; gather names the nodes that lack a file"
# 5. The installed controller keeps its state across its own reboot, which its heartbeat sees.
ctl cmd slurm0 --user compute -- sbatch --parsable --hold -J kept -o /dev/null --wrap true >"$LAB_DIR/held.out" ||
  { cat "$LAB_DIR/held.out"; fail "sbatch --hold failed"; }
job="$(grep -xE '[0-9]+' "$LAB_DIR/held.out" | tail -1)"
[ -n "$job" ] || { cat "$LAB_DIR/held.out"; fail "sbatch printed no job id"; }
ctl cmd slurm0 -- cat /proc/sys/kernel/random/boot_id >"$LAB_DIR/boot-before.out"
boot_before="$(grep -xE '[0-9a-f-]{36}' "$LAB_DIR/boot-before.out")" || fail "no boot id from slurm0"
# The machine reboots itself (as its owner would): provisiond is asked for nothing.
ctl cmd slurm0 -- systemd-run --on-active=2 --timer-property=AccuracySec=100ms systemctl reboot >/dev/null
wait_for "slurm0's heartbeat to see its reboot" 600 has_event slurm0 "rebooted (boot ${boot_before:0:8} → .*), seen by its heartbeat"
say "slurm0 rebooted itself $(lab_vm_elapsed slurm0) s after its power-on; its heartbeat saw it: $(grep -o 'rebooted (boot [^)]*)' "$LAB_DIR/events.out" | tail -1)"
wait_ready slurm0 600
ctl cmd slurm0 -- squeue -h -j "$job" -o '%i|%j|%T|%r' >"$LAB_DIR/squeue-after.out" ||
  { cat "$LAB_DIR/squeue-after.out"; fail "squeue failed on slurm0 after its reboot"; }
grep -qx "$job|kept|PENDING|JobHeldUser" "$LAB_DIR/squeue-after.out" ||
  { cat "$LAB_DIR/squeue-after.out"; fail "job $job was not in slurm0's queue after its reboot"; }
[ "$(netboot_events)" -eq 0 ] || fail "slurm0 asked provisiond for its boot when it rebooted"
grep -q "slurm0: its image stage ([0-9a-f]*) ran already; node stage only" "$LAB_DIR/provisiond.log" ||
  fail "slurm0's image stage ran again after its reboot"
say "slurm0 ready again $(hello_to_ready slurm0) s after its heartbeat saw the reboot (node stage only: its image stage ran already); squeue after its reboot: $(grep -x "$job|kept|PENDING|JobHeldUser" "$LAB_DIR/squeue-after.out")"
ctl node power off 'slurm[0-2]' >/dev/null
say "all Slurm lab checks passed"
