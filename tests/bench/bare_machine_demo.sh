#!/usr/bin/env bash
# bare_machine_demo.sh: the README's first command as a newcomer runs it on a
# bare Debian 12 machine: a fresh root tree (mmdebstrap minbase with git and
# ca-certificates, Debian's mirror), entered as a container's root (a mount
# namespace of its own and pivot_root, so /proc/self/mounts lists its own
# mounts, as on a machine), a clone of this checkout's HEAD in it, then
# `scripts/demo.sh --once` twice: from nothing (every package, the build, the
# lab image), and again. Prints each run's time and each step's, and the
# packages installed. The root tree's /etc/mtab is the link systemd makes at
# boot on a real machine; policy-rc.d keeps package scripts from starting
# daemons on this machine's network (the demo starts its own in its network
# namespace), and the CAs in this machine's /usr/local/share/ca-certificates
# (its network's) are the root tree's too.
#
# With --tests: the README's second command instead, `scripts/test.sh`, once
# (every package the tests need, the build, every test).
#
# Usage: tests/bench/bare_machine_demo.sh [--tests] [--root DIR] [--keep]     (root)
# DIR (default /var/tmp/provisiond-bare-root) is removed first, and at the
# end unless --keep. See tests/bench/README.md.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
root=/var/tmp/provisiond-bare-root keep=0 tests=0
while (($#)); do
  case "$1" in
    --tests) tests=1; shift ;;
    --root) root="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "usage: $0 [--tests] [--root DIR] [--keep]" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "run as root (mmdebstrap, mount namespaces)" >&2; exit 2; }
remove_root() {
  # Never through a mount: the container's mounts live in its own namespace,
  # gone with it; refuse if anything is mounted below anyway.
  if grep -q " $root[/ ]" /proc/mounts; then echo "something is mounted under $root" >&2; exit 1; fi
  rm -rf --one-file-system "$root"
}
remove_root
t0=$SECONDS
mmdebstrap --variant=minbase --include=git,ca-certificates bookworm "$root" \
  "deb http://deb.debian.org/debian bookworm main" \
  "deb http://deb.debian.org/debian bookworm-updates main" \
  "deb http://deb.debian.org/debian-security bookworm-security main" >"$root.mmdebstrap.log" 2>&1
echo "bare root tree: $((SECONDS - t0)) s, $(chroot "$root" dpkg-query -W | wc -l) packages"
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
cp /etc/resolv.conf "$root/etc/resolv.conf"
ln -sf ../proc/self/mounts "$root/etc/mtab"
# The CAs this machine's network needs (a TLS-inspecting egress, say): a
# machine on the same network has them too.
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
  chroot "$root" update-ca-certificates >/dev/null
fi
git clone -q "$repo" "$root/root/provisiond"
git -C "$root/root/provisiond" log --oneline -1
# enter COMMAND: runs COMMAND as the container's root.
enter() {
  unshare --mount --fork /bin/bash -c '
    set -e
    root="$1"
    mount --make-rprivate /
    mount --bind "$root" "$root"
    mount --rbind /dev "$root/dev"
    mount --rbind /sys "$root/sys"
    mount -t tmpfs tmpfs "$root/run"
    mkdir -p "$root/.oldroot"
    cd "$root"
    pivot_root . .oldroot
    mount -t proc proc /proc
    umount -l /.oldroot
    exec /usr/sbin/chroot / /bin/bash -c "$2"
  ' enter "$root" "$1"
}
rc=0
if [ "$tests" -eq 1 ]; then
  t=$SECONDS
  enter 'cd /root/provisiond && scripts/test.sh' >"$root.tests.log" 2>&1 || rc=$?
  echo "test command: $((SECONDS - t)) s (exit $rc); packages now: $(chroot "$root" dpkg-query -W | wc -l)"
  tail -n 60 "$root.tests.log"
  [ "$keep" -eq 1 ] || remove_root
  exit "$rc"
fi
for run in first again; do
  t=$SECONDS
  enter 'cd /root/provisiond && scripts/demo.sh --once' >"$root.$run.log" 2>&1 || rc=$?
  echo "demo, $run run: $((SECONDS - t)) s (exit $rc); its steps:"
  grep -E '^== \[|ready .* after' "$root.$run.log" | sed 's/^/  /'
  [ "$rc" -eq 0 ] || { tail -n 30 "$root.$run.log"; break; }
  [ "$run" = again ] || echo "packages now: $(chroot "$root" dpkg-query -W | wc -l)"
done
[ "$keep" -eq 1 ] || remove_root
exit "$rc"
