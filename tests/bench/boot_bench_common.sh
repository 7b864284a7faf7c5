# shellcheck shell=bash disable=SC2034,SC2154
# boot_bench_common.sh: shared by boot_storm_bench.sh and boot_script_bench.sh
# (sourced, not run). Starts provisiond on a fresh data dir in a temp
# directory, enrolls lab nodes covered by the `lab` profile with an imported
# image, starts nginx as our own process with every path in the temp
# directory, and stops both by pid (and removes the directory) on exit,
# failure or Ctrl-C.
#
# The sourcing script sets: bench (name for messages), repo, and before
# calling bench_init: tmp_base (where mktemp -d goes).

die() { echo "$bench: $*" >&2; exit 1; }

provisiond_pid='' nginx_pid='' tmp=''
# Command prefixes for the servers and the clients: empty, or taskset with
# --pin SERVER_CPUS:CLIENT_CPUS (see parse_pin).
server_cmd=() client_cmd=() pin=none
parse_pin() {  # $1: e.g. 0:1 or 0-1:2-3
  [[ $1 =~ ^([0-9,-]+):([0-9,-]+)$ ]] || { echo "--pin expects SERVER_CPUS:CLIENT_CPUS, e.g. 0:1" >&2; exit 2; }
  command -v taskset >/dev/null || { echo "--pin needs taskset (util-linux)" >&2; exit 2; }
  server_cmd=(taskset -c "${BASH_REMATCH[1]}")
  client_cmd=(taskset -c "${BASH_REMATCH[2]}")
  pin="servers on CPU ${BASH_REMATCH[1]}, clients on CPU ${BASH_REMATCH[2]}"
}

# Stops what this script started, by pid.
stop_pid() {
  local pid=$1 i
  [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null || true
}
# Extra pids (clients) the sourcing script started; stopped first.
client_pids=()
bench_cleanup() {
  local rc=$? pid
  for pid in "${client_pids[@]}"; do
    kill -0 "$pid" 2>/dev/null && kill -TERM "$pid" 2>/dev/null
  done
  for pid in "${client_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  stop_pid "$nginx_pid"
  stop_pid "$provisiond_pid"
  if ((rc != 0)) && [[ -n $tmp ]]; then
    for log in "$tmp/provisiond.log" "$tmp/nginx/error.log"; do
      [[ -s $log ]] && { echo "--- $log (last lines)" >&2; tail -n 20 "$log" >&2; }
    done
  fi
  [[ -n $tmp ]] && rm -rf "$tmp"
  exit "$rc"
}

bench_init() {
  tmp=$(mktemp -d "$tmp_base/$bench.XXXXXX")
  trap bench_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

# --- provisiond ----------------------------------------------------------------
# Starts it on $tmp/data; sets provisiond_url and token (the admin token it
# created in $tmp/data/tokens). $listen_threads, when set, is its
# listen_threads (0: a thread per connection, as before the event loops);
# $extra_config, when set, is added to its config file.
start_provisiond() {
  local i
  mkdir -p "$tmp/data"
  chmod 700 "$tmp/data"
  cat >"$tmp/provisiond.yaml" <<EOF
listen: 127.0.0.1:0
data_dir: $tmp/data
import_dir: $tmp/src
profiles_dir: $repo/profiles
playbooks_dir: $repo/playbooks
pxe_dir: $repo/pxe
EOF
  [[ -z ${listen_threads:-} ]] || echo "listen_threads: $listen_threads" >>"$tmp/provisiond.yaml"
  [[ -z ${extra_config:-} ]] || printf '%s\n' "$extra_config" >>"$tmp/provisiond.yaml"
  "${server_cmd[@]}" "$provisiond" -c "$tmp/provisiond.yaml" >"$tmp/provisiond.log" 2>&1 &
  provisiond_pid=$!
  for ((i = 0; i < 200; i++)); do  # up to 10 s
    [[ -s $tmp/data/provisiond.url ]] && break
    kill -0 "$provisiond_pid" 2>/dev/null || die "provisiond exited during start"
    sleep 0.05
  done
  [[ -s $tmp/data/provisiond.url ]] || die "provisiond wrote no $tmp/data/provisiond.url in 10 s"
  provisiond_url=$(<"$tmp/data/provisiond.url")
  token=$(sed -n 's/#.*//; s/^[[:space:]]*\([^[:space:]]\{1,\}\).*/\1/p' "$tmp/data/tokens" | head -n 1)
  [[ -n $token ]] || die "no token in $tmp/data/tokens"
}

# provisionctl against our daemon, with its token.
ctl() {
  PROVISIOND_URL=$provisiond_url PROVISIOND_TOKEN=$token "$provisionctl" "$@"
}

# Imports image `lab` (kernel of $1 MiB, initrd of $2 MiB, random bytes) and
# applies profile `lab`; the source files are removed afterwards, so only the
# image store's copy is on disk (and in the page cache). Sets image_dir.
setup_lab_image() {
  local kernel_mib=$1 initrd_mib=$2 dirs
  mkdir -p "$tmp/src"
  head -c "${kernel_mib}M" /dev/urandom >"$tmp/src/vmlinuz"
  head -c "${initrd_mib}M" /dev/urandom >"$tmp/src/initrd.img"
  # What the import checks look for: the x86 boot header, gzip's magic.
  printf 'HdrS' | dd of="$tmp/src/vmlinuz" bs=1 seek=514 conv=notrunc status=none
  printf '\037\213' | dd of="$tmp/src/initrd.img" bs=1 seek=0 conv=notrunc status=none
  ctl image import lab --kernel "$tmp/src/vmlinuz" --initrd "$tmp/src/initrd.img" >/dev/null ||
    die "provisionctl image import failed"
  rm -rf "$tmp/src"
  ctl profile apply lab --yes >/dev/null || die "provisionctl profile apply lab failed"
  dirs=("$tmp"/data/images/lab/*/)
  if ((${#dirs[@]} != 1)) || [[ ! -s ${dirs[0]}initrd.img ]]; then
    die "expected one imported version under $tmp/data/images/lab"
  fi
  image_dir=${dirs[0]%/}
}

# MAC of lab node $1 (52:54:00:00:HH:LL), in iPXE's hyphenated form.
node_mac() { printf '52-54-00-00-%02x-%02x' $(($1 / 256)) $(($1 % 256)); }

# Enrolls lab000..lab(N-1) through POST /api/v1/nodes (one curl process, the
# requests on one connection) and checks that each got an image.
enroll_nodes() {
  local n=$1 i args=() code
  for ((i = 0; i < n; i++)); do
    ((i > 0)) && args+=(--next)
    args+=(-sS -o /dev/null -w '%{http_code}\n' -X POST -H "Authorization: Bearer $token"
      -H 'Content-Type: application/json'
      --data "{\"hostname\":\"lab$(printf %03d "$i")\",\"mac\":\"$(node_mac "$i" | tr - :)\"}"
      "$provisiond_url/api/v1/nodes")
  done
  while read -r code; do
    [[ $code == 201 ]] || die "POST /api/v1/nodes answered $code"
  done < <(curl --noproxy '*' "${args[@]}")
  local without
  local list count
  list=$(curl -sS --noproxy '*' -H "Authorization: Bearer $token" "$provisiond_url/api/v1/nodes")
  count=$(sed -n 's/.*"count":\([0-9]*\)}$/\1/p' <<<"$list")
  without=$({ grep -o '"image":""' <<<"$list" || true; } | wc -l)
  [[ $count == "$n" && $without == 0 ]] ||
    die "after enrolling $n nodes: $count listed, $without of them without an image"
}

# Events recorded so far (GET /api/v1/status -> last_event).
last_event() {
  local n
  n=$(curl -sS --noproxy '*' -H "Authorization: Bearer $token" "$provisiond_url/api/v1/status" |
    sed -n 's/.*"last_event":\([0-9]*\).*/\1/p')
  [[ -n $n ]] || die "GET /api/v1/status has no last_event"
  echo "$n"
}

# --- nginx ----------------------------------------------------------------------
# start_nginx_on_free_port CHECK_PATH: writes $tmp/nginx/nginx.conf from
# nginx_server_block (the body of the server {} block), nginx_workers and
# nginx_worker_connections (each worker's; 4096 unless set), nginx_backlog
# (listen's backlog; 4096 unless set), and starts nginx on a free 127.0.0.1 port. Sets nginx_pid and nginx_url.
start_nginx_on_free_port() {
  local check=$1 port try i
  mkdir -p "$tmp/nginx"
  for ((try = 0; try < 5; try++)); do
    port=$((20000 + RANDOM % 40000))
    ss -Htln "sport = :$port" | grep -q . && continue
    cat >"$tmp/nginx/nginx.conf" <<EOF
worker_processes $nginx_workers;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log warn;
events { worker_connections ${nginx_worker_connections:-4096}; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  client_body_temp_path $tmp/nginx/body;
  proxy_temp_path $tmp/nginx/proxy;
  fastcgi_temp_path $tmp/nginx/fastcgi;
  uwsgi_temp_path $tmp/nginx/uwsgi;
  scgi_temp_path $tmp/nginx/scgi;
  server {
    listen 127.0.0.1:$port backlog=${nginx_backlog:-4096};
$nginx_server_block
  }
}
EOF
    "${server_cmd[@]}" "$nginx_bin" -p "$tmp/nginx" -e "$tmp/nginx/error.log" -c "$tmp/nginx/nginx.conf" \
      -g 'daemon off;' >>"$tmp/nginx/stdout.log" 2>&1 &
    nginx_pid=$!
    for ((i = 0; i < 100; i++)); do  # up to 5 s
      if curl -sfI --noproxy '*' -o /dev/null "http://127.0.0.1:$port$check"; then
        nginx_url=http://127.0.0.1:$port
        return 0
      fi
      kill -0 "$nginx_pid" 2>/dev/null || break
      sleep 0.05
    done
    stop_pid "$nginx_pid"
    nginx_pid=
  done
  die "nginx did not start (see its error log below)"
}

# --- measurement helpers ----------------------------------------------------------
# CPU time (user + system, in clock ticks) of a process and its children's
# live processes (nginx's workers); exited threads of the process count.
cpu_ticks() {
  local pid=$1 total=0 p f
  for p in "$pid" $(cat /proc/"$pid"/task/*/children 2>/dev/null); do
    f=$(cat /proc/"$p"/stat 2>/dev/null) || continue
    f=${f##*) }  # fields from 3 on; utime and stime are fields 14 and 15
    read -r -a f <<<"$f"
    total=$((total + f[11] + f[12]))
  done
  echo "$total"
}
# Whole-machine busy and total ticks from /proc/stat (for CPU use during a run).
machine_ticks() {
  awk '/^cpu / { busy = $2 + $3 + $4 + $7 + $8 + $9; total = busy + $5 + $6; print busy, total }' /proc/stat
}

median() {
  printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
    n = NR; printf "%.3f\n", (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }'
}
join_csv() { local IFS=,; echo "$*"; }
