#!/usr/bin/env bash
# bake_bench.sh: a derived image's build (`provisionctl profile bake`: a copy
# of the built lab base, slurm.yml and torch-ddp.yml at image stage,
# then the finishing every image gets) against the same packages installed by
# mmdebstrap alone (`provisionctl image build` of the lab manifest with
# Slurm, MUNGE, D-Bus and PyTorch in its package list, as lab-slurm's own
# manifest had them before the image stage). provisiond on 127.0.0.1, a fresh image store; every package
# comes from the image's mirror each time. The base's own build is timed too:
# a bake needs a base, which many profiles share.
#
# Usage: tests/bench/bake_bench.sh [--build-dir DIR] [--json FILE]     (root)
# See tests/bench/README.md.
set -euo pipefail
bench=bake_bench
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build_dir="$repo/build" json=''
while (($#)); do
  case "$1" in
    --build-dir) build_dir="$2"; shift 2 ;;
    --json) json="$2"; shift 2 ;;
    *) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
  esac
done
build_dir="$(cd "$build_dir" && pwd)"
bin="$build_dir/provisiond"
: "${json:=$build_dir/tests/bench/$bench.json}"
PROVISIOND="$bin/provisiond" PROVISIONCTL="$bin/provisionctl" WORK_NAME=$bench
# shellcheck source=tests/lib.sh
source "$repo/tests/lib.sh"
[ "$(id -u)" -eq 0 ] || die "run as root (mmdebstrap --mode=root and chroot, as provisiond runs them)"
for f in provisiond provisionctl provision-facts provision-mount provision-fetch; do
  [ -x "$bin/$f" ] || die "missing $bin/$f (ninja -C $build_dir)"
done
# The images: lab as shipped, and lab-packages with the packages.
cp -a "$repo/images" "$WORK/images"
mkdir -p "$WORK/images/lab-packages"
sed -e 's/^name: lab$/name: lab-packages/' \
  -e 's/^packages:$/packages:\n  - dbus\n  - munge\n  - slurmd\n  - slurmctld\n  - slurm-client\n  - python3-torch/' \
  "$repo/images/lab/image.yaml" >"$WORK/images/lab-packages/image.yaml"
grep -q -- '- python3-torch' "$WORK/images/lab-packages/image.yaml" || die "could not add the packages"
# A profile that bakes the same packages through the shipped playbooks.
mkdir -p "$WORK/profiles/bench-bake"
cat >"$WORK/profiles/bench-bake/profile.yaml" <<PROFILE
version: bench-bake
image: {name: lab}
bake:
  - playbook: slurm.yml
  - playbook: torch-ddp.yml
nodes: {hostlist: bench0}
PROFILE
PROFILES_DIR="$WORK/profiles" start_provisiond bench "images_dir: $WORK/images" "pxe_dir: $repo/pxe" \
  "image_store: $WORK/store" "tools_dir: $bin"
timed() {  # timed NAME COMMAND...: milliseconds, to stdout
  local name="$1" t0=${EPOCHREALTIME//[!0-9]/}
  shift
  "$@" >"$WORK/$name.out" 2>&1 || { tail -20 "$WORK/$name.out" >&2; die "$name: $* failed"; }
  echo $(((${EPOCHREALTIME//[!0-9]/} - t0) / 1000))
}
base_ms=$(timed base "$bin/provisionctl" image build lab)
bake_ms=$(timed bake "$bin/provisionctl" profile bake bench-bake)
pkgs_ms=$(timed pkgs "$bin/provisionctl" image build lab-packages)
size() { du -sm "$WORK/store/$1/$(cat "$WORK/store/$1/current")/root" | cut -f1; }
ratio=$(awk -v a="$bake_ms" -v b="$pkgs_ms" 'BEGIN {printf "%.2f", a / b}')
printf '%s: base lab %.1f s (%s MiB); derived (bake: slurm.yml, torch-ddp.yml) %.1f s (%s MiB); mmdebstrap with the packages %.1f s (%s MiB); bake / mmdebstrap = %s\n' \
  "$bench" "$(awk -v m="$base_ms" 'BEGIN {print m / 1000}')" "$(size lab)" \
  "$(awk -v m="$bake_ms" 'BEGIN {print m / 1000}')" "$(size lab.baked)" \
  "$(awk -v m="$pkgs_ms" 'BEGIN {print m / 1000}')" "$(size lab-packages)" "$ratio"
mkdir -p "$(dirname "$json")"
printf '{"bench":"%s","base_ms":%d,"bake_ms":%d,"mmdebstrap_packages_ms":%d,"ratio":%s}\n' \
  "$bench" "$base_ms" "$bake_ms" "$pkgs_ms" "$ratio" >"$json"
