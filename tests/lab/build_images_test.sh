#!/usr/bin/env bash
# The lab tests' images, built once before the tests that boot them (ctest's
# fixtures lab_image and lab_slurm_image): `lab` (lab.images, lab.firmware)
# and, from it, the lab-slurm profile's derived image (lab.slurm: `lab:lab-slurm`),
# each by a provisiond on this machine's loopback through
# `provisionctl image build`, into the lab cache (tests/lab/lab-image.sh;
# a cached image that matches its inputs is used as it is). Built here, the
# builds run beside the lab tests that need no image (lab.netboot, lab.proxy)
# instead of inside the tests that boot them. Checks that each current
# version has its root tree, kernel, initrd and manifest.
# IMAGE:PROFILE also bakes PROFILE's derived image from IMAGE (its image
# stage: `provisionctl profile bake`) and checks it the same way.
# Usage: build_images_test.sh PROVISIOND PROVISIONCTL IMAGE[:PROFILE]...
set -euo pipefail
PROVISIOND="$(realpath "$1")"
PROVISIONCTL="$(realpath "$2")"
shift 2
[ "$#" -ge 1 ] || { echo "usage: build_images_test.sh PROVISIOND PROVISIONCTL IMAGE..." >&2; exit 2; }
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
source "$HERE/lab-test.sh"
source "$HERE/lab-image.sh"
check_version() {
  local store="$1" image="$2" t="$3" version dir
  version="$(cat "$store/$image/current")"
  dir="$store/$image/$version"
  for f in image.json vmlinuz initrd.img; do
    [ -s "$dir/$f" ] || fail "$image@$version has no $f in $dir"
  done
  [ -x "$dir/root/sbin/init" ] || [ -L "$dir/root/sbin/init" ] || fail "$image@$version's root has no /sbin/init"
  say "$image@$version ready in $(((${EPOCHREALTIME//[!0-9]/} - t) / 1000000)) s: $(du -sm "$dir/root" | cut -f1) MiB root, $(($(stat -c %s "$dir/initrd.img") / 1048576)) MiB initrd"
}
for arg in "$@"; do
  image="${arg%%:*}" profile=""
  [ "$arg" = "$image" ] || profile="${arg#*:}"
  t="${EPOCHREALTIME//[!0-9]/}"
  store="$(lab_image_store "$PROVISIOND" "$PROVISIONCTL" "$REPO/profiles" "$image")" ||
    fail "the $image image was not built"
  check_version "$store" "$image" "$t"
  [ -n "$profile" ] || continue
  t="${EPOCHREALTIME//[!0-9]/}"
  lab_image_store "$PROVISIOND" "$PROVISIONCTL" "$REPO/profiles" "$image" "$profile" >/dev/null ||
    fail "the derived image of profile $profile was not baked"
  check_version "$store" "$image.baked" "$t"
  derived="$store/$image.baked/$(cat "$store/$image.baked/current")"
  grep -q '"bake": \[' "$derived/image.json" || fail "$image.baked's image.json records no bake inputs"
  # Nothing of the build stays in the image, nothing stays mounted, the base
  # is unchanged (a bake works on a copy).
  for leftover in root/.ansible usr/sbin/policy-rc.d etc/dpkg/dpkg.cfg.d/provisiond-image-stage var/lib/dkms/mok.key; do
    [ ! -e "$derived/root/$leftover" ] || fail "the bake left /$leftover in $image.baked"
  done
  [ -z "$(ls -A "$derived/root/tmp")" ] || fail "the bake left files in $image.baked's /tmp: $(ls -A "$derived/root/tmp")"
  if grep -qF "$store/" /proc/self/mountinfo; then fail "something is still mounted under $store"; fi
  if grep -q "runner: ansible" "$REPO/profiles/$profile/profile.yaml"; then
    # lab-slurm bakes its compute user on ansible-playbook's chroot connection.
    grep -q "^compute:" "$derived/root/etc/passwd" || fail "$image.baked has no compute user (baked by ansible-playbook)"
    if grep -q "^compute:" "$store/$image/$(cat "$store/$image/current")/root/etc/passwd"; then
      fail "the base image $image was changed by the bake"
    fi
  fi
done
