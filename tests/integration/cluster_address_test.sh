#!/usr/bin/env bash
# The boot network's address moving with the active control node
# (control.address): two control nodes, each in a network namespace of its
# own on one bridge with a stand-in node, on one PostgreSQL inventory. The
# active holds 10.77.0.1 and the node reaches provisiond's boot routes there;
# the active machine dies (all of its processes killed with SIGKILL, its link
# down, as a machine that loses power); the standby takes the lease, claims the
# address and announces it with gratuitous ARP: the node's ARP cache points at
# the new active's hardware address and the next boot request reaches it.
# A takeover does not wait for preflight's probe for other DHCP servers: it
# probes once its boot network serves, and a DHCP server that appeared on the
# network since (one is started before the death) is an error and an event,
# not a stop. Both control nodes serve the API with one TLS certificate
# (tls_cert, tls_key): provisionctl on the node, which pinned it at the
# cluster address, reaches the new active there as it reached the old one.
# Then the database goes: the active removes the address as it steps down.
# Usage: cluster_address_test.sh PROVISIOND PROVISIONCTL   (root: namespaces)
set -euo pipefail
PROVISIOND="$1" PROVISIONCTL="$2"
WORK_NAME=provision-cluster-address
source "$(dirname "$0")/../lib.sh"
source "$REPO/tests/postgres.sh"
[ "$(id -u)" -eq 0 ] || die "run as root (network namespaces)"

# lan: the bridge; cn1, cn2: the control nodes; node: a machine on the network.
P="pvca$$"
NS=("$P-lan" "$P-cn1" "$P-cn2" "$P-node")
remove_namespaces() {
  local ns pid
  for ns in "${NS[@]}"; do
    # Whatever still runs there is ours (the namespaces are this test's).
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
}
CLEANUP_HOOKS+=(remove_namespaces)
for ns in "${NS[@]}"; do ip netns add "$ns"; ip -n "$ns" link set lo up; done
ip -n "$P-lan" link add br0 type bridge
ip -n "$P-lan" link set br0 up
join() {  # join NAME ADDRESS: NAME's eth0 on the bridge
  ip link add "$P$1" type veth peer name "$P$1b"
  ip link set "$P$1" netns "$P-$1"
  ip link set "$P$1b" netns "$P-lan"
  ip -n "$P-$1" link set "$P$1" name eth0
  ip -n "$P-$1" address add "$2/24" dev eth0
  ip -n "$P-$1" link set eth0 up
  ip -n "$P-lan" link set "$P$1b" master br0 up
}
join cn1 10.77.0.11
join cn2 10.77.0.12
join node 10.77.0.50
mac_of() { ip -n "$P-$1" -o link show eth0 | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p'; }
holds() { ip -n "$P-$1" -4 -o address show dev eth0 | grep -q ' 10.77.0.1/24 '; }

start_postgres
# One certificate for the API on every control node (docs/ha.md).
mkdir -p "$WORK/tls"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 \
  -subj /CN=provisiond-cluster -addext subjectAltName=IP:10.77.0.1 \
  -keyout "$WORK/tls/key.pem" -out "$WORK/tls/cert.pem" 2>/dev/null
chmod 600 "$WORK/tls/key.pem"
TOKEN_FILE="$WORK/tokens"
echo "$(openssl rand -hex 16) admin" >"$TOKEN_FILE"
chmod 600 "$TOKEN_FILE"
control_node() {  # control_node NAME: provisiond in NAME's namespace; sets CN_PID
  local name="$1" dir="$WORK/$1"
  mkdir -p "$dir"
  cat >"$dir/provisiond.yaml" <<CONF
listen: 0.0.0.0:8080
api_listen: 0.0.0.0:8443
tls_cert: $WORK/tls/cert.pem
tls_key: $WORK/tls/key.pem
data_dir: $dir/data
profiles_dir: $REPO/profiles
playbooks_dir: $REPO/playbooks
interface: eth0
dhcp.range: 10.77.0.100-10.77.0.150
nfs.server: none
database: $PG_URI
tokens_file: $TOKEN_FILE
control.name: $name
control.address: 10.77.0.1/24
control.lease_ms: 3000
control.renew_ms: 500
control.stop_margin_ms: 1000
CONF
  ip netns exec "$P-$name" "$PROVISIOND" --config "$dir/provisiond.yaml" >>"$WORK/provisiond-$name.log" 2>&1 &
  CN_PID=$!
  PIDS+=("$CN_PID")
}
logged() { grep -q -- "$2" "$WORK/provisiond-$1.log"; }
# A boot request from the node, to the cluster address.
boot_request() { ip netns exec "$P-node" curl -sf -m 2 -o /dev/null http://10.77.0.1:8080/boot/start.ipxe; }
node_sees() { ip -n "$P-node" neigh show 10.77.0.1 dev eth0 | grep -q "lladdr $1"; }

control_node cn1
CN1=$CN_PID
wait_for 60 "cn1 is active and holds the cluster address" holds cn1
control_node cn2
CN2=$CN_PID
wait_for 30 "cn2 waits as a standby" logged cn2 "standby as cn2: cn1 is the active control node"
check "the standby does not hold the address" bash -c "! ip -n $P-cn2 -4 -o address show dev eth0 | grep -q ' 10.77.0.1/'"
wait_for 30 "the node's boot request reaches the active at 10.77.0.1" boot_request
check "the node's ARP cache has cn1 for 10.77.0.1" node_sees "$(mac_of cn1)"
# provisionctl on the node, at the cluster address: it pins the key there.
ctl_at_cluster() {
  ip netns exec "$P-node" env PROVISIOND_URL=https://10.77.0.1:8443 \
    PROVISIOND_TOKEN="$(cut -d' ' -f1 "$TOKEN_FILE")" PROVISIONCTL_KNOWN_SERVERS="$WORK/known_servers" \
    "$PROVISIONCTL" status
}
check "provisionctl at https://10.77.0.1:8443 reaches cn1 and pins its key" ctl_at_cluster
expect_output "cn1 answers" "cn1, active since"

# Another DHCP server appears on the network (on the stand-in node), after
# cn1's own probe at its start.
ip netns exec "$P-node" dnsmasq --keep-in-foreground --conf-file=/dev/null --port=0 --interface=eth0 \
  --bind-interfaces --dhcp-range=10.77.0.200,10.77.0.210 --leasefile-ro --pid-file= \
  >"$WORK/rogue-dhcp.log" 2>&1 &
PIDS+=($!)

# cn1's machine dies: every process of it, then its link.
for pid in $(ip netns pids "$P-cn1"); do kill -KILL "$pid" 2>/dev/null || true; done
ip -n "$P-cn1" link set eth0 down
killed_ns=$(date +%s%N)
wait "$CN1" 2>/dev/null || true
wait_for 30 "cn2 takes over and claims the address" holds cn2
wait_for 10 "cn2 says it claimed and announced it" logged cn2 "claimed the cluster address 10.77.0.1/24 on eth0"
wait_for 10 "the node's ARP cache follows to cn2 (gratuitous ARP)" node_sees "$(mac_of cn2)"
wait_for 30 "the node's boot request reaches cn2 at the same address" boot_request
pass "from cn1's death to cn2 serving boot requests at 10.77.0.1: $((($(date +%s%N) - killed_ns) / 1000000)) ms (lease 3000 ms)"
check "cn2 left the probe for other DHCP servers out of its start" bash -c "! grep -q 'preflight other dhcp servers: ' '$WORK/provisiond-cn2.log'"
wait_for 20 "cn2 probes once it serves and names the other DHCP server" logged cn2 \
  "preflight other dhcp servers (after the takeover): another DHCP server answers on eth0 (10.77.0.50)"
expect_eq "and records it as an event" \
  "$(pg_sql "SELECT count(*) FROM events WHERE kind = 'preflight' AND detail LIKE 'after the takeover: another DHCP server answers on eth0 (10.77.0.50)%'")" 1
check "cn2 goes on serving boot requests" boot_request
check "provisionctl at the same URL reaches cn2: the same certificate, no pin refused" ctl_at_cluster
expect_output "cn2 answers" "cn2, active since"

# The database goes: cn2 steps down and gives the address up first. (Once it
# has started in full: a start that loses its database fails as any start.)
wait_for 30 "cn2 serves its boot network" logged cn2 "boot network on eth0"
stop_postgres
rc=0
for _ in $(seq 1 200); do kill -0 "$CN2" 2>/dev/null || break; sleep 0.05; done
wait "$CN2" 2>/dev/null || rc=$?
expect_eq "cn2 stepped down (exit 75) without its database" "$rc" 75
check "cn2 removed the cluster address as it stepped down" bash -c "! ip -n $P-cn2 -4 -o address show dev eth0 | grep -q ' 10.77.0.1/'"
finish
