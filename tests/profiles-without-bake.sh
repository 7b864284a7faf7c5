#!/usr/bin/env bash
# tests/profiles-without-bake.sh SRC DEST: copies the profiles folder SRC to
# DEST with every profile's `bake:` list left out. For the tests whose `lab`
# image is an imported kernel and initrd with no root tree to bake into
# (lab.netboot, lab.proxy, the boot storms of integration.crash and
# integration.backup): what they check ends before a node's root.
set -euo pipefail
[ "$#" -eq 2 ] || { echo "usage: profiles-without-bake.sh SRC DEST" >&2; exit 2; }
cp -r "$1" "$2"
for f in "$2"/*/profile.yaml; do
  awk '/^bake:/ {skip = 1; next} skip && /^[^ -]/ {skip = 0} !skip' "$f" >"$f.new"
  mv "$f.new" "$f"
  if grep -q "^bake:" "$f"; then
    echo "profiles-without-bake.sh: could not take bake: out of $f" >&2
    exit 1
  fi
done
