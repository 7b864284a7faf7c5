#!/usr/bin/env bash
# Lab test of a network that already has a DHCP server (a plain dnsmasq in the
# namespace stands in for the site's router):
#   1. provisiond in full DHCP mode refuses to start: preflight names the other
#      server and suggests proxy mode
#   2. in proxy mode it starts, and a BIOS machine gets its address from the
#      other server and its boot information from provisiond, and boots
# Usage: proxy_test.sh PROVISIOND PROVISIONCTL   (root)
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
  lab_dump 30 "$LAB_DIR"/provisiond*.log "$LAB_DIR"/site-dhcp.log
}
LAB_POLL_S=0.2
source "$HERE/lab-test.sh"

[ "$(id -u)" -eq 0 ] || fail "run as root (network namespaces, taps)"
"$HERE/make-test-kernel.sh" "$CACHE" >/dev/null || fail "make-test-kernel.sh failed"
# The site's DHCP server lives on another "host": a second namespace joined
# to the lab's bridge by a veth pair. (On the same host its broadcast answers
# would never reach provisiond's probe, as on a real network they do.)
SITE_NS="pvsite-$$"
SITE_PID=""
site_cleanup() {
  [ -z "$SITE_PID" ] || { kill "$SITE_PID" 2>/dev/null; wait "$SITE_PID" 2>/dev/null || true; }
  ip netns del "$SITE_NS" 2>/dev/null || true
}
trap site_cleanup EXIT
source "$HERE/lab.sh"
lab_init proxy
profiles_without_bake "$LAB_DIR/profiles"
ip netns add "$SITE_NS"
ip -n "$LAB_NS" link add name site0 type veth peer name site1 netns "$SITE_NS"
ip -n "$LAB_NS" link set site0 master "$LAB_BRIDGE" up
ip -n "$SITE_NS" link set lo up
ip -n "$SITE_NS" addr add 10.99.0.2/24 dev site1
ip -n "$SITE_NS" addr add fd00:99::2/64 dev site1 nodad
ip -n "$SITE_NS" link set site1 up
# The site's DHCP server: addresses (and IPv6 router advertisements) only; it
# knows nothing about netbooting.
ip netns exec "$SITE_NS" dnsmasq --keep-in-foreground --conf-file=/dev/null --port=0 \
  --interface=site1 --bind-interfaces --pid-file="$LAB_DIR/site-dhcp.pid" \
  --dhcp-leasefile="$LAB_DIR/site-dhcp.leases" --dhcp-range=10.99.0.50,10.99.0.90,1h \
  --enable-ra --dhcp-range=::,constructor:site1,ra-only --log-facility=- --log-dhcp \
  </dev/null >"$LAB_DIR/site-dhcp.log" 2>&1 &
SITE_PID=$!
site_listens() { [ -n "$(ip netns exec "$SITE_NS" ss -H -lun 'sport = :67')" ]; }
wait_for "the site's DHCP server" 10 site_listens

config() {
  cat <<CONF
listen: 0.0.0.0:8080
data_dir: $LAB_DIR/data
import_dir: $CACHE
profiles_dir: $LAB_DIR/profiles
playbooks_dir: $REPO/playbooks
pxe_dir: $REPO/pxe
interface: $LAB_BRIDGE
dhcp:
  mode: $1
CONF
}

# 1. Full mode next to another DHCP server: refused, with the reason.
config full >"$LAB_DIR/full.yaml"
rc=0
lab_exec timeout 60 "$PROVISIOND" --config "$LAB_DIR/full.yaml" >"$LAB_DIR/provisiond-full.log" 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "provisiond started in full mode next to another DHCP server"
grep -q "another DHCP server answers on $LAB_BRIDGE (10.99.0.2)" "$LAB_DIR/provisiond-full.log" ||
  fail "the refusal does not name the other server: $(tail -3 "$LAB_DIR/provisiond-full.log")"
grep -q "set dhcp.mode: proxy" "$LAB_DIR/provisiond-full.log" || fail "the refusal does not suggest proxy mode"
say "full mode refused: another DHCP server answers; proxy mode suggested"

# 2. Proxy mode: boots.
config proxy >"$LAB_DIR/proxy.yaml"
lab_spawn provisiond "$PROVISIOND" --config "$LAB_DIR/proxy.yaml"
wait_for "provisiond's URL file" 20 test -s "$LAB_DIR/data/provisiond.url"
# provisionctl runs in the lab's namespace: the API over plain HTTP answers loopback only.
export PROVISIOND_URL="http://127.0.0.1:8080"
export PROVISIOND_TOKEN="$(awk '!/^#/ && NF {print $1; exit}' "$LAB_DIR/data/tokens")"
wait_for "provisiond's dnsmasq (proxy) on port 4011 or 67" 20 lab_wait_port udp 67 1
ctl preflight >"$LAB_DIR/preflight.out" || { cat "$LAB_DIR/preflight.out"; fail "preflight failed in proxy mode"; }
grep -q "proxy mode" "$LAB_DIR/preflight.out" || fail "preflight does not mention proxy mode: $(cat "$LAB_DIR/preflight.out")"
ctl image import lab --kernel "$CACHE/vmlinuz" --initrd "$CACHE/marker-initrd.img" >/dev/null
ctl profile apply lab --yes >/dev/null
M=52:54:00:98:00:01
ctl node add lab0 --mac "$M" >/dev/null
lab_vm_start lab0 "$M" bios
lab_wait_serial lab0 "$MARKER.*provision.node=lab0 " "$TIMEOUT" || fail "lab0 did not boot in proxy mode"
grep -q "DHCPACK(site1) 10.99.0.[5-9][0-9] $M" "$LAB_DIR/site-dhcp.log" || fail "lab0's address did not come from the site's server"
say "proxy mode: lab0 got its address from the site's server and booted from provisiond in $(lab_vm_elapsed lab0)s"
say "all proxy lab checks passed"
