#!/usr/bin/env bash
# Installs what provisiond needs from Debian 12's packages: with --demo, what
# building it and running its demo need (the build's packages and the lab's,
# tests/lab/packages.txt); without, also what the tests need
# (tests/packages.txt, and the browser test's driver from npm). Safe to run
# again: nothing is installed twice.
# Usage: scripts/install-deps.sh [--demo]
set -euo pipefail

demo=0
[ "${1:-}" != "--demo" ] || demo=1
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
here="$(dirname "$0")"

# Build and libraries.
PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  libmicrohttpd-dev libyaml-cpp-dev libsqlite3-dev libssh-dev libnfs-dev
  libpq-dev   # the inventory on PostgreSQL, for more than one control node (docs/ha.md)
  libspdlog-dev doctest-dev nlohmann-json3-dev libcurl4-openssl-dev libcli11-dev libssl-dev
  libpcre2-dev   # playbook and template regular expressions, bounded (playbook/jinja/regex.h)
  curl cpio openssl
)
lists=("$here/../tests/lab/packages.txt")
[ "$demo" -eq 1 ] || lists+=("$here/../tests/packages.txt")
for list in "${lists[@]}"; do
  while read -r p; do
    case "$p" in ""|\#*) ;; *) PACKAGES+=("$p") ;; esac
  done <"$list"
done

# Also present: a package another installed one provides (npm comes with
# NodeSource's nodejs, which conflicts with Debian's npm). The list is read
# once into a variable: `grep -q` at the end of a pipe would end it early and
# fail it under pipefail.
PROVIDED="$(dpkg-query -W -f='${Status}|${Provides}\n' 2>/dev/null |
  sed -n 's/^install ok installed|//p' | tr ',' '\n' | awk 'NF {print $1}')"
provided() { grep -qx -- "$1" <<<"$PROVIDED"; }
missing=()
for p in "${PACKAGES[@]}"; do
  [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || provided "$p" ||
    missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  # --no-install-recommends keeps services we do not want (and their daemons) off the machine.
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

[ "$demo" -eq 0 ] || exit 0
# The browser test's driver (tests/web): playwright-core from the npm registry,
# the exact version in package-lock.json; it drives Debian's chromium, so no
# browser is downloaded. Skipped when node_modules matches the lock file.
WEB="$(dirname "$0")/../tests/web"
if ! cmp -s "$WEB/package-lock.json" "$WEB/node_modules/.package-lock.json.installed" 2>/dev/null; then
  echo "install-deps: npm ci in tests/web"
  (cd "$WEB" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund)
  cp "$WEB/package-lock.json" "$WEB/node_modules/.package-lock.json.installed"
fi
