# shellcheck shell=bash disable=SC2034,SC2154
# boot_bench_common.sh: shared by boot_storm_bench.sh, boot_script_bench.sh,
# load_bench.sh and scale_bench.sh (sourced, not run). Sources tests/lib.sh,
# whose harness the benchmarks share ($WORK, PIDS, CLEANUP_HOOKS and the
# cleanup of everything started, by pid, on exit, failure or Ctrl-C; die,
# stop_pid, start_provisiond); adds provisiond with the lab image and enrolled
# lab nodes, and nginx as our own process with every path in $WORK.
#
# The sourcing script sets, before sourcing: bench (name for messages), repo,
# provisiond, provisionctl and tmp_base (where $WORK goes).

PROVISIOND=$provisiond PROVISIONCTL=$provisionctl WORK_BASE=$tmp_base WORK_NAME=$bench
# shellcheck source=tests/lib.sh
source "$repo/tests/lib.sh"

nginx_pid=''
# Command prefixes for the servers and the clients: empty, or taskset with
# --pin SERVER_CPUS:CLIENT_CPUS (see parse_pin).
server_cmd=() client_cmd=() pin=none
parse_pin() {  # $1: e.g. 0:1 or 0-1:2-3
  [[ $1 =~ ^([0-9,-]+):([0-9,-]+)$ ]] || { echo "--pin expects SERVER_CPUS:CLIENT_CPUS, e.g. 0:1" >&2; exit 2; }
  command -v taskset >/dev/null || { echo "--pin needs taskset (util-linux)" >&2; exit 2; }
  server_cmd=(taskset -c "${BASH_REMATCH[1]}")
  client_cmd=(taskset -c "${BASH_REMATCH[2]}")
  PROVISIOND_PREFIX=("${server_cmd[@]}")
  pin="servers on CPU ${BASH_REMATCH[1]}, clients on CPU ${BASH_REMATCH[2]}"
}

# Clients (pids) the sourcing script started; stopped first at cleanup.
client_pids=()
stop_clients() {
  local pid
  for pid in "${client_pids[@]}"; do
    kill -0 "$pid" 2>/dev/null && kill -TERM "$pid" 2>/dev/null
  done
  for pid in "${client_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
CLEANUP_HOOKS+=(stop_clients)
FAILURE_LOGS+=("$WORK/nginx/error.log")

# --- provisiond ----------------------------------------------------------------
# start_bench_provisiond [extra config lines]: lib's start_provisiond (data in
# $WORK/bench/data; URL, TOKEN, PROVISIOND_PID) with pxe_dir, and
# $listen_threads, when set, as its listen_threads (0: a thread per
# connection, as before the event loops).
# The lab image here is an imported kernel and initrd with no root tree to
# bake into: the profiles without their bake: lists, as the boot storms of
# integration.crash use them.
start_bench_provisiond() {
  [ -d "$WORK/profiles" ] || bash "$repo/tests/profiles-without-bake.sh" "$repo/profiles" "$WORK/profiles"
  PROFILES_DIR="$WORK/profiles" start_provisiond bench "pxe_dir: $repo/pxe" ${listen_threads:+"listen_threads: $listen_threads"} "$@"
}

# provisionctl against our daemon (start_provisiond exported its URL and token).
ctl() { "$PROVISIONCTL" "$@"; }

# Imports image `lab` (kernel of $1 MiB, initrd of $2 MiB, random bytes) and
# applies profile `lab`; the source files are removed afterwards, so only the
# image store's copy is on disk (and in the page cache). Sets image_dir.
setup_lab_image() {
  local kernel_mib=$1 initrd_mib=$2 dirs
  mkdir -p "$WORK/src"
  head -c "${kernel_mib}M" /dev/urandom >"$WORK/src/vmlinuz"
  head -c "${initrd_mib}M" /dev/urandom >"$WORK/src/initrd.img"
  # What the import checks look for: the x86 boot header, gzip's magic.
  printf 'HdrS' | dd of="$WORK/src/vmlinuz" bs=1 seek=514 conv=notrunc status=none
  printf '\037\213' | dd of="$WORK/src/initrd.img" bs=1 seek=0 conv=notrunc status=none
  ctl image import lab --kernel "$WORK/src/vmlinuz" --initrd "$WORK/src/initrd.img" >/dev/null ||
    die "provisionctl image import failed"
  rm -rf "$WORK/src"
  ctl profile apply lab --yes >/dev/null || die "provisionctl profile apply lab failed"
  dirs=("$DATA"/data/images/lab/*/)
  if ((${#dirs[@]} != 1)) || [[ ! -s ${dirs[0]}initrd.img ]]; then
    die "expected one imported version under $DATA/data/images/lab"
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
    args+=(-sS -o /dev/null -w '%{http_code}\n' -X POST -H "Authorization: Bearer $TOKEN"
      -H 'Content-Type: application/json'
      --data "{\"hostname\":\"lab$(printf %03d "$i")\",\"mac\":\"$(node_mac "$i" | tr - :)\"}"
      "$URL/api/v1/nodes")
  done
  while read -r code; do
    [[ $code == 201 ]] || die "POST /api/v1/nodes answered $code"
  done < <(curl --noproxy '*' "${args[@]}")
  local without
  local list count
  list=$(curl -sS --noproxy '*' -H "Authorization: Bearer $TOKEN" "$URL/api/v1/nodes")
  count=$(sed -n 's/.*"count":\([0-9]*\)}$/\1/p' <<<"$list")
  without=$({ grep -o '"image":""' <<<"$list" || true; } | wc -l)
  [[ $count == "$n" && $without == 0 ]] ||
    die "after enrolling $n nodes: $count listed, $without of them without an image"
}

# Events recorded so far (GET /api/v1/status -> last_event).
last_event() {
  local n
  n=$(curl -sS --noproxy '*' -H "Authorization: Bearer $TOKEN" "$URL/api/v1/status" |
    sed -n 's/.*"last_event":\([0-9]*\).*/\1/p')
  [[ -n $n ]] || die "GET /api/v1/status has no last_event"
  echo "$n"
}

# --- nginx ----------------------------------------------------------------------
# start_nginx_on_free_port CHECK_PATH: writes $WORK/nginx/nginx.conf from
# nginx_server_block (the body of the server {} block), nginx_workers and
# nginx_worker_connections (each worker's; 4096 unless set), nginx_backlog
# (listen's backlog; 4096 unless set), and starts nginx on a free 127.0.0.1 port. Sets nginx_pid and nginx_url.
start_nginx_on_free_port() {
  local check=$1 port try i
  mkdir -p "$WORK/nginx"
  for ((try = 0; try < 5; try++)); do
    port=$((20000 + RANDOM % 40000))
    ss -Htln "sport = :$port" | grep -q . && continue
    cat >"$WORK/nginx/nginx.conf" <<EOF
worker_processes $nginx_workers;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events { worker_connections ${nginx_worker_connections:-4096}; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  client_body_temp_path $WORK/nginx/body;
  proxy_temp_path $WORK/nginx/proxy;
  fastcgi_temp_path $WORK/nginx/fastcgi;
  uwsgi_temp_path $WORK/nginx/uwsgi;
  scgi_temp_path $WORK/nginx/scgi;
  server {
    listen 127.0.0.1:$port backlog=${nginx_backlog:-4096};
$nginx_server_block
  }
}
EOF
    "${server_cmd[@]}" "$nginx_bin" -p "$WORK/nginx" -e "$WORK/nginx/error.log" -c "$WORK/nginx/nginx.conf" \
      -g 'daemon off;' >>"$WORK/nginx/stdout.log" 2>&1 &
    nginx_pid=$!
    PIDS+=("$nginx_pid")
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
