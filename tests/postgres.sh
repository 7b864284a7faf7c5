# A throwaway PostgreSQL 15 server for a test: its own cluster under WORK,
# run by the postgres user (the server refuses root), listening only on a Unix
# socket in that folder (no TCP port unless POSTGRES_PORT is set, then on
# loopback only), with one database, provisiond, owned by a role of the same
# name. Stopped at cleanup.
# Usage: source tests/lib.sh; source tests/postgres.sh; start_postgres
# Sets PG_DIR and PG_URI (postgresql:///provisiond?host=...&user=provisiond).

PG_BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"

start_postgres() {
  [ -x "$PG_BIN/postgres" ] || die "PostgreSQL 15 is not installed ($PG_BIN): run scripts/install-deps.sh"
  id postgres >/dev/null 2>&1 || die "no postgres user: install postgresql-15"
  PG_DIR="$WORK/pg"
  mkdir -p "$PG_DIR"
  # The server's user walks into WORK to reach its folder; no more.
  chmod o+x "$WORK"
  chown postgres: "$PG_DIR"
  chmod 700 "$PG_DIR"
  runuser -u postgres -- "$PG_BIN/initdb" -D "$PG_DIR/data" -A trust -U postgres --no-sync \
    >"$PG_DIR/initdb.log" 2>&1 || { cat "$PG_DIR/initdb.log"; die "initdb failed"; }
  local listen="''" port="${POSTGRES_PORT:-5432}"
  [ -z "${POSTGRES_PORT:-}" ] || listen="127.0.0.1"
  CLEANUP_HOOKS+=("stop_postgres")
  FAILURE_LOGS+=("$PG_DIR/server.log")
  runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 \
    -o "-k $PG_DIR -c listen_addresses=$listen -p $port -c fsync=off" start >/dev/null ||
    { tail -20 "$PG_DIR/server.log"; die "PostgreSQL did not start"; }
  runuser -u postgres -- "$PG_BIN/psql" -h "$PG_DIR" -p "$port" -q -v ON_ERROR_STOP=1 -d postgres \
    -c "CREATE ROLE provisiond LOGIN" -c "CREATE DATABASE provisiond OWNER provisiond" >/dev/null
  PG_URI="postgresql:///provisiond?host=$PG_DIR&port=$port&user=provisiond"
  export PG_URI
}

# psql as provisiond on the test's database: pg_sql "SELECT ..." prints rows
# unaligned, no headers.
pg_sql() {
  runuser -u postgres -- "$PG_BIN/psql" "$PG_URI" -X -q -t -A -v ON_ERROR_STOP=1 -c "$1"
}

stop_postgres() {
  [ -n "${PG_DIR:-}" ] && [ -f "$PG_DIR/data/postmaster.pid" ] || return 0
  runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate -w -t 30 stop \
    >/dev/null 2>&1 || true
}
