#!/usr/bin/env bash
# Lab test of container images as node images (the oci image source), the
# import; lab.firmware then boots the image it makes (its nic0 gets the
# lab-oci profile):
#   1. the lab's OCI archive (tests/lab/make-oci-image.sh: a Debian minbase
#      root from mmdebstrap packed with umoci, a whiteout and a file
#      capability in its upper layer, written by skopeo) is imported by
#      `provisionctl image build lab-oci` (images/lab-oci/image.yaml) into the
#      lab's image store, its kernel, systemd and sshd installed on top by the
#      tree's own apt; the version's tree has the whiteout applied and the
#      capability kept, a kernel, an initrd, no policy-rc.d; `image show` names
#      the archive and its manifest digest
#   1b. the lab-oci profile's bake playbook (the compute user, at image stage)
#      makes its derived image on top of it, as on any base
#   2. imported again: nothing is built (the same version, no new folder)
#   3. the same archive without kernel_package and packages: one error that
#      names everything a node would lack, and nothing is committed
# The import runs in a provisiond on this machine's loopback, as a control
# node imports over its own uplink (apt on top reaches the mirror).
# Usage: oci_import_test.sh PROVISIOND PROVISIONCTL   (root)
set -euo pipefail
PROVISIOND="$(realpath "$1")"
PROVISIONCTL="$(realpath "$2")"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
WORK=""
PID=""
dump() {
  [ -n "$WORK" ] || return 0
  tail -n 30 "$WORK/provisiond.log" "$WORK"/*.out 2>/dev/null | tr -cd '\11\12\40-\176' >&2
}
source "$HERE/lab-test.sh"
source "$HERE/lab-image.sh"
source "$HERE/make-oci-image.sh"
cleanup() {
  [ -z "$PID" ] || { kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || true; }
  [ -z "$WORK" ] || rm -rf "$WORK"
}
trap cleanup EXIT
[ "$(id -u)" -eq 0 ] || fail "run as root (mmdebstrap, the image stage's mounts)"

t="${EPOCHREALTIME//[!0-9]/}"
STORE="$(lab_image_store "$PROVISIOND" "$PROVISIONCTL" "$REPO/profiles")" || fail "the lab image store is not there"
ARCHIVE="$(lab_oci_archive)" || fail "the lab's OCI archive was not made"
say "OCI archive $ARCHIVE ($(($(stat -c %s "$ARCHIVE") / 1048576)) MiB) ready in $(((${EPOCHREALTIME//[!0-9]/} - t) / 1000000)) s"

WORK="$(mktemp -d)"
cp -r "$REPO/images" "$WORK/images"
ln -s "$ARCHIVE" "$WORK/images/lab-oci/lab-oci.tar"
mkdir "$WORK/images/lab-oci-bare"
printf 'name: lab-oci-bare\nsource: oci\noci: oci-archive:%s\n' "$ARCHIVE" >"$WORK/images/lab-oci-bare/image.yaml"
lab_local_provisiond "$WORK" "$PROVISIOND" "$REPO/profiles" "$WORK/images" "$STORE" ||
  fail "provisiond did not start on loopback: $(tail -5 "$WORK/provisiond.log")"
PID="$LAB_LOCAL_PID"
pctl() { "$PROVISIONCTL" "$@"; }

# 1. The import.
t="${EPOCHREALTIME//[!0-9]/}"
pctl image build lab-oci >"$WORK/build1.out" 2>&1 || { cat "$WORK/build1.out" >&2; fail "image build lab-oci failed"; }
VERSION="$(cat "$STORE/lab-oci/current")"
DIR="$STORE/lab-oci/$VERSION"
if grep -q "nothing to build" "$WORK/build1.out"; then
  say "lab-oci@$VERSION is in the lab cache already (built by an earlier run)"
else
  for line in "copying oci-archive:lab-oci.tar" "unpacking the layers" \
    "installing linux-image-amd64 systemd-sysv openssh-server curl sudo iproute2 procps on top with the image's apt" \
    "building the netboot initrd" "built lab-oci@$VERSION"; do
    grep -qF "$line" "$WORK/build1.out" || { cat "$WORK/build1.out" >&2; fail "the import did not say '$line'"; }
  done
  say "lab-oci@$VERSION imported in $(((${EPOCHREALTIME//[!0-9]/} - t) / 1000000)) s: $(du -sm "$DIR/root" | cut -f1) MiB root"
fi
ROOT="$DIR/root"
[ ! -e "$ROOT/etc/issue.net" ] || fail "the upper layer's whiteout was not applied: /etc/issue.net is there"
[ -s "$ROOT/etc/issue" ] || fail "the lower layer's /etc/issue is missing"
getcap "$ROOT/usr/local/bin/lab-capable" >"$WORK/getcap.out"
grep -q "cap_net_raw=ep" "$WORK/getcap.out" || fail "lab-capable lost its file capability: $(cat "$WORK/getcap.out")"
ls "$ROOT"/boot/vmlinuz-* >/dev/null || fail "no kernel in the imported tree's /boot"
for f in usr/sbin/sshd usr/lib/systemd/systemd usr/local/sbin/provision-hello; do
  [ -e "$ROOT/$f" ] || fail "the imported tree has no /$f"
done
for f in usr/sbin/policy-rc.d .dockerenv etc/dpkg/dpkg.cfg.d/provisiond-image-stage; do
  [ ! -e "$ROOT/$f" ] && [ ! -L "$ROOT/$f" ] || fail "the import left /$f in the tree"
done
[ -s "$DIR/initrd.img" ] && [ -s "$DIR/vmlinuz" ] || fail "lab-oci@$VERSION has no kernel or initrd"
pctl image show lab-oci >"$WORK/show.out"
grep -q "oci image: *oci-archive:lab-oci.tar$" "$WORK/show.out" &&
  grep -q "digest: *sha256:[0-9a-f]\{64\}$" "$WORK/show.out" &&
  grep -q "on top: *6: systemd-sysv, openssh-server" "$WORK/show.out" ||
  { cat "$WORK/show.out" >&2; fail "image show does not name the archive, its digest and the packages on top"; }
say "lab-oci@$VERSION: whiteout applied (no /etc/issue.net), $(cut -d' ' -f2 "$WORK/getcap.out") kept on lab-capable, $(basename "$(ls "$ROOT"/boot/vmlinuz-* | tail -1)"), sshd, systemd; image show: $(grep -o 'sha256:[0-9a-f]\{12\}' "$WORK/show.out" | head -1)..."

# 1b. The image stage on top of it: the lab-oci profile's derived image.
t="${EPOCHREALTIME//[!0-9]/}"
pctl profile bake lab-oci >"$WORK/bake.out" 2>&1 || { cat "$WORK/bake.out" >&2; fail "profile bake lab-oci failed"; }
[ -s "$STORE/lab-oci.baked/current" ] || { cat "$WORK/bake.out" >&2; fail "no lab-oci.baked after profile bake lab-oci"; }
BAKED="$STORE/lab-oci.baked/$(cat "$STORE/lab-oci.baked/current")"
grep -q "^compute:" "$BAKED/root/etc/passwd" || fail "lab-oci.baked has no compute user"
! grep -q "^compute:" "$ROOT/etc/passwd" || fail "the bake changed the imported image lab-oci"
grep -q "\"base\": \"lab-oci@$VERSION\"" "$BAKED/image.json" || fail "lab-oci.baked is not made from lab-oci@$VERSION"
say "$(basename "$(dirname "$BAKED")")@$(basename "$BAKED") baked from lab-oci@$VERSION in $(((${EPOCHREALTIME//[!0-9]/} - t) / 1000000)) s: the compute user at image stage"

# 2. Again: nothing to build.
versions() { find "$STORE/lab-oci" -mindepth 1 -maxdepth 1 -type d | wc -l; }
before="$(versions)"
t="${EPOCHREALTIME//[!0-9]/}"
pctl image build lab-oci >"$WORK/build2.out" 2>&1 || { cat "$WORK/build2.out" >&2; fail "the second import failed"; }
grep -qF "nothing to build (lab-oci@$VERSION is built from the same source and manifest, and now current)" "$WORK/build2.out" ||
  { cat "$WORK/build2.out" >&2; fail "the second import of the same archive did not say it had nothing to build"; }
! grep -q "unpacking\|installing on top\|initrd" "$WORK/build2.out" || fail "the second import did work"
[ "$(versions)" -eq "$before" ] || fail "the second import made a new folder in $STORE/lab-oci"
[ "$(cat "$STORE/lab-oci/current")" = "$VERSION" ] || fail "the second import changed lab-oci's current version"
say "imported again in $(((${EPOCHREALTIME//[!0-9]/} - t) / 1000000)) s: nothing built (lab-oci@$VERSION, still $before version(s))"

# 3. Without what a node needs on top: one error, nothing committed.
if pctl image build lab-oci-bare >"$WORK/bare.out" 2>&1; then
  fail "a container image without a kernel was imported"
fi
grep -qF "is not yet a node's root: no kernel in /boot and no kernel_package; no systemd (add systemd-sysv to packages); no sshd (add openssh-server to packages); no curl" "$WORK/bare.out" ||
  { cat "$WORK/bare.out" >&2; fail "the bare import's error does not name what is missing"; }
[ -z "$(find "$STORE/lab-oci-bare" -mindepth 1 -maxdepth 1 2>/dev/null)" ] || fail "the failed import left something in $STORE/lab-oci-bare"
say "lab-oci-bare: $(grep -o "is not yet a node's root: no kernel[^;]*" "$WORK/bare.out" | head -1); ...; nothing committed"
say "all OCI import checks passed"
