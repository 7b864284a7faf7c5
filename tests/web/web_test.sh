#!/usr/bin/env bash
# Browser test of the web page (web/): a provisiond seeded with nodes in every
# state, then one with 10,000 nodes, each driven by tests/web/web_test.js
# (playwright-core + Debian's Chromium, loopback only).
# Usage: web_test.sh PROVISIOND PROVISIONCTL
# Seeders: web_seed_states and bench_seed_nodes from the same build tree as
# PROVISIOND (override with WEB_SEED_STATES / BENCH_SEED_NODES). Screenshots
# and web_render_bench.json go to $WEB_TEST_OUT (default: a new dir in $TMPDIR).
PROVISIOND="$(realpath "$1")"
PROVISIONCTL="$(realpath "$2")"
source "$(dirname "$0")/../lib.sh"
HERE="$REPO/tests/web"
BUILD="$(dirname "$(dirname "$PROVISIOND")")"
SEED_STATES="${WEB_SEED_STATES:-$BUILD/tests/web/web_seed_states}"
SEED_NODES="${BENCH_SEED_NODES:-$BUILD/tests/bench/bench_seed_nodes}"
OUT="${WEB_TEST_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/provision-web-test.XXXXXX")}"
mkdir -p "$OUT"

for need in /usr/bin/chromium "$SEED_STATES" "$HERE/node_modules/playwright-core"; do
  [ -e "$need" ] || { echo "web_test: $need is missing (scripts/install-deps.sh; npm ci in tests/web)"; exit 1; }
done

# seeded_provisiond NAME SEEDER ARGS...: seeds NAME's database, then starts it.
seeded_provisiond() {
  local name="$1"
  shift
  mkdir -p "$WORK/$name/data"
  "$@" "$WORK/$name/data/provisiond.db"
  start_provisiond "$name" "web_dir: $REPO/web"
}

echo "== every state"
seeded_provisiond states "$SEED_STATES"
if MODE=states URL="$URL" TOKEN="$TOKEN" OUT="$OUT/states" node "$HERE/web_test.js"; then
  pass "web page with nodes in every state"
else fail "web page with nodes in every state"; fi

if [ -x "$SEED_NODES" ]; then
  echo "== 10,000 nodes"
  mkdir -p "$WORK/big/data"
  "$SEED_NODES" "$WORK/big/data/provisiond.db" 10000
  start_provisiond big "web_dir: $REPO/web"
  if MODE=big COUNT=10000 URL="$URL" OUT="$OUT/big" node "$HERE/web_test.js"; then
    pass "web page with 10,000 nodes"
  else fail "web page with 10,000 nodes"; fi
else
  fail "$SEED_NODES is missing: build the bench_seed_nodes target"
fi
echo "screenshots and web_render_bench.json: $OUT"
finish
