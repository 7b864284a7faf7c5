#!/usr/bin/env bash
# lab_selftest.sh: proves the netboot lab end to end, without provisiond.
#
# In a private network namespace (lab.sh): dnsmasq (DHCP + TFTP + IPv6 RA) and busybox httpd on
# the bridge, then QEMU VMs that netboot a Debian kernel with a marker initramfs, which prints
# "PROVISION-LAB-MARKER kernel started cmdline=..." on the serial console and powers off:
#   1. bios       SeaBIOS + QEMU's iPXE ROM -> HTTP script -> kernel
#   2. uefi-pxe   OVMF's own PXE -> TFTP ipxe.efi -> HTTP script -> kernel
#   3. uefi       OVMF + QEMU's iPXE EFI ROM -> HTTP script -> kernel
#   4. 2 x bios   at the same moment
#   5. power      lab_vm_reset, lab_vm_stop, lab_vm_start again of one VM (monitor socket)
# Prints the seconds from VM start to marker for each. Exit status 0 only if all passed.
#
# Usage: tests/lab/lab_selftest.sh        (root; packages: tests/lab/packages.txt)
#   LAB_CACHE_DIR   kernel + marker initrd cache (default /var/tmp/provisiond-lab-cache)
#   LAB_KEEP=1      keep the lab's work dir (logs, serial consoles) after the run
#   LAB_TIMEOUT     seconds to wait for each marker (default 90)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${LAB_CACHE_DIR:-/var/tmp/provisiond-lab-cache}"
MARKER_TIMEOUT="${LAB_TIMEOUT:-90}"
MARKER='PROVISION-LAB-MARKER kernel started cmdline=.*lab_marker=1'
T_START="${EPOCHREALTIME//[!0-9]/}"

say() { printf '[%6.1fs] %s\n' "$(((${EPOCHREALTIME//[!0-9]/} - T_START) / 100000))e-1" "$*"; }

dump_logs() {
  [ -n "${LAB_DIR:-}" ] && [ -d "$LAB_DIR" ] || return 0
  local f
  for f in "$LAB_DIR"/dnsmasq.log "$LAB_DIR"/httpd.log; do
    [ -f "$f" ] && { echo "--- last 40 lines of $f"; tail -n 40 "$f"; }
  done
  for f in "$LAB_DIR"/*.qemu.log; do
    [ -s "$f" ] && { echo "--- $f"; tail -n 10 "$f"; }
  done
  echo "--- (LAB_KEEP=1 keeps $LAB_DIR for a closer look)"
} >&2

fail() {
  echo "FAIL: $*" >&2
  dump_logs
  exit 1
}
trap 'fail "line $LINENO: command failed: $BASH_COMMAND"' ERR

[ "$(id -u)" -eq 0 ] || fail "run as root (network namespaces, taps)"
for tool in dnsmasq busybox qemu-system-x86_64 socat ip ss; do
  command -v "$tool" >/dev/null || fail "missing $tool; install tests/lab/packages.txt"
done
for f in /usr/lib/ipxe/ipxe.efi /usr/lib/ipxe/snponly.efi /usr/lib/ipxe/undionly.kpxe; do
  [ -r "$f" ] || fail "missing $f (package ipxe)"
done

say "kernel and marker initrd in $CACHE"
"$HERE/make-test-kernel.sh" "$CACHE" || fail "make-test-kernel.sh failed"

# shellcheck source-path=SCRIPTDIR source=lab.sh
source "$HERE/lab.sh"
lab_init selftest || fail "lab_init failed"

# ---------------------------------------------------------------- servers
mkdir -p "$LAB_DIR/tftp" "$LAB_DIR/www"
cp /usr/lib/ipxe/ipxe.efi /usr/lib/ipxe/snponly.efi /usr/lib/ipxe/undionly.kpxe "$LAB_DIR/tftp/"
cp "$CACHE/vmlinuz" "$CACHE/marker-initrd.img" "$LAB_DIR/www/"
# initrd=NAME lets the kernel's EFI stub find the initrd under the 2019 iPXE EFI build (it has
# no LoadFile2 initrd); a BIOS boot ignores it.
printf '#!ipxe\nkernel http://%s:8080/vmlinuz console=ttyS0 lab_marker=1 initrd=marker-initrd.img\ninitrd http://%s:8080/marker-initrd.img\nboot\n' \
  "$LAB_ADDR" "$LAB_ADDR" >"$LAB_DIR/www/boot.ipxe"
chmod -R a+rX "$LAB_DIR/tftp" "$LAB_DIR/www"

lab_spawn httpd busybox httpd -f -vv -p "$LAB_ADDR:8080" -h "$LAB_DIR/www"
lab_wait_port tcp 8080 10 || fail "busybox httpd did not start"
got="$(lab_exec busybox wget -q -O - "http://$LAB_ADDR:8080/boot.ipxe")" || fail "cannot fetch the boot script"
[ "$got" = "$(cat "$LAB_DIR/www/boot.ipxe")" ] || fail "boot script fetched differs"

# shellcheck disable=SC2054 # commas belong to dnsmasq's option syntax
dnsmasq_args=(
  --keep-in-foreground --conf-file=/dev/null --log-facility=- --log-dhcp
  --pid-file="$LAB_DIR/dnsmasq.pid" --dhcp-leasefile="$LAB_DIR/dnsmasq.leases"
  --port=0 --interface="$LAB_BRIDGE" --bind-interfaces --no-hosts --no-resolv
  --dhcp-authoritative
  --dhcp-range=10.99.0.100,10.99.0.200,12h
  --dhcp-userclass=set:ipxe,iPXE
  --dhcp-match=set:efi64,option:client-arch,7
  --dhcp-match=set:efi64,option:client-arch,9
  --dhcp-boot=tag:ipxe,"http://$LAB_ADDR:8080/boot.ipxe"
  --dhcp-boot=tag:!ipxe,tag:efi64,ipxe.efi
  --dhcp-boot=tag:!ipxe,tag:!efi64,undionly.kpxe
  # iPXE waits ~3 s for a proxy-DHCP offer unless the offer says PXEClient.
  --dhcp-option-force=tag:ipxe,60,PXEClient
  --enable-tftp --tftp-root="$LAB_DIR/tftp"
)
if [ -n "${LAB_ADDR6:-}" ]; then
  # Router advertisements: iPXE otherwise waits ~13 s for IPv6 configuration.
  dnsmasq_args+=(--enable-ra --dhcp-range="::,constructor:$LAB_BRIDGE,ra-only")
fi
lab_spawn dnsmasq dnsmasq "${dnsmasq_args[@]}"
lab_wait_port udp 67 10 || fail "dnsmasq did not start"
lab_wait_port udp 69 10 || fail "dnsmasq's TFTP did not start"
say "dnsmasq and httpd up in $LAB_NS"

# ---------------------------------------------------------------- tests
RESULTS=()

# boot_and_mark NAME...: wait for each VM's marker, record its time from start, check that it
# powered itself off.
wait_marker() {
  local name="$1" label="$2" t
  lab_wait_serial "$name" "$MARKER" "$MARKER_TIMEOUT" || fail "$label: no marker from $name"
  t="$(lab_vm_elapsed "$name")"
  RESULTS+=("$(printf '%-34s %6ss' "$label" "$t")")
  say "$label: marker after ${t}s"
}

# Bounded wait for a line in a lab log (dnsmasq.log, httpd.log).
wait_log() {
  local file="$LAB_DIR/$1" pattern="$2" timeout="$3" n
  local deadline=$((${EPOCHREALTIME//[!0-9]/} + timeout * 1000000))
  while :; do
    n="$(grep -caE -- "$pattern" "$file" 2>/dev/null)" || true
    [ "${n:-0}" -gt 0 ] && return 0
    [ "${EPOCHREALTIME//[!0-9]/}" -lt "$deadline" ] || return 1
    sleep 0.1
  done
}

MAC1=52:54:00:99:00:01 MAC2=52:54:00:99:00:02 MAC3=52:54:00:99:00:03
MAC4=52:54:00:99:00:04 MAC5=52:54:00:99:00:05 MAC6=52:54:00:99:00:06

# 1. BIOS: SeaBIOS + iPXE ROM
say "1. bios"
lab_vm_start bios1 "$MAC1" bios || fail "lab_vm_start bios1"
wait_marker bios1 "bios (iPXE ROM)"
lab_vm_wait_exit bios1 30 || fail "bios1 did not power off after the marker"

# 2. UEFI with OVMF's own PXE: TFTP ipxe.efi, then iPXE
say "2. uefi-pxe"
lab_vm_start uefipxe1 "$MAC2" uefi-pxe || fail "lab_vm_start uefipxe1"
wait_marker uefipxe1 "uefi-pxe (OVMF PXE, TFTP ipxe.efi)"
lab_vm_wait_exit uefipxe1 30 || fail "uefipxe1 did not power off after the marker"
grep -qE "sent .*/ipxe\.efi to 10\.99\.0\." "$LAB_DIR/dnsmasq.log" ||
  fail "uefi-pxe: dnsmasq's log shows no TFTP transfer of ipxe.efi"

# 3. UEFI with QEMU's iPXE EFI ROM
say "3. uefi"
lab_vm_start uefi1 "$MAC3" uefi || fail "lab_vm_start uefi1"
wait_marker uefi1 "uefi (iPXE EFI ROM)"
lab_vm_wait_exit uefi1 30 || fail "uefi1 did not power off after the marker"

# 4. Two BIOS VMs at once
say "4. 2 x bios at once"
lab_vm_start par1 "$MAC4" bios || fail "lab_vm_start par1"
lab_vm_start par2 "$MAC5" bios || fail "lab_vm_start par2"
wait_marker par1 "2 x bios at once: #1"
wait_marker par2 "2 x bios at once: #2"
lab_vm_wait_exit par1 30 || fail "par1 did not power off"
lab_vm_wait_exit par2 30 || fail "par2 did not power off"
leases="$(cat "$LAB_DIR/dnsmasq.leases")"
if ! grep -qi "$MAC4" <<<"$leases" || ! grep -qi "$MAC5" <<<"$leases"; then
  fail "the two parallel VMs do not both have a lease: $leases"
fi

# 5. Power control through the monitor: reset a VM once iPXE has its boot script (the firmware
#    starts again, netboots again), power it off, power it on again (same tap, new serial log),
#    and leave it running for lab_cleanup to stop.
say "5. reset / stop / start again"
lab_vm_start ctl1 "$MAC6" bios || fail "lab_vm_start ctl1"
lab_wait_serial ctl1 'boot\.ipxe : [0-9]+ bytes' 60 || fail "ctl1: iPXE did not fetch its boot script"
[ "$(lab_vm_monitor ctl1 'info status')" = "VM status: running" ] || fail "ctl1: monitor does not say running"
lab_vm_reset ctl1 || fail "lab_vm_reset ctl1"
lab_wait_serial ctl1 'SeaBIOS' 30 || fail "ctl1: no firmware start after lab_vm_reset"
lab_wait_serial ctl1 'Configuring \(net0' 60 || fail "ctl1: no netboot after lab_vm_reset"
RESULTS+=("$(printf '%-34s %6ss' "lab_vm_reset to iPXE DHCP" "$(lab_vm_elapsed ctl1)")")
ctl_pid="$(cat "$LAB_DIR/ctl1.pid")"
lab_vm_stop ctl1 || fail "lab_vm_stop ctl1"
! lab_vm_running ctl1 || fail "ctl1 still running after lab_vm_stop"
! kill -0 "$ctl_pid" 2>/dev/null || fail "ctl1's QEMU (pid $ctl_pid) still exists after lab_vm_stop"
lab_vm_start ctl1 "$MAC6" bios || fail "lab_vm_start ctl1 (power on again)"
[ "$(cat "$LAB_DIR/ctl1.tap")" = tap5 ] || fail "ctl1 did not keep its tap"
lab_wait_serial ctl1 'SeaBIOS' 30 || fail "ctl1: no firmware start after power on again"
say "5. ok (ctl1 left running for lab_cleanup)"

# ---------------------------------------------------------------- report
echo
echo "lab self-test passed ($(uname -m), $(nproc) CPUs, TCG; kernel $(cut -d' ' -f1,2 "$CACHE/vmlinuz.version"))"
echo "seconds from VM start (or reset) to the marker on its serial console:"
printf '  %s\n' "${RESULTS[@]}"
say "total"
