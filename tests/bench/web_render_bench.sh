#!/usr/bin/env bash
# web_render_bench.sh: time to the first rendered rows of the web page's node
# table with 10,000 nodes, loaded in Debian's Chromium from provisiond, next
# to nginx serving the same page with static snapshots of the API answers the
# page reads first (/api/v1/status and /api/v1/nodes, the exact bytes
# provisiond sent). The difference is what provisiond's live answers cost
# against static files; the page's own work (parse 10,000 nodes, sort, build
# 500 rows) is the same on both.
#
# provisiond runs on a fresh data dir in a mktemp directory, seeded with
# bench_seed_nodes before it starts. nginx runs as our own process (not the
# system service) with a generated config, pid file and logs in the same
# directory; its /api/v1/events answers 503, so the page's long-poll backs
# off (3 s) instead of spinning on a static file. Both are stopped by pid and
# the directory removed when the script ends, also on failure or Ctrl-C.
#
# Usage: tests/bench/web_render_bench.sh [options]
#   --build-dir DIR    where provisiond and bench_seed_nodes were built
#                      (default: <repo>/build-bench)
#   --provisiond PATH  the daemon (default: DIR/provisiond/provisiond)
#   --seeder PATH      default: DIR/tests/bench/bench_seed_nodes
#   --nginx PATH       default: nginx from PATH, else /usr/sbin/nginx
#   --chromium PATH    default: /usr/bin/chromium
#   --nodes N          nodes in the inventory (default 10000)
#   --loads N          measured page loads per server (default 5)
#   --json FILE        results (default: DIR/tests/bench/web_render_bench.json)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build_dir=$repo/build-bench
provisiond='' seeder='' nginx_bin='' json_out='' chromium=/usr/bin/chromium
nodes=10000 loads=5

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
    --chromium) chromium=${2:?}; shift 2 ;;
    --nodes) nodes=${2:?}; shift 2 ;;
    --loads) loads=${2:?}; shift 2 ;;
    --json) json_out=${2:?}; shift 2 ;;
    -h | --help) usage ;;
    *) echo "web_render_bench: unknown argument '$1'" >&2; usage ;;
  esac
done
[[ $nodes =~ ^[1-9][0-9]*$ && $nodes -le 99999 && $nodes -ge 500 ]] || { echo "--nodes must be 500..99999" >&2; exit 2; }
[[ $loads =~ ^[1-9][0-9]*$ && $loads -le 100 ]] || { echo "--loads must be 1..100" >&2; exit 2; }
provisiond=${provisiond:-$build_dir/provisiond/provisiond}
seeder=${seeder:-$build_dir/tests/bench/bench_seed_nodes}
json_out=${json_out:-$build_dir/tests/bench/web_render_bench.json}
if [[ -z $nginx_bin ]]; then
  nginx_bin=$(command -v nginx || true)
  [[ -n $nginx_bin ]] || nginx_bin=/usr/sbin/nginx
fi

PROVISIOND=$provisiond WORK_NAME=web-render-bench
# shellcheck source=tests/lib.sh
source "$repo/tests/lib.sh"
FAILURE_LOGS+=("$WORK/nginx/error.log")
for f in "$provisiond" "$seeder"; do
  [[ -x $f ]] || die "$f is not built (cmake --build $build_dir), or pass its path"
done
[[ -x $nginx_bin ]] || die "nginx not found: apt-get install nginx-light, or pass --nginx PATH"
[[ -x $chromium ]] || die "chromium not found: apt-get install chromium, or pass --chromium PATH"
[[ -d $repo/tests/web/node_modules/playwright-core ]] || die "playwright-core is missing: (cd tests/web && npm ci)"
command -v node >/dev/null || die "node not found: apt-get install nodejs"
command -v curl >/dev/null || die "curl not found"
mkdir -p "$(dirname "$json_out")"

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
nginx_pid=''
# The browser's HOME, cache and crash dumps stay in the directory.
export HOME="$WORK/home" XDG_CONFIG_HOME="$WORK/home/.config" XDG_CACHE_HOME="$WORK/home/.cache"
mkdir -p "$HOME"

# --- provisiond, seeded before it starts -----------------------------------
mkdir -p "$WORK/bench/data"
chmod 700 "$WORK/bench/data"
"$seeder" "$WORK/bench/data/provisiond.db" "$nodes" >&2
start_provisiond bench "web_dir: $repo/web"

# --- the same page and snapshots for nginx ----------------------------------
mkdir -p "$WORK/www/web" "$WORK/www/api/v1"
cp "$repo/web/index.html" "$WORK/www/index.html"
cp "$repo/web/"*.js "$repo/web/"*.css "$WORK/www/web/"
for p in status nodes; do
  code=$(curl -sS --noproxy '*' -o "$WORK/www/api/v1/$p" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "$URL/api/v1/$p")
  [[ $code == 200 ]] || die "GET $URL/api/v1/$p answered $code"
done
count=$(tail -c 40 "$WORK/www/api/v1/nodes" | sed -n 's/.*"count":\([0-9]*\)}$/\1/p')
[[ $count == "$nodes" ]] || die "GET /api/v1/nodes listed '${count}' nodes, expected $nodes"
# The pages the web page asks for (GET /api/v1/nodes?limit=2000&after=NAME), as
# provisiond answers them: nginx serves page-<after>.json for each.
mkdir -p "$WORK/www/api/v1/pages"
after=''
while :; do
  page="$WORK/www/api/v1/pages/after-$after.json"
  code=$(curl -sS --noproxy '*' -o "$page" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" \
    "$URL/api/v1/nodes?limit=2000${after:+&after=$after}")
  [[ $code == 200 ]] || die "GET /api/v1/nodes?limit=2000&after=$after answered $code"
  after=$(grep -o '"next":"[^"]*"' "$page" | cut -d'"' -f4 || true)
  [[ -n $after ]] || break
done
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
  types { text/html html; text/javascript js; text/css css; }
  server {
    listen 127.0.0.1:$port;
    root $WORK/www;
    location /api/v1/ { default_type application/json; }
    location = /api/v1/nodes { default_type application/json; try_files /api/v1/pages/after-\$arg_after.json =404; }
    location = /api/v1/events { return 503; }
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
nginx_url="http://127.0.0.1:$nginx_port"
for f in "$WORK/www/api/v1/pages/"after-*.json; do
  after=${f##*/after-}
  after=${after%.json}
  curl -sS --noproxy '*' -o "$WORK/nginx-body" "$nginx_url/api/v1/nodes?limit=2000${after:+&after=$after}"
  cmp -s "$WORK/nginx-body" "$f" || die "nginx does not serve the same bytes as provisiond for the page after '$after'"
done

# --- measurement -------------------------------------------------------------
servers="[{\"name\":\"provisiond\",\"url\":\"$URL\"},{\"name\":\"nginx\",\"url\":\"$nginx_url\"}]"
TOKEN=$TOKEN SERVERS=$servers LOADS=$loads COUNT=$nodes CHROMIUM=$chromium \
  node "$repo/tests/bench/web_render_bench.js" >"$WORK/result.json"

nginx_version=$("$nginx_bin" -v 2>&1 | sed 's/^nginx version: //')
date_utc=$(date -u +%Y-%m-%dT%H:%M:%SZ)
node - "$WORK/result.json" "$json_out" "$date_utc" "$(uname -n)" "$(nproc)" "$load_before" "$nginx_version" <<'EOF'
const fs = require('fs');
const [file, out, date, host, cpus, load, nginx] = process.argv.slice(2);
const r = JSON.parse(fs.readFileSync(file, 'utf8'));
const p = r.servers.provisiond, n = r.servers.nginx;
const f = (x) => x.toFixed(0).padStart(10);
console.log(`web_render_bench: the node table's first rows, ${r.nodes} nodes, ${r.loads} loads per server ` +
  `after 1 warm-up, alternating; a new browser context per load`);
console.log(`${cpus} CPUs, load average ${load} at start, Chromium ${r.chromium}, ${nginx}`);
console.log('server'.padEnd(28) + 'first render ms'.padStart(16) + 'nodes JSON ms'.padStart(16) + 'render after ms'.padStart(16) + '   (medians)');
for (const [name, s] of [['provisiond', p], ['nginx (static snapshots)', n]])
  console.log(name.padEnd(28) + f(s.median_first_render_ms).padStart(16) + f(s.median_nodes_json_ms).padStart(16) +
    f(s.median_render_after_json_ms).padStart(16));
console.log('first render per load, ms: provisiond ' + p.runs.map((x) => x.first_render_ms.toFixed(0)).join(' ') +
  '; nginx ' + n.runs.map((x) => x.first_render_ms.toFixed(0)).join(' '));
const ratio = p.median_first_render_ms / n.median_first_render_ms;
console.log(`ratio provisiond/nginx (median first render): ${ratio.toFixed(2)}`);
fs.writeFileSync(out, JSON.stringify({ benchmark: 'web_render', date, machine: { hostname: host, cpus: Number(cpus),
  loadavg_at_start: load }, nginx, ...r, ratio_provisiond_over_nginx: Number(ratio.toFixed(3)) }, null, 2) + '\n');
EOF
echo "results: $json_out"
