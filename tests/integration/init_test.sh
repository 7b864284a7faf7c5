#!/usr/bin/env bash
# `provisiond init` on a cluster network, in two network namespaces of the
# test's own joined by a veth pair: the control node's side (10.77.0.1/24 on
# ctl0) and the site's side (10.77.0.254/24). With nothing else on the wire,
# init chooses full DHCP mode with a lease range in the subnet; with a real
# dnsmasq leasing addresses on the site's side, init (--force) chooses proxy
# mode. Both configs pass `provisiond --check`; the first admin token is made
# once, mode 0600; an operator's config is not overwritten without --force.
# Usage: init_test.sh PROVISIOND PROVISIONCTL   (root)
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
PROVISIOND="$(realpath "$1")"

CTL="provinit$$c" SITE="provinit$$s"
CLEANUP_HOOKS+=("ip netns del $CTL" "ip netns del $SITE")
ip netns add "$CTL"
ip netns add "$SITE"
ip link add ctl0 netns "$CTL" type veth peer name site0 netns "$SITE"
ip -n "$CTL" addr add 10.77.0.1/24 dev ctl0
ip -n "$SITE" addr add 10.77.0.254/24 dev site0
for ns in "$CTL" "$SITE"; do
  ip -n "$ns" link set lo up
done
ip -n "$CTL" link set ctl0 up
ip -n "$SITE" link set site0 up

CONFIG="$WORK/etc/provisiond.yaml" DATA="$WORK/data"
init() { ip netns exec "$CTL" "$PROVISIOND" --config "$CONFIG" init --interface ctl0 --data-dir "$DATA" "$@"; }

check "init on a quiet network" init
expect_output "init probes first" "probing for DHCP servers on ctl0"
expect_output "no other server: full mode" "no other DHCP server answered on ctl0"
expect_output "init prints the next commands" "provisiond --check --config $CONFIG"
grep -q "^  mode: full$" "$CONFIG" && pass "the config says full mode" || fail "config: $(cat "$CONFIG")"
grep -q "^  range: 10.77.0.128-10.77.0.254$" "$CONFIG" && pass "the lease range is the subnet's upper half" ||
  fail "config: $(cat "$CONFIG")"
check "the written config passes provisiond --check" "$PROVISIOND" --check --config "$CONFIG"
expect_eq "the tokens file is its owner's alone" "$(stat -c %a "$DATA/tokens")" 600
token="$(cat "$DATA/tokens")"

echo "# an operator's own line" >>"$CONFIG"
expect_exit 1 "init does not overwrite an operator's config" init
expect_output "init says how to replace it" "--force"

# The site's router: dnsmasq leasing addresses on the same wire.
ip netns exec "$SITE" dnsmasq --keep-in-foreground --no-resolv --no-hosts --port=0 --bind-interfaces --interface=site0 \
  --dhcp-range=10.77.0.50,10.77.0.60,255.255.255.0,1h --dhcp-leasefile="$WORK/leases" \
  --pid-file="$WORK/dnsmasq.pid" --log-facility=- --dhcp-authoritative >"$WORK/dnsmasq.log" 2>&1 &
PIDS+=($!)
DNSMASQ_PID=$!
CLEANUP_HOOKS+=("kill $DNSMASQ_PID")
wait_for 10 "the site's dnsmasq started" test -s "$WORK/dnsmasq.pid"
mv "$CONFIG" "$CONFIG.operator"
cp "$CONFIG.operator" "$CONFIG"
check "init --force beside the site's DHCP server" init --force
expect_output "a leasing server: proxy mode" "a DHCP server already gives addresses on ctl0 (10.77.0.254)"
expect_output "the old config is kept" "kept the old config as $CONFIG.before-init"
cmp -s "$CONFIG.before-init" "$CONFIG.operator" && pass "the kept config is the operator's" || fail "before-init differs"
grep -q "^  mode: proxy$" "$CONFIG" && pass "the config says proxy mode" || fail "config: $(cat "$CONFIG")"
check "the proxy config passes provisiond --check" "$PROVISIOND" --check --config "$CONFIG"
expect_eq "the first token is kept" "$(cat "$DATA/tokens")" "$token"
expect_exit 1 "init on loopback is refused" ip netns exec "$CTL" "$PROVISIOND" --config "$WORK/x.yaml" init --interface lo --dhcp-mode full
expect_output "init names the problem" "loopback"
finish
