#!/usr/bin/env bash
# boot_storm_bench.sh: many nodes downloading their initrd at once. N clients
# (64 by default), each its own enrolled node, fetch GET /boot/<mac>/initrd.img
# (256 MiB of random bytes) from provisiond at the same time; the same storm
# against nginx serving the very same file (sendfile on) at the same paths.
# Aggregate throughput = all bytes / wall time from the start of the first
# client to the end of the last. The servers alternate, several runs each.
#
# provisiond runs on a fresh data dir in a mktemp directory (the image is
# imported with provisionctl, nodes enrolled through the API); nginx runs as
# our own process with all its paths in the same directory and serves hard
# links to the image store's initrd (same inode, so the same page cache).
# Both are stopped by pid, and the directory removed, when the script ends,
# also on failure or Ctrl-C.
#
# Usage: tests/bench/boot_storm_bench.sh [options]
#   --build-dir DIR      where provisiond and provisionctl were built
#                        (default: <repo>/build-bench)
#   --provisiond PATH    the daemon (default: DIR/provisiond/provisiond)
#   --provisionctl PATH  default: DIR/provisiond/provisionctl
#   --nginx PATH         default: nginx from PATH, else /usr/sbin/nginx
#   --nginx-workers N    nginx worker_processes (default: auto, one per CPU)
#   --clients N          concurrent clients = enrolled nodes (default 64)
#   --initrd-mib N       initrd size in MiB (default 256)
#   --runs N             measured storms per server (default 3)
#   --warmup N           unmeasured storms per server first (default 1)
#   --pin S:C            pin the servers to CPUs S and the clients to CPUs C
#                        (taskset lists, e.g. 0:1); default: no pinning
#   --dir DIR            where the temp directory goes (default: $TMPDIR or /tmp)
#   --json FILE          results (default: DIR/tests/bench/boot_storm_bench.json)
set -euo pipefail

bench=boot_storm_bench
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build_dir=$repo/build-bench
provisiond='' provisionctl='' nginx_bin='' json_out='' nginx_workers=auto
clients=64 initrd_mib=256 kernel_mib=4 runs=3 warmup=1 tmp_base=${TMPDIR:-/tmp} pin_arg=''

usage() {
  sed -n '/^# Usage:/,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
}
while (($#)); do
  case $1 in
    --build-dir) build_dir=${2:?}; shift 2 ;;
    --provisiond) provisiond=${2:?}; shift 2 ;;
    --provisionctl) provisionctl=${2:?}; shift 2 ;;
    --nginx) nginx_bin=${2:?}; shift 2 ;;
    --nginx-workers) nginx_workers=${2:?}; shift 2 ;;
    --clients) clients=${2:?}; shift 2 ;;
    --initrd-mib) initrd_mib=${2:?}; shift 2 ;;
    --runs) runs=${2:?}; shift 2 ;;
    --warmup) warmup=${2:?}; shift 2 ;;
    --pin) pin_arg=${2:?}; shift 2 ;;
    --dir) tmp_base=${2:?}; shift 2 ;;
    --json) json_out=${2:?}; shift 2 ;;
    -h | --help) usage ;;
    *) echo "$bench: unknown argument '$1'" >&2; usage ;;
  esac
done
[[ $clients =~ ^[1-9][0-9]*$ && $clients -le 1024 ]] || { echo "--clients must be 1..1024" >&2; exit 2; }
[[ $initrd_mib =~ ^[1-9][0-9]*$ && $initrd_mib -le 4096 ]] || { echo "--initrd-mib must be 1..4096" >&2; exit 2; }
[[ $runs =~ ^[1-9][0-9]*$ && $runs -le 100 ]] || { echo "--runs must be 1..100" >&2; exit 2; }
[[ $warmup =~ ^[0-9]+$ && $warmup -le 10 ]] || { echo "--warmup must be 0..10" >&2; exit 2; }
[[ $nginx_workers == auto || $nginx_workers =~ ^[1-9][0-9]?$ ]] || { echo "--nginx-workers must be auto or 1..99" >&2; exit 2; }
provisiond=${provisiond:-$build_dir/provisiond/provisiond}
provisionctl=${provisionctl:-$build_dir/provisiond/provisionctl}
json_out=${json_out:-$build_dir/tests/bench/boot_storm_bench.json}
if [[ -z $nginx_bin ]]; then
  nginx_bin=$(command -v nginx || true)
  [[ -n $nginx_bin ]] || nginx_bin=/usr/sbin/nginx
fi

source "$repo/tests/bench/boot_bench_common.sh"
[[ -z $pin_arg ]] || parse_pin "$pin_arg"
for f in "$provisiond" "$provisionctl"; do
  [[ -x $f ]] || die "$f is not built (cmake --build $build_dir), or pass its path"
done
[[ -x $nginx_bin ]] || die "nginx not found: apt-get install nginx-light, or pass --nginx PATH"
command -v curl >/dev/null || die "curl not found"
command -v sha256sum >/dev/null || die "sha256sum not found"
mkdir -p "$(dirname "$json_out")"

load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# --- provisiond: image, profile, one node per client -----------------------------
# shellcheck disable=SC2119 # no config lines of its own
start_bench_provisiond
setup_lab_image "$kernel_mib" "$initrd_mib"
enroll_nodes "$clients"
initrd=$image_dir/initrd.img
initrd_bytes=$(stat -c %s "$initrd")
initrd_sha=$(sha256sum "$initrd" | cut -d' ' -f1)
fs_type=$(findmnt -no FSTYPE -T "$initrd" 2>/dev/null || stat -f -c %T "$initrd")

# --- nginx: the same file (hard links to the same inode) at the same paths ------
chmod 711 "$WORK"
mkdir -p "$WORK/www/boot"
for ((i = 0; i < clients; i++)); do
  mkdir -p "$WORK/www/boot/$(node_mac "$i")"
  ln "$initrd" "$WORK/www/boot/$(node_mac "$i")/initrd.img"
done
chmod -R a+rX "$WORK/www"
chmod a+r "$initrd"
nginx_server_block="    root $WORK/www;
    default_type application/octet-stream;"
start_nginx_on_free_port "/boot/$(node_mac 0)/initrd.img"

# --- check: the same bytes from both (this also warms the page cache) -----------
cat "$initrd" >/dev/null
verify() {  # $1: base URL, $2: label
  local out code size sum
  out=$(curl -sS --noproxy '*' -o "$WORK/download" -w '%{http_code} %{size_download}' \
    "$1/boot/$(node_mac 0)/initrd.img")
  read -r code size <<<"$out"
  sum=$(sha256sum "$WORK/download" | cut -d' ' -f1)
  rm -f "$WORK/download"
  [[ $code == 200 && $size == "$initrd_bytes" && $sum == "$initrd_sha" ]] ||
    die "$2 answered $code, $size bytes, sha256 $sum (expected 200, $initrd_bytes, $initrd_sha)"
  echo "$2: 200, $size bytes, sha256 $sum" >&2
}
verify "$URL" provisiond
verify "$nginx_url" nginx

# --- the storm --------------------------------------------------------------------
# One curl process per client, all started back to back; wall time from just
# before the first starts to just after the last ends. Every client must get a
# 200 with the whole file. Also: CPU time the server used, and the machine's.
hz=$(getconf CLK_TCK)
storm() {  # $1: base URL, $2: server pid; sets wall_s, mbps, srv_cpu_s, busy_pct, cl_med, cl_max
  local base=$1 pid=$2 i t0 t1 c0 c1 m0 m1 code size secs times=() bad=0
  rm -rf "$WORK/out"; mkdir -p "$WORK/out"
  c0=$(cpu_ticks "$pid"); read -r -a m0 <<<"$(machine_ticks)"
  client_pids=()
  t0=$EPOCHREALTIME
  for ((i = 0; i < clients; i++)); do
    "${client_cmd[@]}" curl -s --noproxy '*' -o /dev/null -w '%{http_code} %{size_download} %{time_total}\n' \
      "$base/boot/$(node_mac "$i")/initrd.img" >"$WORK/out/$i" &
    client_pids+=($!)
  done
  for i in "${client_pids[@]}"; do wait "$i" || bad=1; done
  t1=$EPOCHREALTIME
  client_pids=()
  c1=$(cpu_ticks "$pid"); read -r -a m1 <<<"$(machine_ticks)"
  ((bad == 0)) || die "a client failed against $base"
  for ((i = 0; i < clients; i++)); do
    read -r code size secs <"$WORK/out/$i"
    [[ $code == 200 && $size == "$initrd_bytes" ]] ||
      die "client $i got $code with $size bytes from $base (expected 200, $initrd_bytes)"
    times+=("$secs")
  done
  wall_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
  mbps=$(awk -v w="$wall_s" -v n="$clients" -v s="$initrd_bytes" 'BEGIN { printf "%.1f", n * s / w / 1e6 }')
  srv_cpu_s=$(awk -v a="$c0" -v b="$c1" -v hz="$hz" 'BEGIN { printf "%.2f", (b - a) / hz }')
  busy_pct=$(awk -v b0="${m0[0]}" -v t0="${m0[1]}" -v b1="${m1[0]}" -v t1="${m1[1]}" \
    'BEGIN { printf "%.0f", (t1 > t0) ? 100 * (b1 - b0) / (t1 - t0) : 0 }')
  cl_med=$(median "${times[@]}")
  cl_max=$(printf '%s\n' "${times[@]}" | sort -g | awk 'END { printf "%.3f", $1 }')
}

# Warm-up storms (not measured): the page cache is warm already; this also moves
# every node from enrolled to booting (one state-change event each), so the
# measured storms write one boot-stage event per request.
for ((r = 0; r < warmup; r++)); do
  storm "$URL" "$PROVISIOND_PID"
  storm "$nginx_url" "$nginx_pid"
done

ev_before=$(last_event)
p_mbps=() n_mbps=() p_wall=() n_wall=() p_cpu=() n_cpu=() p_busy=() n_busy=()
rows=()
run_one() {  # $1: provisiond|nginx, $2: round
  if [[ $1 == provisiond ]]; then
    storm "$URL" "$PROVISIOND_PID"
    p_mbps+=("$mbps"); p_wall+=("$wall_s"); p_cpu+=("$srv_cpu_s"); p_busy+=("$busy_pct")
  else
    storm "$nginx_url" "$nginx_pid"
    n_mbps+=("$mbps"); n_wall+=("$wall_s"); n_cpu+=("$srv_cpu_s"); n_busy+=("$busy_pct")
  fi
  rows+=("$(printf '%-5s %-11s %9s %10s %12s %12s %14s %9s' "$2" "$1" "$wall_s" "$mbps" \
    "$cl_med" "$cl_max" "$srv_cpu_s" "$busy_pct%")")
}
for ((r = 1; r <= runs; r++)); do
  if ((r % 2 == 1)); then
    run_one provisiond "$r"; run_one nginx "$r"
  else
    run_one nginx "$r"; run_one provisiond "$r"
  fi
done
ev_after=$(last_event)
events=$((ev_after - ev_before))

p_med=$(median "${p_mbps[@]}")
n_med=$(median "${n_mbps[@]}")
ratio=$(awk -v a="$p_med" -v b="$n_med" 'BEGIN { printf "%.3f", a / b }')
# The ratio within each round (the two storms back to back) is less exposed to
# load that drifts between rounds.
round_ratios=()
for ((r = 0; r < runs; r++)); do
  round_ratios+=("$(awk -v a="${p_mbps[r]}" -v b="${n_mbps[r]}" 'BEGIN { printf "%.3f", a / b }')")
done
round_ratio_med=$(median "${round_ratios[@]}")
p_cpu_med=$(median "${p_cpu[@]}")
n_cpu_med=$(median "${n_cpu[@]}")
nginx_version=$("$nginx_bin" -v 2>&1 | sed 's/^nginx version: //')
curl_version=$(curl --version | head -n 1 | cut -d' ' -f1-2)
cpus=$(nproc)
date_utc=$(date -u +%Y-%m-%dT%H:%M:%SZ)
total_mib=$((clients * initrd_mib))

echo "$bench: $clients clients at once, each GET /boot/<its mac>/initrd.img, $initrd_bytes bytes ($initrd_mib MiB); $total_mib MiB per storm"
echo "$runs storms per server after $warmup warm-up, alternating; curl per client, body to /dev/null; file on $fs_type, page cache warm"
echo "$cpus CPUs, pinning: $pin, load average $load_before at start, $nginx_version (workers: $nginx_workers, sendfile on), $curl_version"
printf '%-5s %-11s %9s %10s %12s %12s %14s %9s\n' run server "wall s" "MB/s" "client med s" "client max s" "server CPU s" "CPU busy"
printf '%s\n' "${rows[@]}"
printf '%-17s %9s %10s %12s %12s %14s\n' "median provisiond" "" "$p_med" "" "" "$p_cpu_med"
printf '%-17s %9s %10s %12s %12s %14s\n' "median nginx" "" "$n_med" "" "" "$n_cpu_med"
echo "ratio provisiond/nginx (median MB/s): $ratio (goal >= 0.9)"
echo "ratio within each round: ${round_ratios[*]}; median $round_ratio_med"
echo "boot-stage events provisiond wrote during its storms: $events ($runs x $clients requests)"

cat >"$json_out" <<EOF
{
  "benchmark": "boot_storm",
  "date": "$date_utc",
  "machine": {"hostname": "$(uname -n)", "cpus": $cpus, "loadavg_at_start": "$load_before"},
  "pinning": "$pin",
  "request": "GET /boot/<mac>/initrd.img",
  "clients": $clients,
  "file_bytes": $initrd_bytes,
  "file_sha256": "$initrd_sha",
  "filesystem": "$fs_type",
  "runs": $runs,
  "warmup": $warmup,
  "mb_per_s_is": "total bytes / wall seconds / 1e6",
  "provisiond": {"median_mb_per_s": $p_med, "mb_per_s": [$(join_csv "${p_mbps[@]}")],
                 "wall_s": [$(join_csv "${p_wall[@]}")], "server_cpu_s": [$(join_csv "${p_cpu[@]}")],
                 "machine_busy_pct": [$(join_csv "${p_busy[@]}")], "events_written": $events},
  "nginx": {"version": "$nginx_version", "workers": "$nginx_workers", "median_mb_per_s": $n_med,
            "mb_per_s": [$(join_csv "${n_mbps[@]}")], "wall_s": [$(join_csv "${n_wall[@]}")],
            "server_cpu_s": [$(join_csv "${n_cpu[@]}")], "machine_busy_pct": [$(join_csv "${n_busy[@]}")]},
  "ratio_provisiond_over_nginx": $ratio,
  "ratio_per_round": [$(join_csv "${round_ratios[@]}")],
  "ratio_per_round_median": $round_ratio_med,
  "client": "$curl_version"
}
EOF
echo "results: $json_out"
