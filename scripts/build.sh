#!/usr/bin/env bash
# Configures and builds provisiond. Usage: scripts/build.sh [BUILD_DIR] [cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-build}"
shift || true
cmake -S . -B "$dir" -G Ninja "$@" >/dev/null
ninja -C "$dir"
