#!/usr/bin/env bash
# make-test-kernel.sh CACHE_DIR
#
# Produces, for the netboot lab:
#   CACHE_DIR/vmlinuz            a Debian bookworm amd64 kernel (newest linux-image-6.1.0-N-amd64
#                                that apt offers; the signed package, else the -unsigned one)
#   CACHE_DIR/vmlinuz.version    "<package> <version> <sha256 of vmlinuz>"
#   CACHE_DIR/marker-initrd.img  a tiny busybox initramfs whose /init prints
#                                "PROVISION-LAB-MARKER kernel started cmdline=<...>" on the serial
#                                console and powers the VM off
#   CACHE_DIR/marker-initrd.img.stamp  hash of what the initrd was built from
#
# Idempotent: each result is rebuilt only when missing or no longer matching its stamp. Results
# are written to temporary names and renamed into place, under a lock, so concurrent callers and
# interrupted runs never leave a half-written file behind. Uses only the apt mirror the machine is
# configured with (apt-get download), no other network access.
set -euo pipefail

die() { echo "make-test-kernel: $*" >&2; exit 1; }
log() { echo "make-test-kernel: $*" >&2; }

[ $# -eq 1 ] || die "usage: $0 CACHE_DIR"
CACHE="$1"
mkdir -p "$CACHE"
CACHE="$(cd "$CACHE" && pwd)"

for tool in apt-get apt-cache dpkg-deb cpio gzip sha256sum flock; do
  command -v "$tool" >/dev/null || die "missing tool: $tool (see tests/lab/packages.txt)"
done
BUSYBOX="${LAB_BUSYBOX:-/bin/busybox}"
[ -x "$BUSYBOX" ] || die "missing $BUSYBOX (package busybox-static)"
# The initramfs has no libraries: the busybox in it must be static.
if LC_ALL=C file -L "$BUSYBOX" 2>/dev/null | grep 'dynamically linked' >/dev/null; then
  die "$BUSYBOX is dynamically linked; install busybox-static"
fi

TMP="$(mktemp -d "$CACHE/.tmp.XXXXXX")"
chmod 0755 "$TMP" # apt-get download (as root) fetches as user _apt
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# One builder at a time per cache directory.
exec 9>"$CACHE/.lock"
flock -w 900 9 || die "timed out waiting for the lock on $CACHE/.lock"

# ---------------------------------------------------------------- kernel
kernel_valid() {
  local f="$CACHE/vmlinuz" v="$CACHE/vmlinuz.version" sum
  [ -s "$f" ] && [ -s "$v" ] || return 1
  # bzImage: "HdrS" setup-header magic at offset 0x202
  [ "$(dd if="$f" bs=1 skip=514 count=4 2>/dev/null)" = "HdrS" ] || return 1
  sum="$(sha256sum "$f" | cut -d' ' -f1)"
  [ "$(cut -d' ' -f3 "$v")" = "$sum" ]
}

# Newest linux-image-6.1.0-N-amd64 with a candidate version; -unsigned only where the signed
# one is not offered. Prints the package name.
pick_kernel_package() {
  local names
  names="$(apt-cache pkgnames linux-image-6.1.0- 2>/dev/null |
    grep -E '^linux-image-6\.1\.0-[0-9]+-amd64(-unsigned)?$' | sort -V -r || true)"
  local abi pkg
  local abis
  abis="$(sed -E 's/^linux-image-(6\.1\.0-[0-9]+)-amd64.*/\1/' <<<"$names" | sort -V -r -u)"
  for abi in $abis; do
    for pkg in "linux-image-$abi-amd64" "linux-image-$abi-amd64-unsigned"; do
      grep -qx "$pkg" <<<"$names" || continue
      # (captured first: grep -q closing the pipe early would fail the pipeline under pipefail)
      local policy
      policy="$(apt-cache policy "$pkg" 2>/dev/null || true)"
      if grep -q 'Candidate: [0-9]' <<<"$policy"; then
        echo "$pkg"
        return 0
      fi
    done
  done
  return 1
}

build_kernel() {
  local pkg
  if ! pkg="$(pick_kernel_package)"; then
    if [ "$(id -u)" -eq 0 ]; then
      log "no linux-image-6.1.0-*-amd64 known to apt; running apt-get update"
      apt-get update -qq >&2
      pkg="$(pick_kernel_package)" || die "apt offers no linux-image-6.1.0-*-amd64 package"
    else
      die "apt offers no linux-image-6.1.0-*-amd64 package (run apt-get update as root)"
    fi
  fi
  log "downloading $pkg from the configured apt mirror"
  mkdir -p "$TMP/deb"
  chmod 0777 "$TMP/deb"
  (cd "$TMP/deb" && apt-get download -q "$pkg" >&2) || die "apt-get download $pkg failed"
  local deb
  local debs=("$TMP"/deb/*.deb)
  deb="${debs[0]}"
  [ -f "$deb" ] || die "apt-get download $pkg left no .deb"
  local version
  version="$(dpkg-deb -f "$deb" Version)"
  # Only the kernel image is needed: extract ./boot/vmlinuz-* rather than all the modules.
  mkdir -p "$TMP/x"
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$TMP/x" --wildcards './boot/vmlinuz-*' ||
    die "no /boot/vmlinuz-* in $deb"
  local img
  local imgs=("$TMP"/x/boot/vmlinuz-*)
  img="${imgs[0]}"
  [ "$(dd if="$img" bs=1 skip=514 count=4 2>/dev/null)" = "HdrS" ] || die "$img is not a bzImage"
  cp "$img" "$CACHE/.vmlinuz.new"
  echo "$pkg $version $(sha256sum "$CACHE/.vmlinuz.new" | cut -d' ' -f1)" >"$CACHE/.vmlinuz.version.new"
  mv -f "$CACHE/.vmlinuz.new" "$CACHE/vmlinuz"
  mv -f "$CACHE/.vmlinuz.version.new" "$CACHE/vmlinuz.version"
  rm -rf "$TMP/deb" "$TMP/x"
  log "kernel: $(cat "$CACHE/vmlinuz.version")"
}

# ---------------------------------------------------------------- marker initrd
# /init of the marker initramfs. The marker goes to the first serial port directly (so it is
# there even without console=ttyS0) and to /dev/console only when that is not the same port.
read -r -d '' INIT_SCRIPT <<'EOF' || true
#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dev /tmp /sbin /usr/bin /usr/sbin
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null || mdev -s
line="PROVISION-LAB-MARKER kernel started cmdline=$(cat /proc/cmdline)"
if [ -c /dev/ttyS0 ] && echo "$line" >/dev/ttyS0; then
  # Also on the kernel console, unless that is ttyS0 already.
  case "$(cat /proc/cmdline)" in
    *console=ttyS0*) ;;
    *) echo "$line" >/dev/console ;;
  esac
else
  echo "$line" >/dev/console
fi
echo "PROVISION-LAB-MARKER powering off" >/dev/console
sync
poweroff -f
# Not reached unless poweroff failed: stop here rather than panic.
while :; do sleep 3600; done
EOF

initrd_stamp() {
  { printf '%s' "$INIT_SCRIPT"; sha256sum <"$BUSYBOX"; } | sha256sum | cut -d' ' -f1
}

initrd_valid() {
  [ -s "$CACHE/marker-initrd.img" ] && [ -s "$CACHE/marker-initrd.img.stamp" ] &&
    [ "$(cat "$CACHE/marker-initrd.img.stamp")" = "$(initrd_stamp)" ] &&
    gzip -t "$CACHE/marker-initrd.img" 2>/dev/null
}

build_initrd() {
  local root="$TMP/initrd"
  mkdir -p "$root"/{bin,dev,proc,sys,tmp,sbin}
  cp "$BUSYBOX" "$root/bin/busybox"
  ln -s busybox "$root/bin/sh"
  printf '%s\n' "$INIT_SCRIPT" >"$root/init"
  chmod 0755 "$root/init" "$root/bin/busybox"
  # /dev/console comes from the kernel's built-in initramfs; /init mounts devtmpfs on /dev.
  (cd "$root" && {
    find . -mindepth 1 | LC_ALL=C sort
  } | cpio -o -H newc -R 0:0 --quiet >"$TMP/initrd.cpio") || die "cpio failed"
  gzip -9 -n <"$TMP/initrd.cpio" >"$CACHE/.marker-initrd.img.new"
  initrd_stamp >"$CACHE/.marker-initrd.img.stamp.new"
  mv -f "$CACHE/.marker-initrd.img.new" "$CACHE/marker-initrd.img"
  mv -f "$CACHE/.marker-initrd.img.stamp.new" "$CACHE/marker-initrd.img.stamp"
  log "initrd: $CACHE/marker-initrd.img ($(stat -c %s "$CACHE/marker-initrd.img") bytes)"
}

if kernel_valid; then
  log "kernel cached: $(cat "$CACHE/vmlinuz.version")"
else
  build_kernel
fi
if initrd_valid; then
  log "initrd cached: $CACHE/marker-initrd.img"
else
  build_initrd
fi
