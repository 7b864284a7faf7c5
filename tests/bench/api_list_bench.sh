#!/usr/bin/env bash
# api_list_bench.sh: latency of GET /api/v1/nodes (the whole inventory as JSON)
# from provisiond, next to nginx serving the very same response bytes as a
# static file (sendfile on), both fetched with curl in the same run.
#
# provisiond runs on a fresh data dir in a mktemp directory; its database is
# seeded with bench_seed_nodes before the daemon starts. nginx runs as our own
# process (not the system service) with a generated config, pid file, logs and
# temp paths in the same directory. Both are stopped by pid, and the
# directory removed, when the script ends, also on failure or Ctrl-C.
#
# Usage: tests/bench/api_list_bench.sh [options]
#   --build-dir DIR    where provisiond and bench_seed_nodes were built
#                      (default: <repo>/build-bench)
#   --provisiond PATH  the daemon (default: DIR/provisiond/provisiond)
#   --seeder PATH      default: DIR/tests/bench/bench_seed_nodes
#   --nginx PATH       default: nginx from PATH, else /usr/sbin/nginx
#   --nodes N          nodes in the inventory (default 10000)
#   --runs N           measured fetches per server (default 20)
#   --json FILE        results (default: DIR/tests/bench/api_list_bench.json)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build_dir=$repo/build-bench
provisiond='' seeder='' nginx_bin='' json_out=''
nodes=10000 runs=20 warmup=2

usage() {
  sed -n '/^# Usage:/,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
}
while (($#)); do
  case $1 in
    --build-dir) build_dir=${2:?}; shift 2 ;;
    --provisiond) provisiond=${2:?}; shift 2 ;;
    --seeder) seeder=${2:?}; shift 2 ;;
    --nginx) nginx_bin=${2:?}; shift 2 ;;
    --nodes) nodes=${2:?}; shift 2 ;;
    --runs) runs=${2:?}; shift 2 ;;
    --json) json_out=${2:?}; shift 2 ;;
    -h | --help) usage ;;
    *) echo "api_list_bench: unknown argument '$1'" >&2; usage ;;
  esac
done
[[ $nodes =~ ^[1-9][0-9]*$ && $nodes -le 99999 ]] || { echo "--nodes must be 1..99999" >&2; exit 2; }
[[ $runs =~ ^[1-9][0-9]*$ && $runs -le 1000 ]] || { echo "--runs must be 1..1000" >&2; exit 2; }
provisiond=${provisiond:-$build_dir/provisiond/provisiond}
seeder=${seeder:-$build_dir/tests/bench/bench_seed_nodes}
json_out=${json_out:-$build_dir/tests/bench/api_list_bench.json}
if [[ -z $nginx_bin ]]; then
  nginx_bin=$(command -v nginx || true)
  [[ -n $nginx_bin ]] || nginx_bin=/usr/sbin/nginx
fi

PROVISIOND=$provisiond WORK_NAME=api-list-bench
# shellcheck source=tests/lib.sh
source "$repo/tests/lib.sh"
FAILURE_LOGS+=("$WORK/nginx/error.log")
for f in "$provisiond" "$seeder"; do
  [[ -x $f ]] || die "$f is not built (cmake --build $build_dir), or pass its path"
done
[[ -x $nginx_bin ]] || die "nginx not found: apt-get install nginx-light, or pass --nginx PATH"
command -v curl >/dev/null || die "curl not found"
mkdir -p "$(dirname "$json_out")"

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
nginx_pid=''

# --- provisiond, seeded before it starts -----------------------------------
mkdir -p "$WORK/bench/data"
chmod 700 "$WORK/bench/data"
"$seeder" "$WORK/bench/data/provisiond.db" "$nodes" >&2
start_provisiond bench
provisiond_url="$URL/api/v1/nodes"

# The exact bytes provisiond answers; nginx serves this file at the same path.
mkdir -p "$WORK/www/api/v1"
code=$(curl -sS --noproxy '*' -H "Authorization: Bearer $TOKEN" -o "$WORK/www/api/v1/nodes" -w '%{http_code}' "$provisiond_url")
[[ $code == 200 ]] || die "GET $provisiond_url answered $code"
count=$(tail -c 40 "$WORK/www/api/v1/nodes" | sed -n 's/.*"count":\([0-9]*\)}$/\1/p')
[[ $count == "$nodes" ]] || die "GET $provisiond_url listed '${count}' nodes, expected $nodes"
body_bytes=$(stat -c %s "$WORK/www/api/v1/nodes")

# --- nginx on a free loopback port -------------------------------------------
# nginx's workers run as 'nobody' when it is started by root: let them reach
# the document root, nothing else of the directory.
chmod 711 "$WORK"
chmod -R a+rX "$WORK/www"
mkdir -p "$WORK/nginx"
start_nginx() {  # $1: port; returns 0 once nginx answers on it
  local port=$1 i
  cat >"$WORK/nginx/nginx.conf" <<EOF
worker_processes 1;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events { worker_connections 64; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  client_body_temp_path $WORK/nginx/body;
  proxy_temp_path $WORK/nginx/proxy;
  fastcgi_temp_path $WORK/nginx/fastcgi;
  uwsgi_temp_path $WORK/nginx/uwsgi;
  scgi_temp_path $WORK/nginx/scgi;
  default_type application/json;
  server {
    listen 127.0.0.1:$port;
    root $WORK/www;
  }
}
EOF
  "$nginx_bin" -p "$WORK/nginx" -e "$WORK/nginx/error.log" -c "$WORK/nginx/nginx.conf" \
    -g 'daemon off;' >>"$WORK/nginx/stdout.log" 2>&1 &
  nginx_pid=$!
  PIDS+=("$nginx_pid")
  for ((i = 0; i < 100; i++)); do  # up to 5 s
    curl -sfI --noproxy '*' -o /dev/null "http://127.0.0.1:$port/api/v1/nodes" && return 0
    kill -0 "$nginx_pid" 2>/dev/null || break
    sleep 0.05
  done
  stop_pid "$nginx_pid"
  nginx_pid=
  return 1
}
nginx_port=
for ((try = 0; try < 5; try++)); do
  port=$((20000 + RANDOM % 40000))
  ss -Htln "sport = :$port" | grep -q . && continue
  if start_nginx "$port"; then nginx_port=$port; break; fi
done
[[ -n $nginx_port ]] || die "nginx did not start (see its error log below)"
nginx_url="http://127.0.0.1:$nginx_port/api/v1/nodes"
curl -sS --noproxy '*' -o "$WORK/nginx-body" "$nginx_url"
cmp -s "$WORK/nginx-body" "$WORK/www/api/v1/nodes" || die "nginx does not serve the same bytes"

# --- measurement -------------------------------------------------------------
# One curl process and one new connection per fetch, body to /dev/null. The
# two servers alternate, and which goes first alternates per iteration.
fetch() {  # $1: url; sets ms; fails on a wrong status or size
  local out code size secs
  # Both get the token (nginx ignores it): the same request bytes.
  out=$(curl -sS --noproxy '*' -H "Authorization: Bearer $TOKEN" -o /dev/null \
    -w '%{http_code} %{size_download} %{time_total}' "$1")
  read -r code size secs <<<"$out"
  [[ $code == 200 && $size == "$body_bytes" ]] ||
    die "GET $1 answered $code with $size bytes (expected 200, $body_bytes)"
  ms=$(awk -v s="$secs" 'BEGIN { printf "%.3f", s * 1000 }')
}
for ((i = 0; i < warmup; i++)); do
  fetch "$provisiond_url"
  fetch "$nginx_url"
done
p_ms=() n_ms=()
for ((i = 0; i < runs; i++)); do
  if ((i % 2 == 0)); then
    fetch "$provisiond_url"; p_ms+=("$ms")
    fetch "$nginx_url"; n_ms+=("$ms")
  else
    fetch "$nginx_url"; n_ms+=("$ms")
    fetch "$provisiond_url"; p_ms+=("$ms")
  fi
done

# median (mean of the middle two for an even count) and p90 (nearest rank)
stats() {
  printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END {
    n = NR; med = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    r = int(0.9 * n); if (r < 0.9 * n) r++; if (r < 1) r = 1
    printf "%.3f %.3f %.3f %.3f\n", med, v[r], v[1], v[n] }'
}
read -r p_med p_p90 p_min p_max <<<"$(stats "${p_ms[@]}")"
read -r n_med n_p90 n_min n_max <<<"$(stats "${n_ms[@]}")"
ratio=$(awk -v a="$p_med" -v b="$n_med" 'BEGIN { printf "%.2f", a / b }')
nginx_version=$("$nginx_bin" -v 2>&1 | sed 's/^nginx version: //')
curl_version=$(curl --version | head -n 1 | cut -d' ' -f1-2)
cpus=$(nproc)
date_utc=$(date -u +%Y-%m-%dT%H:%M:%SZ)

echo "api_list_bench: GET /api/v1/nodes, $nodes nodes, $body_bytes bytes per response"
echo "$runs fetches per server after $warmup warm-up, alternating; curl per fetch, new connection"
echo "$cpus CPUs, load average $load_before at start, $nginx_version, $curl_version"
printf '%-24s %10s %10s %10s %10s\n' server "median ms" "p90 ms" "min ms" "max ms"
printf '%-24s %10s %10s %10s %10s\n' provisiond "$p_med" "$p_p90" "$p_min" "$p_max"
printf '%-24s %10s %10s %10s %10s\n' "nginx (static, sendfile)" "$n_med" "$n_p90" "$n_min" "$n_max"
echo "ratio provisiond/nginx (medians): $ratio"

join() { local IFS=,; echo "$*"; }
cat >"$json_out" <<EOF
{
  "benchmark": "api_list",
  "date": "$date_utc",
  "machine": {"hostname": "$(uname -n)", "cpus": $cpus, "loadavg_at_start": "$load_before"},
  "request": "GET /api/v1/nodes",
  "nodes": $nodes,
  "response_bytes": $body_bytes,
  "runs": $runs,
  "warmup": $warmup,
  "provisiond": {"median_ms": $p_med, "p90_ms": $p_p90, "min_ms": $p_min, "max_ms": $p_max,
                 "ms": [$(join "${p_ms[@]}")]},
  "nginx": {"version": "$nginx_version", "median_ms": $n_med, "p90_ms": $n_p90,
            "min_ms": $n_min, "max_ms": $n_max, "ms": [$(join "${n_ms[@]}")]},
  "ratio_provisiond_over_nginx": $ratio,
  "client": "$curl_version"
}
EOF
echo "results: $json_out"
