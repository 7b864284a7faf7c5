#!/usr/bin/env bash
# The main job, as far as it goes today: installs what is needed, builds, and
# runs provisiond on a fresh data directory with the shipped profiles; shows
# the API answering through provisionctl; then serves until Ctrl-C.
# Usage: scripts/demo.sh [--no-install] [--once]   (--once: stop after showing)
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$(pwd)"
install=1 once=0
for arg in "$@"; do
  case "$arg" in
    --no-install) install=0 ;;
    --once) once=1 ;;
    *) echo "usage: scripts/demo.sh [--no-install] [--once]" >&2; exit 2 ;;
  esac
done
[ "$install" -eq 0 ] || scripts/install-deps.sh
scripts/build.sh build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
BIN="$REPO/build/provisiond"

DEMO="$(mktemp -d "${TMPDIR:-/tmp}/provisiond-demo.XXXXXX")"
pid=""
cleanup() {
  [ -z "$pid" ] || { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; }
  rm -rf "$DEMO"
}
trap cleanup EXIT
trap 'echo; echo "stopping"; exit 0' INT TERM

cat >"$DEMO/provisiond.yaml" <<CONF
listen: 127.0.0.1:0
data_dir: $DEMO/data
profiles_dir: $REPO/profiles
playbooks_dir: $REPO/playbooks
CONF
"$BIN/provisiond" --check --config "$DEMO/provisiond.yaml"
"$BIN/provisiond" --config "$DEMO/provisiond.yaml" >"$DEMO/provisiond.log" 2>&1 &
pid=$!
for _ in $(seq 1 200); do
  [ -s "$DEMO/data/provisiond.url" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$DEMO/provisiond.log"; exit 1; }
  sleep 0.05
done
export PROVISIOND_URL="$(cat "$DEMO/data/provisiond.url")"
export PROVISIOND_TOKEN="$(awk '!/^#/ && NF {print $1; exit}' "$DEMO/data/tokens")"
ctl() { echo "\$ provisionctl $*"; "$BIN/provisionctl" "$@"; echo; }

echo "provisiond is running at $PROVISIOND_URL (data in $DEMO/data)"
echo
ctl status
ctl profile list
ctl node add node0 --mac 52:54:00:00:00:10 --ip 10.99.0.10
ctl node add node1 --mac 52:54:00:00:00:11 --ip 10.99.0.11
ctl profile apply v0.1 --yes
ctl node list
ctl events

if [ "$once" -eq 1 ]; then exit 0; fi
echo "provisiond keeps serving at $PROVISIOND_URL; in another terminal:"
echo "  export PROVISIOND_URL=$PROVISIOND_URL PROVISIOND_TOKEN=<first word of $DEMO/data/tokens>"
echo "  $BIN/provisionctl status"
echo "Ctrl-C stops it and removes $DEMO."
wait "$pid"
