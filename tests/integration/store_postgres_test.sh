#!/usr/bin/env bash
# The inventory on PostgreSQL: every unit test that opens a store
# (store/testing/test_database.h) runs again on a real PostgreSQL 15 server,
# each in a schema of its own: migrations, group commit, the node cache,
# events, runs, retention, the API and configure paths over the store.
# Usage: store_postgres_test.sh PROVISIOND PROVISIONCTL UNIT_TESTS
set -euo pipefail
PROVISIOND="$1" PROVISIONCTL="$2" UNIT_TESTS="$3"
WORK_NAME=provision-pg
source "$(dirname "$0")/../lib.sh"
source "$REPO/tests/postgres.sh"

start_postgres
pass "PostgreSQL 15 on $PG_DIR"

# Every test case that opens a store, and the copies between the two dialects.
log="$WORK/unit.log"
if PROVISIOND_TEST_POSTGRES="$PG_URI" "$UNIT_TESTS" >"$log" 2>&1; then
  pass "unit tests on PostgreSQL: $(grep -o 'test cases: *[0-9]* | *[0-9]* passed' "$log" | head -1)"
else
  grep -E "ERROR|FAILED|error:" "$log" | head -40
  tail -5 "$log"
  fail "unit tests on PostgreSQL"
fi
schemas="$(pg_sql "SELECT count(*) FROM information_schema.schemata WHERE schema_name LIKE 'test\_%'")"
check "the tests ran on the server ($schemas schemas)" test "$schemas" -gt 20
finish
