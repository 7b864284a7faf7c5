# pg_auto_failover (Debian's postgresql-15-auto-failover) for a test, set up
# as docs/ha.md says: a monitor and data nodes, each a "machine" of its own:
# one process group (setsid), in a network namespace of its own where the
# test gives one, its files under AF. Shared by integration.pg_failover
# (every machine on loopback) and lab.ha (a data node on each control node).
# Usage: AF=DIR; source tests/autofailover.sh; af_init
#   af_monitor NETNS HOST PORT             the monitor (NETNS "": this one)
#   af_node NAME NETNS HOST PORT [--run]   a data node (database provisiond)
#   af_start NAME                          a killed machine again (pg_autoctl run)
#   af_state NAME                          its state as the monitor has it
#   af_kill NAME                           its process group, SIGKILL
#   af_stop                                everything (cleanup)
# The caller waits (each test has its own wait_for); af_fast makes the monitor
# declare a node unhealthy within seconds (docs/ha.md's settings).

PG_BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"
declare -A AF_NS=() AF_HOST=() AF_PORT=() AF_GROUP=()

af_init() {
  command -v pg_autoctl >/dev/null || { echo "pg_autoctl is not installed: scripts/install-deps.sh" >&2; return 1; }
  id postgres >/dev/null 2>&1 || { echo "no postgres user: install postgresql-15" >&2; return 1; }
  mkdir -p "$AF"
  # The servers' user walks into AF's folder to reach it; no more.
  chmod o+x "$(dirname "$AF")"
  chown postgres: "$AF"
}

# _af_on NAME: sets AF_RUN to the command prefix that runs as the postgres
# user on machine NAME.
_af_on() {
  AF_RUN=()
  [ -z "${AF_NS[$1]:-}" ] || AF_RUN=(ip netns exec "${AF_NS[$1]}")
  AF_RUN+=(runuser -u postgres -- env PATH="$PG_BIN:$PATH" XDG_CONFIG_HOME="$AF/config"
    XDG_DATA_HOME="$AF/data")
}
_af_in() {
  _af_on "$1"
  shift
  "${AF_RUN[@]}" "$@"
}

# _af_machine NAME ARGS...: `pg_autoctl ARGS` as machine NAME, in the
# background, a session (process group) of its own.
_af_machine() {
  local name="$1"
  shift
  _af_on "$name"
  setsid "${AF_RUN[@]}" pg_autoctl "$@" >>"$AF/$name.log" 2>&1 &
  AF_GROUP[$name]=$!
  disown "$!"  # killed on purpose: no "Killed" from the shell
}

# af_sql NAME DATABASE SQL: one statement on machine NAME's server, as
# postgres on its Unix socket (Debian's folder, which every network namespace
# reaches; the servers trust local connections); rows unaligned, no headers.
AF_SOCKETS=/var/run/postgresql
af_sql() {
  runuser -u postgres -- "$PG_BIN/psql" -h "$AF_SOCKETS" -p "${AF_PORT[$1]}" -d "$2" -X -q -t -A \
    -v ON_ERROR_STOP=1 -c "$3"
}

af_monitor() {
  AF_NS[monitor]="$1" AF_HOST[monitor]="$2" AF_PORT[monitor]="$3"
  _af_in monitor pg_autoctl create monitor --pgdata "$AF/monitor" --pgport "$3" --hostname "$2" \
    --auth trust --no-ssl >"$AF/monitor-create.log" 2>&1 || { cat "$AF/monitor-create.log"; return 1; }
  _af_machine monitor run --pgdata "$AF/monitor"
  AF_MONITOR_URI="postgres://autoctl_node@$2:$3/pg_auto_failover?sslmode=disable"
}

# af_fast: health checks every second, a node unhealthy after 3 s, the old
# primary given 3 s to confirm its demotion (defaults: 5 s, 20 s, 30 s).
af_fast() {
  local setting
  for setting in health_check_period=1000 health_check_timeout=1000 health_check_max_retries=1 \
    health_check_retry_delay=500 node_considered_unhealthy_timeout=3000 primary_demote_timeout=3000; do
    af_sql monitor pg_auto_failover "ALTER SYSTEM SET pgautofailover.${setting%%=*} = ${setting#*=}" >/dev/null
  done
  af_sql monitor pg_auto_failover "SELECT pg_reload_conf()" >/dev/null
}

af_node() {
  local name="$1"
  AF_NS[$name]="$2" AF_HOST[$name]="$3" AF_PORT[$name]="$4"
  _af_machine "$name" create postgres --pgdata "$AF/$name" --pgport "$4" --hostname "$3" \
    --name "$name" --monitor "$AF_MONITOR_URI" --auth trust --no-ssl --dbname provisiond --run
}

af_start() { _af_machine "$1" run --pgdata "$AF/$1"; }

af_state() {
  af_sql monitor pg_auto_failover "SELECT reportedstate FROM pgautofailover.node WHERE nodename = '$1'" 2>/dev/null
}

af_kill() { kill -KILL -- "-${AF_GROUP[$1]}" 2>/dev/null || true; }

# Everything under AF goes: each server stopped by pg_ctl, each machine's
# process group killed, then whatever of ours is left (a server pg_autoctl
# started in a session of its own runs in AF).
af_stop() {
  local d g p
  for d in "$AF"/*/postmaster.pid; do
    [ -f "$d" ] && runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$(dirname "$d")" -m immediate -w -t 10 \
      stop >/dev/null 2>&1
  done
  for g in "${AF_GROUP[@]}"; do kill -KILL -- "-$g" 2>/dev/null; done
  for p in /proc/[0-9]*; do
    case "$(readlink "$p/cwd" 2>/dev/null) $(tr '\0' ' ' 2>/dev/null <"$p/cmdline")" in
      *"$AF/"*) kill -KILL "${p#/proc/}" 2>/dev/null ;;
    esac
  done
  # A server killed leaves its socket and lock file.
  for p in "${AF_PORT[@]}"; do rm -f "$AF_SOCKETS/.s.PGSQL.$p" "$AF_SOCKETS/.s.PGSQL.$p.lock"; done
  return 0
}
