#!/usr/bin/env bash
# Lab test of the boot chain: provisiond and its dnsmasq in a private network
# namespace, QEMU machines netbooting from them (TCG, QEMU's iPXE ROM and
# OVMF). The image is a real Debian kernel with a marker initrd that prints
# its command line on the serial console and powers off.
#   1. an unknown machine appears as `discovered` and gets a waiting script
#   2. enrolled with the lab profile it fetches its own script, kernel and
#      initrd, and the kernel starts (BIOS, iPXE ROM)
#   3. the same with UEFI firmware (Secure Boot off) whose own PXE gets the
#      signed chain by TFTP: shim, grub, the node's grub config, kernel and
#      initrd; powered on through provisiond's power driver
#   4. two machines at once get their own reserved addresses
#   5. dnsmasq killed under provisiond is restarted, and the next machine boots
#   6. provisiond killed with SIGKILL: the next one adopts the dnsmasq it left
#      (which kept serving), or stops it when its config changed; provisiond
#      and dnsmasq listen only where configured
# Usage: netboot_test.sh PROVISIOND PROVISIONCTL   (root)
set -euo pipefail
PROVISIOND="$(realpath "$1")"
PROVISIONCTL="$(realpath "$2")"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
CACHE="${LAB_CACHE_DIR:-/var/tmp/provisiond-lab-cache}"
TIMEOUT="${LAB_TIMEOUT:-150}"
MARKER='PROVISION-LAB-MARKER kernel started'
dump() {
  [ -n "${LAB_DIR:-}" ] || return 0
  lab_dump 40 "$LAB_DIR"/provisiond.log "$LAB_DIR"/data/netboot/dnsmasq.log "$LAB_DIR"/power.log
}
LAB_POLL_S=0.2
source "$HERE/lab-test.sh"
node_field() { ctl node show "$1" --json | sed -n "s/.*\"$2\":\"\\([^\"]*\\)\".*/\\1/p"; }
state_is() { [ "$(node_field "$1" state)" = "$2" ]; }

[ "$(id -u)" -eq 0 ] || fail "run as root (network namespaces, taps)"
say "kernel and marker initrd in $CACHE"
"$HERE/make-test-kernel.sh" "$CACHE" >/dev/null || fail "make-test-kernel.sh failed"
source "$HERE/lab.sh"
lab_init netboot
profiles_without_bake "$LAB_DIR/profiles"

DATA="$LAB_DIR/data"
cat >"$LAB_DIR/provisiond.yaml" <<CONF
listen: 0.0.0.0:8080
data_dir: $DATA
import_dir: $CACHE
profiles_dir: $LAB_DIR/profiles
playbooks_dir: $REPO/playbooks
pxe_dir: $REPO/pxe
interface: $LAB_BRIDGE
dhcp:
  mode: full
  range: 10.99.0.100-10.99.0.199
power:
  command: $HERE/power.sh
CONF
lab_spawn provisiond "$PROVISIOND" --config "$LAB_DIR/provisiond.yaml"
echo "$LAB_LAST_PID" >"$LAB_DIR/provisiond.pid"
wait_for "provisiond's URL file" 20 test -s "$DATA/provisiond.url"
# provisionctl runs in the lab's namespace: the API over plain HTTP answers loopback only.
export PROVISIOND_URL="http://127.0.0.1:8080"
BOOT_URL="http://$LAB_ADDR:8080"  # what nodes use
export PROVISIOND_TOKEN="$(awk '!/^#/ && NF {print $1; exit}' "$DATA/tokens")"
wait_for "dnsmasq to listen on DHCP" 20 lab_wait_port udp 67 1
ctl preflight >"$LAB_DIR/preflight.out" || { cat "$LAB_DIR/preflight.out"; fail "preflight failed"; }
say "provisiond and dnsmasq up; preflight ok"
ctl image import lab --kernel "$CACHE/vmlinuz" --initrd "$CACHE/marker-initrd.img"
ctl profile apply lab --yes >/dev/null

# 1. An unknown machine is discovered and waits.
M0=52:54:00:99:00:10
lab_vm_start lab0 "$M0" bios
wait_for "lab0's MAC to be discovered" "$TIMEOUT" state_is "$M0" discovered
lab_wait_serial lab0 'not enrolled yet' "$TIMEOUT" || fail "lab0 did not get the waiting script"
say "unknown machine $M0 discovered after $(lab_vm_elapsed lab0)s and waits"

# 2. Enrolled, it boots its kernel with its own command line.
ctl node add lab0 --mac "$M0"
lab_wait_serial lab0 "$MARKER.*provision.node=lab0 " "$TIMEOUT" || fail "lab0's kernel did not start"
say "lab0 enrolled: kernel started $(lab_vm_elapsed lab0)s after power-on"
grep -a "$MARKER.*provision.mac=$M0" "$LAB_DIR/lab0.serial" >/dev/null || fail "lab0's command line lacks its MAC"
grep -a "$MARKER.*console=ttyS0" "$LAB_DIR/lab0.serial" >/dev/null || fail "the profile's kernel_args are missing"
state_is lab0 booting || fail "lab0 is $(node_field lab0 state), not booting"
for stage in "dhcp:" "script:" "kernel:" "initrd:"; do
  has_event lab0 "$stage" || fail "lab0 has no '$stage' boot event"
done
ctl node why lab0 >"$LAB_DIR/why.out"
grep -q "initrd" "$LAB_DIR/why.out" || { cat "$LAB_DIR/why.out"; fail "node why does not show the initrd stage"; }
say "lab0: events dhcp, script, kernel, initrd; node why names the last stage"

# 3. UEFI with OVMF's own PXE: the signed chain by TFTP; powered on by provisiond.
M1=52:54:00:99:00:11
echo "lab1 uefi-pxe" >>"$LAB_DIR/firmware"
ctl node add lab1 --mac "$M1" --power command
ctl node power on lab1
lab_wait_serial lab1 "$MARKER.*provision.node=lab1 " "$TIMEOUT" || fail "lab1 (UEFI) did not boot"
for stage in "shim: shimx64.efi" "grub: grubx64.efi" "grub-config: $M1.cfg" "kernel: vmlinuz" "initrd: initrd.img"; do
  has_event lab1 "$stage" || fail "lab1 has no '$stage' event (TFTP)"
done
grep -a "$MARKER" "$LAB_DIR/lab1.serial" | grep "initrd=" >/dev/null && fail "grub's kernel line names an initrd= (iPXE's EFI argument)"
say "lab1 (UEFI, PXE -> TFTP shim -> grub -> its config, kernel, initrd) kernel started $(lab_vm_elapsed lab1)s after power-on"

# 4. Two machines at once, each with its reserved address.
M2=52:54:00:99:00:12 M3=52:54:00:99:00:13
ctl node add lab2 --mac "$M2"
ctl node add lab3 --mac "$M3"
has_ip() { [ -n "$(node_field "$1" ip)" ]; }
wait_for "an address for lab2" 10 has_ip lab2
wait_for "an address for lab3" 10 has_ip lab3
ip2="$(node_field lab2 ip)" ip3="$(node_field lab3 ip)"
[ -n "$ip2" ] && [ "$ip2" != "$ip3" ] || fail "lab2/lab3 reservations: '$ip2' '$ip3'"
wait_for "the reservations in dnsmasq's hosts file" 10 grep -q "$M3" "$DATA/netboot/hosts"
lab_vm_start lab2 "$M2" bios
lab_vm_start lab3 "$M3" bios
lab_wait_serial lab2 "$MARKER.*provision.node=lab2 " "$TIMEOUT" || fail "lab2 did not boot"
lab_wait_serial lab3 "$MARKER.*provision.node=lab3 " "$TIMEOUT" || fail "lab3 did not boot"
has_event lab2 "dhcp: $ip2" || fail "lab2 did not get its reserved $ip2"
has_event lab3 "dhcp: $ip3" || fail "lab3 did not get its reserved $ip3"
say "lab2 ($ip2) and lab3 ($ip3) booted at once with their reserved addresses"

# 5. dnsmasq dies; provisiond restarts it; the next machine still boots.
dns_pid() {
  local p
  for p in $(ip netns pids "$LAB_NS"); do
    if [ "$(cat "/proc/$p/comm" 2>/dev/null)" = dnsmasq ]; then echo "$p"; fi
  done
}
old="$(dns_pid)"
[ -n "$old" ] || fail "no dnsmasq in the lab"
kill -9 "$old"
dns_restarted() { local p; p="$(dns_pid)"; [ -n "$p" ] && [ "$p" != "$old" ]; }
wait_for "provisiond to start a new dnsmasq" 30 dns_restarted
new="$(dns_pid)"
ctl events --limit 100000 >"$LAB_DIR/events.out"
grep -q "was killed by signal 9; restarting" "$LAB_DIR/events.out" || fail "no event for dnsmasq's death"
M4=52:54:00:99:00:14
ctl node add lab4 --mac "$M4"
lab_vm_start lab4 "$M4" bios
lab_wait_serial lab4 "$MARKER.*provision.node=lab4 " "$TIMEOUT" || fail "lab4 did not boot after the restart"
say "dnsmasq killed ($old), restarted ($new) with an event; lab4 booted after it"
# Kernels and initrds: Range and ETag over real HTTP, only for catalog files.
hdr="$LAB_DIR/headers"
lab_exec curl -s -D "$hdr" -o "$LAB_DIR/part" -r 100-199 "$BOOT_URL/boot/${M4//:/-}/vmlinuz"
grep -q "^HTTP/1.1 206" "$hdr" || fail "a Range request did not get 206: $(head -1 "$hdr")"
[ "$(stat -c %s "$LAB_DIR/part")" -eq 100 ] || fail "the range has $(stat -c %s "$LAB_DIR/part") bytes, not 100"
cmp -s "$LAB_DIR/part" <(tail -c +101 "$CACHE/vmlinuz" | head -c 100) || fail "the range has other bytes than the kernel"
etag="$(sed -n 's/^ETag: *//Ip' "$hdr" | tr -d '\r')"
[ -n "$etag" ] || fail "no ETag"
code="$(lab_exec curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $etag" "$BOOT_URL/boot/${M4//:/-}/vmlinuz")"
[ "$code" = 304 ] || fail "If-None-Match got $code, not 304"
code="$(lab_exec curl -s -o /dev/null -w '%{http_code}' --path-as-is "$BOOT_URL/boot/${M4//:/-}/../../../etc/passwd")"
[ "$code" = 404 ] || fail "a path outside the catalog got $code"
say "kernel served with Range (206), ETag (304); no path from the URL reaches the filesystem"

# 6. provisiond killed with SIGKILL leaves its dnsmasq behind, still serving;
#    the next provisiond adopts it (found by its config file, which it would
#    write the same), so DHCP and TFTP never stop. The restarted one listens
#    on the lab address only, as configured (which changes nothing of
#    dnsmasq's config). Killed again with another DHCP range: that dnsmasq
#    is stopped and a new one started.
old="$(dns_pid)"
[ -n "$old" ] || fail "no dnsmasq before the SIGKILL"
lab_kill_hard "$(cat "$LAB_DIR/provisiond.pid")" || fail "provisiond did not exit after SIGKILL"
kill -0 "$old" 2>/dev/null || fail "dnsmasq ($old) died with provisiond"
sed -i "s/^listen: 0.0.0.0:8080/listen: $LAB_ADDR:8080/" "$LAB_DIR/provisiond.yaml"
lab_spawn provisiond "$PROVISIOND" --config "$LAB_DIR/provisiond.yaml"
echo "$LAB_LAST_PID" >"$LAB_DIR/provisiond.pid"
# Nothing on loopback now: provisionctl uses the HTTPS listener (api_listen: the listen address
# on 8443), pinning its self-signed certificate on first use as an operator's laptop would.
export PROVISIOND_URL="https://$LAB_ADDR:8443" PROVISIONCTL_KNOWN_SERVERS="$LAB_DIR/known_servers"
adopted() { ctl events --limit 100000 >"$LAB_DIR/events.out" && grep -q "adopted (pid $old)" "$LAB_DIR/events.out"; }
wait_for "the restarted provisiond to adopt dnsmasq $old" 30 adopted
[ "$(dns_pid)" = "$old" ] || fail "dnsmasq is $(dns_pid), not the adopted $old"
say "SIGKILLed provisiond: its dnsmasq ($old) kept running and was adopted by the next one"
ctl node list >/dev/null || fail "the restarted provisiond does not answer on $PROVISIOND_URL"
pinned="$(awk '{print $2}' "$LAB_DIR/known_servers")"
[ "$pinned" = "$(openssl x509 -in "$DATA/tls/cert.pem" -noout -fingerprint -sha256 | cut -d= -f2)" ] ||
  fail "provisionctl pinned '$pinned', not provisiond's certificate"
lab_exec curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $PROVISIOND_TOKEN" "http://$LAB_ADDR:8080/api/v1/nodes" >"$LAB_DIR/plain.code" || true
[ "$(cat "$LAB_DIR/plain.code")" = 403 ] || fail "the API answered plain HTTP off loopback: $(cat "$LAB_DIR/plain.code")"
lab_exec ss -H -lntup >"$LAB_DIR/listen.out"
bridge_addrs=" $(lab_exec ip -o addr show dev "$LAB_BRIDGE" | awk '{sub("/.*", "", $4); print $4}' | paste -sd' ') "
# provisiond: TCP 8080 (boot) and 8443 (API, HTTPS), UDP 6666 (the network console) on the lab
# address only. dnsmasq: DHCP bound to the lab
# bridge, TFTP on the bridge's addresses, no DNS (port=0). nfs-ganesha 4.3
# listens on every address whatever it is told (images/nfs/README.md: its
# export admits the boot subnet only). Nothing else listens.
while read -r proto _ _ _ local _ users; do
  addr="${local%:*}"
  addr="${addr%\%*}"
  addr="${addr#[}"
  addr="${addr%]}"
  case "$users" in
    *'"provisiond"'*) { [ "$proto" = tcp ] && { [ "$local" = "$LAB_ADDR:8080" ] || [ "$local" = "$LAB_ADDR:8443" ]; }; } ||
      [ "$proto $local" = "udp $LAB_ADDR:6666" ] ||
      fail "provisiond listens where it was not told to: $proto $local" ;;
    *'"dnsmasq"'*) [ "$proto $local" = "udp 0.0.0.0%$LAB_BRIDGE:67" ] ||
      { [ "$proto" = udp ] && [ "${local##*:}" = 69 ] && [[ "$bridge_addrs" == *" $addr "* ]]; } ||
      fail "dnsmasq listens where it was not told to: $proto $local (the bridge has$bridge_addrs)" ;;
    *'"ganesha.nfsd"'*) ;;
    *) fail "something else listens in the lab: $proto $local $users" ;;
  esac
done <"$LAB_DIR/listen.out"
grep -q '"dnsmasq"' "$LAB_DIR/listen.out" || fail "dnsmasq does not listen: $(cat "$LAB_DIR/listen.out")"
say "listening only on $LAB_ADDR:8080, :8443 (HTTPS, certificate pinned by provisionctl, plain API refused off loopback) and UDP :6666 (network console), DHCP and TFTP on $LAB_BRIDGE"

old="$(dns_pid)"
lab_kill_hard "$(cat "$LAB_DIR/provisiond.pid")" || fail "provisiond did not exit after SIGKILL"
sed -i "s/range: 10.99.0.100-10.99.0.199/range: 10.99.0.100-10.99.0.198/" "$LAB_DIR/provisiond.yaml"
lab_spawn provisiond "$PROVISIOND" --config "$LAB_DIR/provisiond.yaml"
echo "$LAB_LAST_PID" >"$LAB_DIR/provisiond.pid"
one_new_dns() { local p; p="$(dns_pid)"; [ -n "$p" ] && [ "$p" != "$old" ] && [ "$(wc -w <<<"$p")" -eq 1 ]; }
wait_for "the restarted provisiond's own dnsmasq (and no other)" 30 one_new_dns
# Gone, or a zombie its new parent (init) has not reaped yet.
dead() { ! kill -0 "$1" 2>/dev/null || [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ]; }
wait_for "the dnsmasq ($old) of the killed provisiond to be stopped" 10 dead "$old"
ctl events --limit 100000 >"$LAB_DIR/events.out"
grep -q "stopped pid $old, left running by a provisiond that did not stop (its config changed)" "$LAB_DIR/events.out" ||
  fail "no event for the dnsmasq ($old) stopped for its changed config"
say "SIGKILLed provisiond restarted with another DHCP range: its dnsmasq ($old) stopped, $(dns_pid) started"

# Stopping provisiond stops its dnsmasq.
kill -TERM "$(cat "$LAB_DIR/provisiond.pid")"
gone() { [ -z "$(dns_pid)" ]; }
wait_for "dnsmasq to stop with provisiond" 20 gone
say "provisiond stopped: its dnsmasq is gone too"
say "all netboot lab checks passed"
