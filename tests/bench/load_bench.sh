#!/usr/bin/env bash
# load_bench.sh: 1,000 simulated nodes boot and phone home at once against one
# provisiond. Each node (bench_node_sim, one thread per node, all released
# together) runs the HTTP part of a netboot: GET /boot/start.ipxe, GET
# /boot/<mac>.ipxe (its script, which issues the boot's ticket), GET
# /boot/<mac>/vmlinuz, initrd.img, ticket.img, overlay.tar?ticket= (from a
# privileged port), then POST /api/v1/nodes/<mac>/hello with the token from the
# overlay and the ticket (privileged port too). Reports errors (goal 0), the
# phone-homes provisiond recorded (goal: every node), wall time, requests/s
# and latency; then the same storm against nginx serving what provisiond
# answered as static files (hello: `return 200`), alternating, for a ratio.
#
#
# Everything runs in a network namespace of the benchmark's own (loopback
# only), where the kernel's accept queue limit (net.core.somaxconn, and
# tcp_max_syn_backlog) is set to --backlog, which both servers then ask for in
# listen(2) (provisiond's listen_backlog, nginx's backlog=): by default room
# for every node at once (nodes + 1024, at least 4096, the host's default).
# With --backlog 4096 and 10,000 nodes, both servers reset thousands of
# first connections (the queue overflows; tests/bench/README.md).
#
# Usage: tests/bench/load_bench.sh [--nodes 1000] [--runs 3] [--kernel-mib 1]
#          [--initrd-mib 4] [--listen-threads N] [--backlog N] [--keep-going] [--build-dir build-bench]
#          [--provisiond PATH] [--provisionctl PATH] [--node-sim PATH] [--nginx PATH] [--dir TMP] [--json FILE]
set -euo pipefail

bench=load_bench
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build_dir=$repo/build-bench
provisiond='' provisionctl='' node_sim='' nginx_bin='' json_out='' nginx_workers=auto
nodes=1000 runs=3 kernel_mib=1 initrd_mib=4 tmp_base=${TMPDIR:-/tmp} listen_threads=-1 keep_going=0 backlog=0

usage() {
  sed -n '/^# Usage:/,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
}
args_given=("$@")
while (($#)); do
  case $1 in
    --build-dir) build_dir=${2:?}; shift 2 ;;
    --provisiond) provisiond=${2:?}; shift 2 ;;
    --provisionctl) provisionctl=${2:?}; shift 2 ;;
    --node-sim) node_sim=${2:?}; shift 2 ;;
    --nginx) nginx_bin=${2:?}; shift 2 ;;
    --nodes) nodes=${2:?}; shift 2 ;;
    --runs) runs=${2:?}; shift 2 ;;
    --kernel-mib) kernel_mib=${2:?}; shift 2 ;;
    --initrd-mib) initrd_mib=${2:?}; shift 2 ;;
    --listen-threads) listen_threads=${2:?}; shift 2 ;;
    --keep-going) keep_going=1; shift ;;
    --backlog) backlog=${2:?}; shift 2 ;;
    --dir) tmp_base=${2:?}; shift 2 ;;
    --json) json_out=${2:?}; shift 2 ;;
    -h | --help) usage ;;
    *) echo "$bench: unknown argument '$1'" >&2; usage ;;
  esac
done
[[ $nodes =~ ^[1-9][0-9]*$ && $nodes -le 60000 ]] || { echo "--nodes must be 1..60000" >&2; exit 2; }
[[ $runs =~ ^[1-9][0-9]*$ && $runs -le 20 ]] || { echo "--runs must be 1..20" >&2; exit 2; }
[[ $backlog =~ ^[0-9]+$ && $backlog -le 1000000 ]] || { echo "--backlog must be 16..1000000" >&2; exit 2; }
((backlog > 0)) || backlog=$((nodes + 1024 > 4096 ? nodes + 1024 : 4096))
((backlog >= 16)) || { echo "--backlog must be 16..1000000" >&2; exit 2; }
# Into the benchmark's own network namespace (once): its accept queue limits
# are its own, the host's stay as they are.
if [[ -z ${LOAD_BENCH_NETNS:-} ]]; then
  [[ $(id -u) -eq 0 ]] || { echo "$bench: run as root (a network namespace of its own)" >&2; exit 2; }
  ns=provload$$
  ip netns add "$ns" || exit 1
  trap 'ip netns del "$ns" 2>/dev/null' EXIT
  trap 'exit 130' INT TERM
  ip netns exec "$ns" sh -c "ip link set lo up && sysctl -qw net.core.somaxconn=$backlog \
    net.ipv4.tcp_max_syn_backlog=$backlog" || exit 1
  rc=0
  LOAD_BENCH_NETNS=$ns ip netns exec "$ns" bash "${BASH_SOURCE[0]}" "${args_given[@]}" || rc=$?
  exit "$rc"
fi
provisiond=${provisiond:-$build_dir/provisiond/provisiond}
provisionctl=${provisionctl:-$build_dir/provisiond/provisionctl}
node_sim=${node_sim:-$build_dir/tests/bench/bench_node_sim}
json_out=${json_out:-$build_dir/tests/bench/load_bench.json}
if [[ -z $nginx_bin ]]; then
  nginx_bin=$(command -v nginx || true)
  [[ -n $nginx_bin ]] || nginx_bin=/usr/sbin/nginx
fi

source "$repo/tests/bench/boot_bench_common.sh"
for f in "$provisiond" "$provisionctl" "$node_sim"; do
  [[ -x $f ]] || die "$f is not built (ninja -C $build_dir provisiond provisionctl bench_node_sim), or pass its path"
done
[[ -x $nginx_bin ]] || die "nginx not found: apt-get install nginx-light, or pass --nginx PATH"
command -v sqlite3 >/dev/null || die "sqlite3 not found"
# Each process (the simulator, provisiond, nginx) holds up to a connection per
# node, and the servers a file being sent for some of them: a descriptor per
# node and room to spare (a server out of descriptors shows as errors).
(($(ulimit -n) >= nodes + 1024)) || ulimit -n $((4 * nodes + 1024)) 2>/dev/null ||
  die "ulimit -n $(ulimit -n) is too low for $nodes nodes"
mkdir -p "$(dirname "$json_out")"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# provisiond as boot_bench_common starts it (with listen_threads), plus
# ssh.port 1: a node that phones home is configured over SSH, and port 1
# refuses at once, so each hello also costs one (failed, `unreachable`)
# configure run, as on a real network where the node's sshd is not up yet.
start_bench_provisiond "ssh.port: 1" "listen_connections: $((nodes + 1024))" "listen_backlog: $backlog"
setup_lab_image "$kernel_mib" "$initrd_mib"
db=$DATA/data/provisiond.db
# Enrolled (not timed): lab00000.. get the lab profile and its image.
"$node_sim" --url "$URL" --token "$TOKEN" --nodes "$nodes" --prefix lab --enroll \
  --concurrency 16 >"$WORK/enroll.json" || die "enrolling failed: $(cat "$WORK/enroll.json")"
hellos() { sqlite3 "$db" "select count(*) from events where kind = 'boot' and detail like 'hello:%'"; }

# --- nginx: what provisiond answered, as static files ---------------------------
mkdir -p "$WORK/www/boot"
curl -sf --noproxy '*' "$URL/boot/start.ipxe" >"$WORK/www/boot/start.ipxe"
# (Python for the per-node files: a process per node takes minutes at 10,000.)
python3 - "$WORK/www/boot" "$image_dir" "$nodes" <<'PY'
import os, sys
www, image, nodes = sys.argv[1], sys.argv[2], int(sys.argv[3])
for i in range(nodes):
    d = os.path.join(www, "52-54-0a-%02x-%02x-%02x" % (i >> 16 & 255, i >> 8 & 255, i & 255))
    os.makedirs(d, exist_ok=True)
    for f in ("vmlinuz", "initrd.img"):
        os.link(os.path.join(image, f), os.path.join(d, f))
PY
# Scripts and overlays as provisiond renders them (one curl, one connection);
# this is also the first boot of every node (not measured).
args=()
for ((i = 0; i < nodes; i++)); do
  printf -v mac '52-54-0a-%02x-%02x-%02x' $((i >> 16 & 255)) $((i >> 8 & 255)) $((i & 255))
  ((i > 0)) && args+=(--next)
  args+=(-sf -o "$WORK/www/boot/$mac.ipxe" "$URL/boot/$mac.ipxe")
done
curl --noproxy '*' "${args[@]}" || die "fetching the scripts failed"
args=()
for ((i = 0; i < nodes; i++)); do
  printf -v mac '52-54-0a-%02x-%02x-%02x' $((i >> 16 & 255)) $((i >> 8 & 255)) $((i & 255))
  ((i > 0)) && args+=(--next)
  args+=(-sf -o "$WORK/www/boot/$mac/ticket.img" "$URL/boot/$mac/ticket.img")
done
curl --noproxy '*' "${args[@]}" || die "fetching the tickets failed"
# Overlays from a privileged port, as a node's root fetches them: one curl, one connection (a
# connection per overlay would leave its port in TIME_WAIT, and there are only 512 such ports).
# The URLs go in a config file (-K): 10,000 of them are too long for a command line. The
# ticket is provision/ticket in each ticket.img (a newc cpio archive).
python3 - "$WORK/www/boot" "$nodes" "$URL" >"$WORK/overlays.curl" <<'PY'
import os, sys
www, nodes, url = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def member(data, wanted):
    pos = 0
    while data[pos:pos + 6] == b"070701":
        size, name_size = int(data[pos + 54:pos + 62], 16), int(data[pos + 94:pos + 102], 16)
        name = data[pos + 110:pos + 110 + name_size - 1].decode()
        start = (pos + 110 + name_size + 3) & ~3
        if name == wanted:
            return data[start:start + size].decode().strip()
        if name == "TRAILER!!!":
            break
        pos = (start + size + 3) & ~3
    sys.exit("no %s in a ticket.img" % wanted)
for i in range(nodes):
    mac = "52-54-0a-%02x-%02x-%02x" % (i >> 16 & 255, i >> 8 & 255, i & 255)
    ticket = member(open(os.path.join(www, mac, "ticket.img"), "rb").read(), "provision/ticket")
    if i:
        print("next")
    print('local-port = "512-1023"\nsilent\nfail\noutput = "%s/%s/overlay.tar"\nurl = "%s/boot/%s/overlay.tar?ticket=%s"'
          % (www, mac, url, mac, ticket))
PY
args=(-K "$WORK/overlays.curl")
curl --noproxy '*' "${args[@]}" || die "fetching the overlays failed"
# nginx's workers run as nobody: they need to reach $WORK/www (the hard links
# share the image store's inodes, which become world-readable).
chmod 711 "$WORK"
chmod -R a+rX "$WORK/www"
nginx_server_block="    root $WORK/www;
    default_type application/octet-stream;
    location ~ \\.ipxe\$ { default_type text/plain; }
    location /api/ { default_type application/json; return 200 '{\"state\":\"booted\"}'; }"
# Every worker may hold every node's connection (which worker accepts is the kernel's choice).
nginx_worker_connections=$((nodes + 1024))
nginx_backlog=$backlog
start_nginx_on_free_port /boot/start.ipxe

# --- the storms -------------------------------------------------------------------
storm() {  # $1: base URL, $2: name; sets s_json
  local out=$WORK/storm-$2.json
  # --keep-going: a storm with errors is reported (errors column) instead of ending the run.
  "$node_sim" --url "$1" --nodes "$nodes" --prefix lab --files --hello >"$out" 2>"$WORK/storm-$2.err" ||
    ((keep_going)) || die "$2: errors: $(cat "$out") $(head -5 "$WORK/storm-$2.err")"
  s_json=$(<"$out")
}
field() { sed -n "s/.*\"$2\":\([0-9.]*\).*/\1/p" <<<"$1"; }
lat() { sed -n "s/.*\"latency_ms\":{[^}]*\"$2\":\([0-9.]*\).*/\1/p" <<<"$1"; }
rows=() notes=() p_wall=() n_wall=() p_recorded=() p_rss=() p_peak=()
# provisiond's memory in MiB, from its status: $1 VmRSS (resident now) or VmHWM (peak so far).
provisiond_mib() { awk -v k="$1:" '$1 == k {printf "%d", $2 / 1024}' "/proc/$PROVISIOND_PID/status"; }
run_one() {  # $1: provisiond|nginx, $2: round
  local before after rec=-
  if [[ $1 == provisiond ]]; then
    before=$(hellos)
    storm "$URL" provisiond
    after=$(hellos)
    rec=$((after - before))
    ((rec == nodes || keep_going)) || die "provisiond recorded $rec phone-homes of $nodes"
    p_wall+=("$(field "$s_json" wall_s)"); p_recorded+=("$rec")
    p_rss+=("$(provisiond_mib VmRSS)"); p_peak+=("$(provisiond_mib VmHWM)")
  else
    storm "$nginx_url" nginx
    n_wall+=("$(field "$s_json" wall_s)")
  fi
  local kinds
  kinds=$(sed -n 's/.*"errors_by_kind":{\([^}]*\)}.*/\1/p' <<<"$s_json")
  [[ -z $kinds ]] || notes+=("run $2, $1: errors by kind: $kinds; by step: $(sed -n 's/.*"errors_by_step":{\([^}]*\)}.*/\1/p' <<<"$s_json")")
  rows+=("$(printf '%-5s %-11s %9s %9s %7s %9s %9s %9s %9s %9s' "$2" "$1" "$(field "$s_json" requests)" \
    "$(field "$s_json" errors)" "$rec" "$(field "$s_json" wall_s)" "$(field "$s_json" requests_per_s)" \
    "$(lat "$s_json" p50)" "$(lat "$s_json" p99)" "$(lat "$s_json" max)")")
}
for ((r = 1; r <= runs; r++)); do
  if ((r % 2 == 1)); then run_one provisiond "$r"; run_one nginx "$r"; else run_one nginx "$r"; run_one provisiond "$r"; fi
done
p_med=$(median "${p_wall[@]}")
n_med=$(median "${n_wall[@]}")
ratio=$(awk -v a="$p_med" -v b="$n_med" 'BEGIN { printf "%.2f", a / b }')
states=$(sqlite3 "$db" "select state || ' ' || count(*) from nodes group by state" | tr '\n' ',' | sed 's/,$//')
nginx_version=$("$nginx_bin" -v 2>&1 | sed 's/^nginx version: //')
echo "$bench: $nodes nodes at once, each: start.ipxe, <mac>.ipxe, vmlinuz ($kernel_mib MiB), initrd.img ($initrd_mib MiB), ticket.img, overlay.tar, hello"
echo "$(nproc) CPUs, load average $load_before at start, $nginx_version (workers: $nginx_workers); one thread and one connection per request per node in bench_node_sim"
echo "network namespace $LOAD_BENCH_NETNS: net.core.somaxconn $(cat /proc/sys/net/core/somaxconn), tcp_max_syn_backlog $(cat /proc/sys/net/ipv4/tcp_max_syn_backlog); accept queues asked for (ss Send-Q): provisiond $(ss -Hltn "sport = :${URL##*:}" | awk '{print $3}'), nginx $(ss -Hltn "sport = :${nginx_url##*:}" | awk '{print $3}')"
printf '%-5s %-11s %9s %9s %7s %9s %9s %9s %9s %9s\n' run server requests errors hellos "wall s" "req/s" "p50 ms" "p99 ms" "max ms"
printf '%s\n' "${rows[@]}"
((${#notes[@]} == 0)) || printf '%s\n' "${notes[@]}"
echo "median wall time: provisiond $p_med s, nginx $n_med s; ratio provisiond/nginx $ratio"
echo "phone-homes recorded per provisiond storm: ${p_recorded[*]} (of $nodes); node states now: $states"
echo "provisiond's memory after each storm, MiB: resident ${p_rss[*]}; peak ${p_peak[*]}"
cat >"$json_out" <<EOF
{
  "benchmark": "load",
  "date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
  "machine": {"cpus": $(nproc), "loadavg_at_start": "$load_before"},
  "nodes": $nodes, "kernel_mib": $kernel_mib, "initrd_mib": $initrd_mib, "runs": $runs, "backlog": $backlog,
  "provisiond": {"median_wall_s": $p_med, "wall_s": [$(join_csv "${p_wall[@]}")], "hellos_recorded": [$(join_csv "${p_recorded[@]}")], "rss_mib": [$(join_csv "${p_rss[@]}")], "peak_rss_mib": [$(join_csv "${p_peak[@]}")]},
  "nginx": {"version": "$nginx_version", "median_wall_s": $n_med, "wall_s": [$(join_csv "${n_wall[@]}")]},
  "ratio_provisiond_over_nginx_wall": $ratio
}
EOF
echo "results: $json_out"
