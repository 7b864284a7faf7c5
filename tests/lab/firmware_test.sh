#!/usr/bin/env bash
# Lab test of the boot on real firmware: the signed boot chain under Secure
# Boot, NICs other than virtio, a machine with two NICs.
#   1. a UEFI machine with Secure Boot enforced (OVMF's Secure Boot build with
#      Microsoft's keys, as Debian's ovmf ships it) netboots through shim
#      (signed by Microsoft's UEFI CA) -> grub and the kernel (signed by
#      Debian), all by TFTP, to `ready`; its facts say Secure Boot was on;
#      the boot stages name shim, grub and its config
#   2. at the same time, a BIOS machine with two NICs (an e1000e it does not
#      boot from, then an rtl8139 it boots from) is served and configured as
#      one node by the MAC of the port that booted; the initrd brings up that
#      port with its driver (loaded by modalias from every NIC driver in the
#      initrd); its facts list both NICs. It boots the lab's container image
#      to `ready` with the lab-oci profile: lab-oci.baked, the compute user
#      baked on lab-oci (imported by lab.build_image_oci: a Debian minbase OCI
#      archive with its kernel, systemd and sshd installed on top)
#   2b. at the same time, a UEFI machine whose firmware has PXE turned off
#      boots by UEFI HTTP boot: DHCP answers its HTTPClient request with
#      iPXE's URL, and it reaches `ready` without any file by TFTP
#   4. a hung machine comes back (its profile's recovery): nic0, moved to a
#      profile with `recovery:` and powered by a Tasmota plug stand-in
#      (plug.py), is frozen (QEMU's monitor: stop); the heartbeat finds it
#      silent, power-cycles it through the plug (an event node why shows),
#      and it netboots back to `ready`; frozen again, with
#      its one cycle an hour spent, it is `failed` with the reason, not cycled
#   3. per node, while provisiond runs: the Secure Boot machine given the
#      unsigned iPXE (node set --uefi-loader ipxe) is refused by its firmware,
#      and node why says where it stopped; at the same time a UEFI machine with
#      Secure Boot off, enrolled with --uefi-loader ipxe, loads iPXE by its
#      firmware's own PXE (its directory of the TFTP root), and iPXE loads its
#      script, kernel and initrd
# The machines get the lab-boot profile (the lab image, the compute user's
# playbook), nic0 its copy on the container image: lab.images runs the lab
# profile's packages and services.
# The image store is cached between runs (tests/lab/lab-image.sh).
# Usage: firmware_test.sh PROVISIOND PROVISIONCTL   (root)
set -euo pipefail
PROVISIOND="$(realpath "$1")"
PROVISIONCTL="$(realpath "$2")"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
TOOLS="$(dirname "$PROVISIOND")"
TIMEOUT="${LAB_TIMEOUT:-480}"
dump() {
  [ -n "${LAB_DIR:-}" ] || return 0
  lab_dump 30 "$LAB_DIR"/provisiond.log "$LAB_DIR"/data/netboot/dnsmasq.log "$LAB_DIR"/*.serial
}
source "$HERE/lab-test.sh"
start_provisiond() {
  lab_spawn provisiond "$PROVISIOND" --config "$LAB_DIR/provisiond.yaml"
  echo "$LAB_LAST_PID" >"$LAB_DIR/provisiond.pid"
  wait_for "provisiond's URL file" 30 test -s "$DATA/provisiond.url"
  wait_for "dnsmasq" 20 lab_wait_port udp 67 1
  wait_for "the NFS server" 20 lab_wait_port tcp 2049 1
}

[ "$(id -u)" -eq 0 ] || fail "run as root (network namespaces, taps)"
for f in /usr/lib/shim/shimx64.efi.signed /usr/lib/grub/x86_64-efi-signed/grubnetx64.efi.signed \
  /usr/share/OVMF/OVMF_CODE_4M.secboot.fd /usr/share/OVMF/OVMF_VARS_4M.ms.fd; do
  [ -r "$f" ] || fail "missing $f (tests/lab/packages.txt: shim-signed, grub-efi-amd64-signed, ovmf)"
done

source "$HERE/lab.sh"
source "$HERE/lab-image.sh"
lab_init firmware
lab_start_repo || fail "the lab apt repository did not start"
DATA="$LAB_DIR/data"
t="${EPOCHREALTIME//[!0-9]/}"
STORE="$(lab_image_store "$PROVISIOND" "$PROVISIONCTL" "$REPO/profiles")" || fail "the lab image was not built"
say "lab image ready in $STORE ($(((${EPOCHREALTIME//[!0-9]/} - t) / 1000000)) s): $(cat "$STORE/lab/current")"
[ -s "$STORE/lab-oci.baked/current" ] || fail "no lab-oci.baked image in $STORE (lab.build_image_oci imports and bakes it)"
OCI_VERSION="$(cat "$STORE/lab-oci/current")"
# lab-recover: lab-boot with a recovery policy (step 4).
cp -r "$REPO/profiles" "$LAB_DIR/profiles"
cp -r "$LAB_DIR/profiles/lab-boot" "$LAB_DIR/profiles/lab-recover"
sed -i -e 's/^version: lab-boot$/version: lab-recover/' -e 's/^  pattern: boot\*$/  pattern: recover*/' \
  "$LAB_DIR/profiles/lab-recover/profile.yaml"
printf 'recovery:\n  silent_for: 6\n  cycles: 1\n' >>"$LAB_DIR/profiles/lab-recover/profile.yaml"
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
configure:
  heartbeat: 2
CONF
start_provisiond
# provisionctl runs in the lab's namespace: the API over plain HTTP answers loopback only.
export PROVISIOND_URL="http://127.0.0.1:8080"
export PROVISIOND_TOKEN="$(awk '!/^#/ && NF {print $1; exit}' "$DATA/tokens")"
ctl preflight >"$LAB_DIR/preflight.out" || { cat "$LAB_DIR/preflight.out"; fail "preflight failed"; }
grep -q "shim" "$LAB_DIR/preflight.out" || { cat "$LAB_DIR/preflight.out"; fail "preflight does not check the signed loaders"; }
ctl profile apply lab-boot --yes >/dev/null

# 1 and 2: both machines at once.
SB=52:54:00:96:00:10 NIC_BOOT=52:54:00:96:00:21 NIC_OTHER=52:54:00:96:00:20
ctl node add sb0 --mac "$SB" --profile lab-boot >/dev/null
ctl node add nic0 --mac "$NIC_BOOT" --profile lab-oci >/dev/null
lab_vm_start sb0 "$SB" uefi-sb
LAB_VM_NIC=rtl8139 LAB_VM_OTHER_NIC="e1000e $NIC_OTHER" lab_vm_start nic0 "$NIC_BOOT" bios
HTTP=52:54:00:96:00:30
ctl node add http0 --mac "$HTTP" --profile lab-boot >/dev/null
lab_vm_start http0 "$HTTP" uefi-http
wait_ready sb0
say "sb0 (Secure Boot enforced): ready $(lab_vm_elapsed sb0)s after power-on"
wait_ready nic0
say "nic0 (two NICs, boots from its rtl8139, the container image): ready $(lab_vm_elapsed nic0)s after power-on"

facts="$(ctl node show sb0 --json)"
if ! grep -qF '"secure_boot":true' <<<"$facts"; then
  ctl cmd sb0 -- sh -c 'grep efivar /proc/mounts; od -An -tx1 /sys/firmware/efi/efivars/SecureBoot-*' >&2 || true
  fail "sb0's facts do not say Secure Boot was on: $facts"
fi
grep -qF '"uefi":true' <<<"$facts" || fail "sb0's facts do not say UEFI: $facts"
for stage in "shim: shimx64.efi" "grub: grubx64.efi" "grub-config: $SB.cfg" "kernel: vmlinuz" "initrd: initrd.img" "hello: from"; do
  has_event sb0 "$stage" || fail "sb0 has no '$stage' event"
done
grep -a "Secure Boot\|secureboot: Secure boot enabled" "$LAB_DIR/sb0.serial" >"$LAB_DIR/sb0-kernel.out" || true
ctl node why sb0 >"$LAB_DIR/why-sb0.out"
grep -q "provision.mac=$SB" "$LAB_DIR/why-sb0.out" && ! grep -q "initrd=initrd.img" "$LAB_DIR/why-sb0.out" ||
  { cat "$LAB_DIR/why-sb0.out"; fail "node why does not show grub's kernel command line for sb0"; }
say "sb0: facts say UEFI with Secure Boot on; events shim, grub, grub-config, kernel, initrd (all TFTP), hello; node why shows grub's command line"

wait_ready http0
say "http0 (UEFI HTTP boot, no PXE in its firmware): ready $(lab_vm_elapsed http0)s after power-on"
has_event http0 "ipxe-binary: ipxe.efi" || fail "http0 did not fetch ipxe.efi"
grep -q "vendor class: HTTPClient" "$DATA/netboot/dnsmasq.log" || fail "no DHCP request from an HTTP boot client"
http_ip="$(ctl node show http0 --json | sed -n 's/.*"ip":"\([0-9.]*\)".*/\1/p')"
[ -n "$http_ip" ] || fail "http0 has no address"
if grep -E "dnsmasq-tftp.*sent .* to $http_ip\$" "$DATA/netboot/dnsmasq.log" >&2; then
  fail "http0 was sent files by TFTP"
fi
ctl node why http0 >"$LAB_DIR/why-http0.out"
grep -q "kernel command line: initrd=initrd.img" "$LAB_DIR/why-http0.out" ||
  { cat "$LAB_DIR/why-http0.out"; fail "node why does not show iPXE's kernel command line for http0"; }
say "http0: iPXE's ipxe.efi by HTTP (its DHCP asked as HTTPClient), nothing by TFTP, then its script, kernel and initrd"

facts="$(ctl node show nic0 --json)"
for mac in "$NIC_BOOT" "$NIC_OTHER"; do
  grep -qF "\"mac\":\"$mac\"" <<<"$facts" || fail "nic0's facts lack its NIC $mac: $facts"
done
grep -a "provision: .* is driven by 8139" "$LAB_DIR/nic0.serial" >/dev/null ||
  fail "nic0's initrd did not bring up the rtl8139 with its driver: $(grep -a 'provision: ' "$LAB_DIR/nic0.serial" | tail -5)"
ctl node list >"$LAB_DIR/nodes.out"
[ "$(grep -c "$NIC_OTHER" "$LAB_DIR/nodes.out")" -eq 0 ] || fail "nic0's other port became a node of its own"
[ "$(($(wc -l <"$LAB_DIR/nodes.out") - 1))" -eq 3 ] || { cat "$LAB_DIR/nodes.out"; fail "not exactly three nodes"; }
# Its root is the container image's tree: the upper layer's whiteout and
# file are there, and what came on top.
has_event nic0 "initrd: lab-oci.baked@" || fail "nic0 did not boot lab-oci.baked"
grep -q "\"base\": \"lab-oci@$OCI_VERSION\"" "$STORE/lab-oci.baked/$(cat "$STORE/lab-oci.baked/current")/image.json" ||
  fail "lab-oci.baked is not made from lab-oci@$OCI_VERSION"
ctl cmd nic0 -- sh -c 'test ! -e /etc/issue.net && test -x /usr/local/bin/lab-capable && test -x /usr/sbin/sshd && echo oci-root' >"$LAB_DIR/nic0-root.out" 2>&1 || true
grep -q "oci-root" "$LAB_DIR/nic0-root.out" || { cat "$LAB_DIR/nic0-root.out"; fail "nic0's root is not the container image's tree"; }
say "nic0 booted lab-oci.baked (the compute user baked on the container image lab-oci@$OCI_VERSION): no /etc/issue.net (whiteout), /usr/local/bin/lab-capable (upper layer), sshd (on top)"
say "nic0: one node by its boot port's MAC; the initrd drove the rtl8139 ($(grep -a -o 'is driven by [a-z0-9_]*' "$LAB_DIR/nic0.serial" | tail -1)); facts list both NICs"

# 3. Per node, no restart: the Secure Boot machine given the unsigned iPXE is
# refused by its firmware; a UEFI machine with Secure Boot off boots iPXE.
lab_vm_stop http0
lab_vm_stop sb0
EFI=52:54:00:96:00:40
ctl node set sb0 --uefi-loader ipxe >/dev/null
ctl node add efi0 --mac "$EFI" --profile lab-boot --uefi-loader ipxe >/dev/null
TFTP="$DATA/netboot/tftp"
wait_for "the TFTP directories of sb0 and efi0" 20 \
  test -L "$TFTP/52-54-00-96-00-10/shimx64.efi" -a -L "$TFTP/52-54-00-96-00-40/shimx64.efi"
[ "$(readlink "$TFTP/52-54-00-96-00-40/shimx64.efi")" = ../ipxe.efi ] ||
  fail "efi0's shimx64.efi is not iPXE: $(ls -l "$TFTP/52-54-00-96-00-40")"
[ ! -e "$TFTP/52-54-00-96-00-21" ] || fail "nic0 (the default loader) has a TFTP directory"
lab_vm_start sb0 "$SB" uefi-sb
lab_vm_start efi0 "$EFI" uefi-pxe
lab_wait_serial sb0 'Access Denied|Security Violation' 180 ||
  fail "sb0's firmware did not refuse the unsigned ipxe.efi"
grep -a -m1 -E 'Access Denied|Security Violation' "$LAB_DIR/sb0.serial" | tr -d '\r' >"$LAB_DIR/refused.out"
has_event sb0 "ipxe-binary: ipxe.efi" || fail "sb0 did not fetch ipxe.efi"
ctl node why sb0 >"$LAB_DIR/why.out"
grep -q "firmware that refuses the loader\|stopped after 'ipxe-binary'" "$LAB_DIR/why.out" ||
  { cat "$LAB_DIR/why.out"; fail "node why does not say where sb0 stopped"; }
say "sb0 given iPXE (node set --uefi-loader ipxe): its firmware refused it ($(cat "$LAB_DIR/refused.out")); node why: $(grep -m1 stopped "$LAB_DIR/why.out")"
lab_vm_stop sb0
# iPXE got its script and loaded the kernel and initrd; from there on the path
# is the one nic0 and http0 took to ready.
wait_for "efi0's iPXE to load its initrd" "$TIMEOUT" has_event efi0 "initrd: lab@"
say "efi0 (UEFI, its firmware's PXE, --uefi-loader ipxe): iPXE loaded its initrd $(lab_vm_elapsed efi0)s after power-on"
has_event efi0 "script: from" || fail "efi0 has no script event"
has_event efi0 "ipxe-binary: ipxe.efi" || fail "efi0 has no ipxe-binary event"
! has_event efi0 "shim: \|grub: " || fail "efi0 went through the signed chain"
grep -q "sent $TFTP/52-54-00-96-00-40/shimx64.efi to" "$DATA/netboot/dnsmasq.log" ||
  fail "dnsmasq did not send efi0 its own directory's loader"
say "efi0: dnsmasq sent the link in its own TFTP directory (iPXE); events ipxe-binary, no shim or grub"
lab_vm_stop efi0

# 4. Recovery, last (applying lab-recover releases the others from lab-boot):
# nic0 on lab-recover, powered by the plug, frozen.
printf 'plug-%s\n' "$RANDOM$RANDOM" >"$LAB_DIR/plug.pw"
chmod 600 "$LAB_DIR/plug.pw"
lab_spawn plug /usr/bin/python3 "$HERE/plug.py" --listen "$LAB_ADDR" --port 8091 --node nic0 \
  --mac "$NIC_BOOT" --power "$HERE/power.sh" --password-file "$LAB_DIR/plug.pw" --log "$LAB_DIR/plug-requests.log"
wait_for "the plug on port 8091" 20 lab_wait_port tcp 8091 1
ctl secret set plug-nic0 --from-file "$LAB_DIR/plug.pw" >/dev/null
ctl profile apply lab-recover --yes >/dev/null
ctl node set nic0 --profile lab-recover --power "driver=webhook,preset=tasmota,host=$LAB_ADDR:8091,secret=plug-nic0,cycle_delay=1" >/dev/null
has_event nic0 "profile (none) -> lab-recover" || fail "nic0 was not moved to lab-recover"
lab_vm_monitor nic0 stop >/dev/null
say "nic0 moved to lab-recover (silent_for 6 s, 1 cycle an hour), powered by the plug, frozen (QEMU stop)"
wait_for "the heartbeat to power-cycle the frozen nic0" 60 has_event nic0 "cycle (recovery: no answer over SSH for"
say "nic0: $(grep -o 'cycle (recovery: [^)]*)' "$LAB_DIR/events.out" | head -1), through the plug"
wait_ready nic0
has_event nic0 "ready -> booting: power-cycled by its profile's recovery" || fail "nic0's recovery did not send it booting"
ctl node why nic0 >"$LAB_DIR/why-nic0.out"
grep -q "^power: .*cycle (recovery: no answer over SSH for .*, try 1 of 1 in 3600 s): webhook (tasmota at $LAB_ADDR:8091): switched off, 1 s, on (heartbeat)" "$LAB_DIR/why-nic0.out" ||
  { cat "$LAB_DIR/why-nic0.out"; fail "node why does not show nic0's recovery"; }
say "nic0 netbooted back to ready $(lab_vm_elapsed nic0)s after the plug's cycle"
lab_vm_monitor nic0 stop >/dev/null
failed_now() { [ "$(ctl node show nic0 --json | sed -n 's/.*"state":"\([a-z]*\)".*/\1/p')" = failed ]; }
wait_for "the frozen nic0 to be failed" 60 failed_now
ctl node show nic0 >"$LAB_DIR/show-nic0.out"
grep -q "after 1 power cycle(s) in the last 3600 s (its profile's recovery allows 1): not cycled again" "$LAB_DIR/show-nic0.out" ||
  { cat "$LAB_DIR/show-nic0.out"; fail "nic0's reason does not say why it was not cycled again"; }
[ "$(ctl events --node nic0 --limit 100000 | grep -c 'cycle (recovery')" -eq 1 ] || fail "nic0 was cycled more than once"
! grep -qF "$(cat "$LAB_DIR/plug.pw")" "$LAB_DIR/provisiond.log" "$LAB_DIR/events.out" || fail "the plug's password is in the log or the events"
say "nic0 frozen again: failed ($(grep -o 'no answer over SSH for [0-9]* s after 1 power cycle' "$LAB_DIR/show-nic0.out")), not cycled a second time"
lab_vm_stop nic0
say "all firmware lab checks passed"
