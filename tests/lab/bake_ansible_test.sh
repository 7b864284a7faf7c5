#!/usr/bin/env bash
# The image stage on Debian's ansible-playbook (its chroot connection): a
# profile whose bake entry asks for `runner: ansible` bakes compute-user.yml
# into a copy of the built lab image, through `provisionctl profile bake` on a
# provisiond on this machine's loopback. The derived tree has the user and its
# sudo rule, Ansible left nothing in it (no ~/.ansible, nothing in /tmp or
# /run, no policy-rc.d), nothing stayed mounted under it, the base tree is
# unchanged, and baking again reuses it.
# Usage: bake_ansible_test.sh PROVISIOND PROVISIONCTL   (root; fixture lab_image)
set -euo pipefail
PROVISIOND="$(realpath "$1")"
PROVISIONCTL="$(realpath "$2")"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
source "$HERE/lab-test.sh"
source "$HERE/lab-image.sh"
[ "$(id -u)" -eq 0 ] || fail "run as root (chroot, mount namespaces)"
STORE="$(lab_image_store "$PROVISIOND" "$PROVISIONCTL" "$REPO/profiles")" || fail "the lab image was not built"
work="$(mktemp -d)"
# A store of our own beside the cache: the lab image's version, hard-linked
# (nothing writes a built version), so the cache gets no derived image.
base="$(cat "$STORE/lab/current")"
mkdir -p "$work/store/lab"
cp -al "$STORE/lab/$base" "$work/store/lab/$base"
echo "$base" >"$work/store/lab/current"
pid=""
cleanup() {
  [ -z "$pid" ] || { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; }
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/profiles/bake-ansible"
cat >"$work/profiles/bake-ansible/profile.yaml" <<PROFILE
version: bake-ansible
image: {name: lab}
bake:
  - playbook: compute-user.yml
    runner: ansible
    vars: {compute_user: baked}
nodes: {hostlist: none0}
PROFILE
cat >"$work/provisiond.yaml" <<CONF
listen: 127.0.0.1:0
data_dir: $work/data
profiles_dir: $work/profiles
playbooks_dir: $REPO/playbooks
images_dir: $REPO/images
pxe_dir: $REPO/pxe
image_store: $work/store
tools_dir: $(dirname "$PROVISIOND")
CONF
"$PROVISIOND" --config "$work/provisiond.yaml" >"$work/provisiond.log" 2>&1 &
pid=$!
wait_for "provisiond's URL file" 30 test -s "$work/data/provisiond.url"
export PROVISIOND_URL PROVISIOND_TOKEN
PROVISIOND_URL="$(cat "$work/data/provisiond.url")"
PROVISIOND_TOKEN="$(awk '!/^#/ && NF {print $1; exit}' "$work/data/tokens")"
"$PROVISIONCTL" profile plan bake-ansible >"$work/plan.out" || { cat "$work/plan.out"; fail "profile plan failed"; }
grep -q "^image rebuilt: no derived image of lab yet" "$work/plan.out" || { cat "$work/plan.out"; fail "the plan does not say the image is built"; }
t="${EPOCHREALTIME//[!0-9]/}"
"$PROVISIONCTL" profile bake bake-ansible >"$work/bake.out" 2>&1 || { cat "$work/bake.out"; tail -20 "$work/provisiond.log"; fail "the bake on ansible-playbook failed"; }
version="$(cat "$work/store/lab.baked/current")"
root="$work/store/lab.baked/$version/root"
grep -q "^baked:" "$root/etc/passwd" || { cat "$work/bake.out"; fail "the derived image has no user 'baked'"; }
grep -q "^baked:" "$work/store/lab/$base/root/etc/passwd" && fail "the base image was changed"
for leftover in root/.ansible usr/sbin/policy-rc.d etc/dpkg/dpkg.cfg.d/provisiond-image-stage; do
  [ ! -e "$root/$leftover" ] || fail "the bake left /$leftover in the image"
done
[ -z "$(ls -A "$root/tmp")" ] || fail "the bake left files in the image's /tmp: $(ls -A "$root/tmp")"
grep -qF "$work/store" /proc/self/mountinfo && fail "something is still mounted under the store"
"$PROVISIONCTL" profile bake bake-ansible >"$work/again.out" || { cat "$work/again.out"; fail "baking again failed"; }
grep -q "^image reused: lab.baked@$version" "$work/again.out" || { cat "$work/again.out"; fail "baking again did not reuse lab.baked@$version"; }
say "lab.baked@$version baked by ansible-playbook (chroot connection) in $(((${EPOCHREALTIME//[!0-9]/} - t) / 1000000)) s: user 'baked' in it, nothing left by the build, the base unchanged; baked again: reused"
