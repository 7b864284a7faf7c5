#!/usr/bin/env bash
# boot_script_bench.sh: throughput and latency of the per-node iPXE script,
# GET /boot/<mac>.ipxe, under load: wrk with 256 connections rotating over 256
# enrolled nodes (one path per request, tests/bench/boot_paths.lua), against
# provisiond (renders the script and records a boot-stage event in SQLite per
# request) and against nginx serving the same scripts as static files (rendered
# once by provisiond, saved as <mac>.ipxe), same paths, same rotation.
#
# provisiond runs on a fresh data dir in a mktemp directory (a small image is
# imported with provisionctl, profile lab applied, nodes enrolled through the
# API); nginx runs as our own process with all its paths in the same
# directory. Both are stopped by pid, and the directory removed, when the
# script ends, also on failure or Ctrl-C.
#
# Usage: tests/bench/boot_script_bench.sh [options]
#   --build-dir DIR      where provisiond and provisionctl were built
#                        (default: <repo>/build-bench)
#   --provisiond PATH    the daemon (default: DIR/provisiond/provisiond)
#   --provisionctl PATH  default: DIR/provisiond/provisionctl
#   --nginx PATH         default: nginx from PATH, else /usr/sbin/nginx
#   --nginx-workers N    nginx worker_processes (default: auto, one per CPU)
#   --wrk PATH           default: wrk from PATH
#   --nodes N            enrolled nodes the requests rotate over (default 256)
#   --connections N      wrk -c (default 256)
#   --threads N          wrk -t (default 2)
#   --duration S         seconds per measured wrk run (default 10)
#   --runs N             measured wrk runs per server, alternating (default 3)
#   --warmup S           seconds of unmeasured wrk per server first (default 2)
#   --listen-threads N   provisiond's listen_threads (default: its own, one event
#                        loop per CPU; 0: a thread per connection, the old server)
#   --pin S:C            pin the servers to CPUs S and the clients to CPUs C
#                        (taskset lists, e.g. 0:1); default: no pinning
#   --dir DIR            where the temp directory goes (default: $TMPDIR or /tmp)
#   --json FILE          results (default: DIR/tests/bench/boot_script_bench.json)
set -euo pipefail

bench=boot_script_bench
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build_dir=$repo/build-bench
provisiond='' provisionctl='' nginx_bin='' wrk_bin='' json_out='' nginx_workers=auto
nodes=256 connections=256 threads=2 duration=10 runs=3 warmup=2 tmp_base=${TMPDIR:-/tmp} pin_arg=''

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
    --wrk) wrk_bin=${2:?}; shift 2 ;;
    --nodes) nodes=${2:?}; shift 2 ;;
    --connections) connections=${2:?}; shift 2 ;;
    --threads) threads=${2:?}; shift 2 ;;
    --duration) duration=${2:?}; shift 2 ;;
    --runs) runs=${2:?}; shift 2 ;;
    --warmup) warmup=${2:?}; shift 2 ;;
    --pin) pin_arg=${2:?}; shift 2 ;;
    --listen-threads) listen_threads=${2:?}; shift 2 ;;
    --dir) tmp_base=${2:?}; shift 2 ;;
    --json) json_out=${2:?}; shift 2 ;;
    -h | --help) usage ;;
    *) echo "$bench: unknown argument '$1'" >&2; usage ;;
  esac
done
[[ $nodes =~ ^[1-9][0-9]*$ && $nodes -le 65535 ]] || { echo "--nodes must be 1..65535" >&2; exit 2; }
[[ $connections =~ ^[1-9][0-9]*$ && $connections -le 4000 ]] || { echo "--connections must be 1..4000" >&2; exit 2; }
[[ $threads =~ ^[1-9][0-9]?$ && $threads -le $connections ]] || { echo "--threads must be 1..99 and at most --connections" >&2; exit 2; }
[[ $duration =~ ^[1-9][0-9]*$ && $duration -le 300 ]] || { echo "--duration must be 1..300" >&2; exit 2; }
[[ $runs =~ ^[1-9][0-9]*$ && $runs -le 100 ]] || { echo "--runs must be 1..100" >&2; exit 2; }
[[ $warmup =~ ^[0-9]+$ && $warmup -le 60 ]] || { echo "--warmup must be 0..60" >&2; exit 2; }
[[ $nginx_workers == auto || $nginx_workers =~ ^[1-9][0-9]?$ ]] || { echo "--nginx-workers must be auto or 1..99" >&2; exit 2; }
provisiond=${provisiond:-$build_dir/provisiond/provisiond}
provisionctl=${provisionctl:-$build_dir/provisiond/provisionctl}
json_out=${json_out:-$build_dir/tests/bench/boot_script_bench.json}
lua=$repo/tests/bench/boot_paths.lua
if [[ -z $nginx_bin ]]; then
  nginx_bin=$(command -v nginx || true)
  [[ -n $nginx_bin ]] || nginx_bin=/usr/sbin/nginx
fi
wrk_bin=${wrk_bin:-$(command -v wrk || true)}

source "$repo/tests/bench/boot_bench_common.sh"
[[ -z $pin_arg ]] || parse_pin "$pin_arg"
for f in "$provisiond" "$provisionctl"; do
  [[ -x $f ]] || die "$f is not built (cmake --build $build_dir), or pass its path"
done
[[ -x $nginx_bin ]] || die "nginx not found: apt-get install nginx-light, or pass --nginx PATH"
[[ -n $wrk_bin && -x $wrk_bin ]] || die "wrk not found: apt-get install wrk, or pass --wrk PATH"
[[ -r $lua ]] || die "$lua is missing"
command -v curl >/dev/null || die "curl not found"
# wrk keeps a descriptor per connection; provisiond a thread and a descriptor.
(($(ulimit -n) > connections + 64)) || ulimit -n $((connections + 1024)) 2>/dev/null ||
  die "ulimit -n $(ulimit -n) is too low for $connections connections"
mkdir -p "$(dirname "$json_out")"

load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# --- provisiond: a small image, profile lab, the nodes --------------------------
# shellcheck disable=SC2119 # no config lines of its own
start_bench_provisiond
setup_lab_image 1 1  # the script only names the files; their size does not matter
enroll_nodes "$nodes"

# --- each node's script, rendered once by provisiond -----------------------------
# This first request also moves each node from enrolled to booting (a state
# change), so the measured runs see the steady state: one boot-stage event per
# request. All requests go through one curl process (one connection).
mkdir -p "$WORK/www/boot"
: >"$WORK/paths"
args=()
for ((i = 0; i < nodes; i++)); do
  mac=$(node_mac "$i")
  echo "/boot/$mac.ipxe" >>"$WORK/paths"
  ((i > 0)) && args+=(--next)
  args+=(-sS -o "$WORK/www/boot/$mac.ipxe" -w '%{http_code}\n' "$URL/boot/$mac.ipxe")
done
while read -r code; do
  [[ $code == 200 ]] || die "GET /boot/<mac>.ipxe answered $code"
done < <(curl --noproxy '*' "${args[@]}")
grep -q "^initrd --name initrd.img " "$WORK/www/boot/$(node_mac 0).ipxe" ||
  die "the script of lab000 is not the full node script"
script_bytes=$(cat "$WORK/www/boot/"*.ipxe | wc -c)
script_avg=$((script_bytes / nodes))

# --- nginx: the same bytes as static files at the same paths ----------------------
chmod 711 "$WORK"
chmod -R a+rX "$WORK/www"
nginx_server_block="    root $WORK/www;
    types { }
    default_type 'text/plain; charset=utf-8';
    add_header Cache-Control no-store;"
start_nginx_on_free_port "/boot/$(node_mac 0).ipxe"

# nginx serves the saved bytes; provisiond renders them again the same, apart
# from the random retry delay ("retrying in N s", "sleep N").
mask() { sed -E 's/retrying in [0-9]+ s$/retrying in J s/; s/^sleep [0-9]+$/sleep J/'; }
for i in 0 $((nodes - 1)); do
  mac=$(node_mac "$i")
  curl -sS --noproxy '*' -o "$WORK/check" "$nginx_url/boot/$mac.ipxe"
  cmp -s "$WORK/check" "$WORK/www/boot/$mac.ipxe" || die "nginx does not serve the saved script of $mac"
  curl -sS --noproxy '*' -o "$WORK/check" "$URL/boot/$mac.ipxe"
  if [[ $(wc -c <"$WORK/check") != $(wc -c <"$WORK/www/boot/$mac.ipxe") ]] ||
    ! cmp -s <(mask <"$WORK/check") <(mask <"$WORK/www/boot/$mac.ipxe"); then
    die "provisiond renders the script of $mac differently from the saved one"
  fi
done

# --- measurement ----------------------------------------------------------------------
hz=$(getconf CLK_TCK)
# $1: base URL, $2: server pid, $3: seconds. Sets rps p50 p90 p99 pmax reqs
# errs srv_cpu_s; fails on errors (non-2xx/3xx, socket errors).
run_wrk() {
  local base=$1 pid=$2 secs=$3 out line c0 c1 kv
  local -A r=()
  c0=$(cpu_ticks "$pid")
  out=$("${client_cmd[@]}" "$wrk_bin" -t"$threads" -c"$connections" -d"${secs}s" --latency -s "$lua" "$base" \
    -- "$WORK/paths" "$threads" 2>&1) || die "wrk against $base failed: $out"
  c1=$(cpu_ticks "$pid")
  echo "$out" >>"$WORK/wrk.log"
  line=$(grep '^RESULT ' <<<"$out") || die "no RESULT line from wrk: $out"
  for kv in ${line#RESULT }; do r[${kv%%=*}]=${kv#*=}; done
  reqs=${r[requests]}
  errs=$((r[connect] + r[read] + r[write] + r[status] + r[timeout]))
  ((reqs > 0)) || die "wrk made no requests against $base"
  rps=$(awk -v n="$reqs" -v d="${r[duration_us]}" 'BEGIN { printf "%.0f", n / (d / 1e6) }')
  p50=$(awk -v u="${r[p50_us]}" 'BEGIN { printf "%.2f", u / 1000 }')
  p90=$(awk -v u="${r[p90_us]}" 'BEGIN { printf "%.2f", u / 1000 }')
  p99=$(awk -v u="${r[p99_us]}" 'BEGIN { printf "%.2f", u / 1000 }')
  pmax=$(awk -v u="${r[max_us]}" 'BEGIN { printf "%.2f", u / 1000 }')
  srv_cpu_s=$(awk -v a="$c0" -v b="$c1" -v hz="$hz" 'BEGIN { printf "%.2f", (b - a) / hz }')
  errs_detail="connect ${r[connect]}, read ${r[read]}, write ${r[write]}, status ${r[status]}, timeout ${r[timeout]}"
}

if ((warmup > 0)); then
  run_wrk "$URL" "$PROVISIOND_PID" "$warmup"
  run_wrk "$nginx_url" "$nginx_pid" "$warmup"
fi

p_rps=() n_rps=() p_p99=() n_p99=() p_p50=() n_p50=() p_cpu=() n_cpu=() p_events=() p_reqs=()
rows=()
total_p_errs=0 total_n_errs=0
run_one() {  # $1: provisiond|nginx, $2: round
  local ev0 ev1 events='' per=''
  if [[ $1 == provisiond ]]; then
    ev0=$(last_event)
    run_wrk "$URL" "$PROVISIOND_PID" "$duration"
    ev1=$(last_event)
    events=$((ev1 - ev0))
    per=$(awk -v e="$events" -v n="$reqs" 'BEGIN { printf "%.3f", e / n }')
    p_rps+=("$rps"); p_p99+=("$p99"); p_p50+=("$p50"); p_cpu+=("$srv_cpu_s")
    p_events+=("$events"); p_reqs+=("$reqs")
    total_p_errs=$((total_p_errs + errs))
  else
    run_wrk "$nginx_url" "$nginx_pid" "$duration"
    n_rps+=("$rps"); n_p99+=("$p99"); n_p50+=("$p50"); n_cpu+=("$srv_cpu_s")
    total_n_errs=$((total_n_errs + errs))
  fi
  ((errs == 0)) || echo "$bench: run $2 $1: $errs errors ($errs_detail)" >&2
  rows+=("$(printf '%-5s %-11s %9s %9s %9s %9s %9s %8s %10s %10s %8s' "$2" "$1" "$rps" "$p50" "$p90" \
    "$p99" "$pmax" "$errs" "$srv_cpu_s" "$events" "$per")")
}
for ((r = 1; r <= runs; r++)); do
  if ((r % 2 == 1)); then
    run_one provisiond "$r"; run_one nginx "$r"
  else
    run_one nginx "$r"; run_one provisiond "$r"
  fi
done

p_rps_med=$(median "${p_rps[@]}" | awk '{ printf "%.0f", $1 }')
n_rps_med=$(median "${n_rps[@]}" | awk '{ printf "%.0f", $1 }')
p_p99_med=$(median "${p_p99[@]}")
n_p99_med=$(median "${n_p99[@]}")
p_p50_med=$(median "${p_p50[@]}")
n_p50_med=$(median "${n_p50[@]}")
p_cpu_med=$(median "${p_cpu[@]}" | awk '{ printf "%.2f", $1 }')
n_cpu_med=$(median "${n_cpu[@]}" | awk '{ printf "%.2f", $1 }')
p_p50_med=$(awk -v v="$p_p50_med" 'BEGIN { printf "%.2f", v }')
n_p50_med=$(awk -v v="$n_p50_med" 'BEGIN { printf "%.2f", v }')
p_p99_med=$(awk -v v="$p_p99_med" 'BEGIN { printf "%.2f", v }')
n_p99_med=$(awk -v v="$n_p99_med" 'BEGIN { printf "%.2f", v }')
rps_ratio=$(awk -v a="$p_rps_med" -v b="$n_rps_med" 'BEGIN { printf "%.3f", a / b }')
p99_ratio=$(awk -v a="$p_p99_med" -v b="$n_p99_med" 'BEGIN { printf "%.2f", a / b }')
# Ratios within each round (the two runs back to back), less exposed to load
# that drifts between rounds.
round_rps=() round_p99=()
for ((r = 0; r < runs; r++)); do
  round_rps+=("$(awk -v a="${p_rps[r]}" -v b="${n_rps[r]}" 'BEGIN { printf "%.3f", a / b }')")
  round_p99+=("$(awk -v a="${p_p99[r]}" -v b="${n_p99[r]}" 'BEGIN { printf "%.2f", a / b }')")
done
round_rps_med=$(median "${round_rps[@]}")
round_p99_med=$(median "${round_p99[@]}" | awk '{ printf "%.2f", $1 }')
events_total=0 reqs_total=0
for ((i = 0; i < ${#p_events[@]}; i++)); do
  events_total=$((events_total + p_events[i])); reqs_total=$((reqs_total + p_reqs[i]))
done
nginx_version=$("$nginx_bin" -v 2>&1 | sed 's/^nginx version: //')
wrk_version=$("$wrk_bin" -v 2>&1 | head -n 1 | cut -d' ' -f1-2 || true)
cpus=$(nproc)
date_utc=$(date -u +%Y-%m-%dT%H:%M:%SZ)

echo "$bench: GET /boot/<mac>.ipxe rotating over $nodes nodes, $script_avg bytes per script (average)"
echo "wrk -t$threads -c$connections -d${duration}s --latency, $runs runs per server after ${warmup}s warm-up each, alternating"
echo "$cpus CPUs, pinning: $pin, load average $load_before at start, $nginx_version (static files, workers: $nginx_workers), $wrk_version"
printf '%-5s %-11s %9s %9s %9s %9s %9s %8s %10s %10s %8s\n' run server "req/s" "p50 ms" "p90 ms" \
  "p99 ms" "max ms" errors "srv CPU s" events "ev/req"
printf '%s\n' "${rows[@]}"
printf '%-17s %9s %9s %9s %9s %9s %8s %10s\n' "median provisiond" "$p_rps_med" "$p_p50_med" "" "$p_p99_med" "" "" "$p_cpu_med"
printf '%-17s %9s %9s %9s %9s %9s %8s %10s\n' "median nginx" "$n_rps_med" "$n_p50_med" "" "$n_p99_med" "" "" "$n_cpu_med"
echo "ratio provisiond/nginx: req/s $rps_ratio (goal >= 0.5), p99 $p99_ratio (goal <= 2)"
echo "ratio within each round: req/s ${round_rps[*]} (median $round_rps_med); p99 ${round_p99[*]} (median $round_p99_med)"
echo "events provisiond wrote in its measured runs: $events_total for $reqs_total requests wrk completed (GET /api/v1/status last_event;"
echo "  the surplus is requests still in flight when wrk stopped, at most one per connection)"

cat >"$json_out" <<EOF
{
  "benchmark": "boot_script",
  "date": "$date_utc",
  "machine": {"hostname": "$(uname -n)", "cpus": $cpus, "loadavg_at_start": "$load_before"},
  "pinning": "$pin",
  "request": "GET /boot/<mac>.ipxe",
  "nodes": $nodes,
  "script_bytes_avg": $script_avg,
  "wrk": {"version": "$wrk_version", "threads": $threads, "connections": $connections,
          "duration_s": $duration, "warmup_s": $warmup},
  "runs": $runs,
  "provisiond": {"median_rps": $p_rps_med, "median_p50_ms": $p_p50_med, "median_p99_ms": $p_p99_med,
                 "rps": [$(join_csv "${p_rps[@]}")], "p99_ms": [$(join_csv "${p_p99[@]}")],
                 "server_cpu_s": [$(join_csv "${p_cpu[@]}")], "errors": $total_p_errs,
                 "events": [$(join_csv "${p_events[@]}")], "requests": [$(join_csv "${p_reqs[@]}")]},
  "nginx": {"version": "$nginx_version", "workers": "$nginx_workers", "median_rps": $n_rps_med,
            "median_p50_ms": $n_p50_med, "median_p99_ms": $n_p99_med,
            "rps": [$(join_csv "${n_rps[@]}")], "p99_ms": [$(join_csv "${n_p99[@]}")],
            "server_cpu_s": [$(join_csv "${n_cpu[@]}")], "errors": $total_n_errs},
  "ratio_rps_provisiond_over_nginx": $rps_ratio,
  "ratio_p99_provisiond_over_nginx": $p99_ratio,
  "ratio_rps_per_round": [$(join_csv "${round_rps[@]}")],
  "ratio_p99_per_round": [$(join_csv "${round_p99[@]}")]
}
EOF
echo "results: $json_out"
