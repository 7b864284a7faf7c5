#!/usr/bin/env bash
# Installs everything provisiond needs to build, test and run its demo, from
# Debian 12's packages. Safe to run again: apt-get skips what is installed.
set -euo pipefail

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

# Build and libraries.
PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libmicrohttpd-dev libyaml-cpp-dev libsqlite3-dev libssh-dev libnfs-dev
  libspdlog-dev doctest-dev nlohmann-json3-dev libcurl4-openssl-dev libcli11-dev libssl-dev
  sqlite3 curl clang-format
)
# The netboot lab (QEMU, iPXE, OVMF, dnsmasq, busybox): tests/lab/packages.txt.
while read -r p; do
  case "$p" in ""|\#*) ;; *) PACKAGES+=("$p") ;; esac
done <"$(dirname "$0")/../tests/lab/packages.txt"

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# --no-install-recommends keeps services we do not want (and their daemons) off the machine.
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
