#!/usr/bin/env bash
# Browser test of the web page (web/): a provisiond seeded with nodes in every
# state, then one with 10,000 nodes, each driven by tests/web/web_test.js
# (playwright-core + Debian's Chromium, loopback only, nothing else reachable).
#
# Usage: web_test.sh PROVISIOND PROVISIONCTL WEB_SEED_STATES BENCH_SEED_NODES
# (ctest passes all four: ctest -R web.browser). Screenshots and
# web_render.json go to $WEB_TEST_OUT (ctest: <build>/tests/web/web-test-out;
# by hand: a new directory under $TMPDIR); the path is printed at the end.
# Needs /usr/bin/chromium and tests/web/node_modules (scripts/install-deps.sh).
[ $# -eq 4 ] || { echo "usage: $0 PROVISIOND PROVISIONCTL WEB_SEED_STATES BENCH_SEED_NODES" >&2; exit 2; }
PROVISIOND="$(realpath "$1")"
PROVISIONCTL="$(realpath "$2")"
SEED_STATES="$(realpath "$3")"
SEED_NODES="$(realpath "$4")"
source "$(dirname "$0")/../lib.sh"
HERE="$REPO/tests/web"
CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
OUT="${WEB_TEST_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/provision-web-test.XXXXXX")}"
mkdir -p "$OUT"
rm -rf "$OUT/states" "$OUT/big"  # no stale screenshots from an earlier run

for need in "$CHROMIUM" "$PROVISIONCTL" "$SEED_STATES" "$SEED_NODES" "$HERE/node_modules/playwright-core"; do
  [ -e "$need" ] || {
    echo "FAIL: $need is missing (scripts/install-deps.sh installs chromium and runs npm ci in tests/web; build web_seed_states and bench_seed_nodes)"
    exit 1
  }
done
command -v node >/dev/null || { echo "FAIL: node is missing (apt-get install nodejs npm)"; exit 1; }

# The 'command' power driver of the seeded nodes: logs its arguments, so the
# test sees that a power cycle from the page reached it (and that a refused
# one did not).
cat >"$WORK/power.sh" <<EOF
#!/bin/sh
echo "\$*" >>"$WORK/power.log"
echo "power \$1 of \$2 done"
EOF
chmod +x "$WORK/power.sh"
: >"$WORK/power.log"

# The browser's HOME, cache and crash dumps stay in the work dir.
export HOME="$WORK/home" XDG_CONFIG_HOME="$WORK/home/.config" XDG_CACHE_HOME="$WORK/home/.cache"
mkdir -p "$HOME"

echo "== nodes in every state"
mkdir -p "$WORK/states/data"
"$SEED_STATES" "$WORK/states/data/provisiond.db"
# The seeded nodes have made-up addresses: the start must not try to
# configure the `configuring` and `booted` ones again.
# The network console on loopback, on a free port: the test sends gpu02's
# lines from 127.0.0.12, the address it gives gpu02.
CONSOLE_PORT="$(python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
start_provisiond states "web_dir: $REPO/web" "power:" "  command: $WORK/power.sh" \
  "configure:" "  resume_on_start: false" "console:" "  listen: 127.0.0.1:$CONSOLE_PORT"
add_read_token
if MODE=states URL="$URL" CONSOLE_PORT="$CONSOLE_PORT" TOKEN="$TOKEN" READ_TOKEN="$READ_TOKEN" PROVISIONCTL="$PROVISIONCTL" POWER_LOG="$WORK/power.log" \
  CHROMIUM="$CHROMIUM" OUT="$OUT/states" node "$HERE/web_test.js"; then
  pass "web page with nodes in every state"
else fail "web page with nodes in every state"; fi
kill "$PROVISIOND_PID" 2>/dev/null && wait "$PROVISIOND_PID" 2>/dev/null || true

echo "== 10,000 nodes"
mkdir -p "$WORK/big/data"
"$SEED_NODES" "$WORK/big/data/provisiond.db" 10000
start_provisiond big "web_dir: $REPO/web"
if MODE=big COUNT=10000 URL="$URL" TOKEN="$TOKEN" CHROMIUM="$CHROMIUM" OUT="$OUT/big" \
  node "$HERE/web_test.js"; then
  pass "web page with 10,000 nodes"
else fail "web page with 10,000 nodes"; fi
echo "screenshots: $OUT"
finish
