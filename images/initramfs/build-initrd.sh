#!/usr/bin/env bash
# build-initrd.sh ROOTFS OUT_INITRD
#
# Builds provisiond's netboot initramfs (gzip'd newc cpio) for the kernel installed in ROOTFS:
#   /init                         images/initramfs/init (busybox sh)
#   /etc/provision/udhcpc.script  images/initramfs/udhcpc.script
#   /etc/provision/modules        modules /init loads, in order ("NAME required|optional")
#   /etc/provision/initrd.info    kernel version, inputs
#   /bin/busybox + applet links   the host's static busybox (package busybox-static)
#   /sbin/provision-mount         the static NFS mount helper (provisiond/tools/provision-mount.cc)
#   /sbin/provision-fetch         the static HTTP client that sends from a privileged port
#                                 (provisiond/tools/provision-fetch.cc: overlay, reports)
#   /lib/modules/VERSION/...      every network driver of the kernel (drivers/net/ethernet, USB
#                                 NICs with the USB host controllers, virtio (and its PCI transport),
#                                 vmxnet3, Hyper-V), NFS
#                                 and overlay modules from ROOTFS and their dependencies
#                                 (modules.dep closure + softdeps), with modules.dep, modules.alias,
#                                 modules.softdep, modules.builtin* and modules.order cut down to them;
#                                 /init loads the NIC drivers its devices ask for (modalias)
#   /lib/firmware/...             the firmware files those drivers name (their modinfo) that ROOTFS has
#                                 (an image gets them from packages: firmware-realtek, ...)
#   /etc/provision/nic-modules    the NIC drivers, for /init's fallback (load them all)
# Nothing else from ROOTFS. Deterministic: same inputs, same bytes (sorted entries, owner 0:0,
# fixed mtimes, renumbered inodes, gzip -n).
#
# Environment:
#   PROVISION_MOUNT   the static provision-mount binary. Default: the first of
#                     build/provisiond/provision-mount, build/provisiond/tools/provision-mount,
#                     build/tools/provision-mount, build/provision-mount (in the source tree), then
#                     provision-mount on PATH; if none exists it is compiled from
#                     provisiond/tools/provision-mount.cc with ${CXX:-c++} -static.
#   PROVISION_FETCH   the static provision-fetch binary, found or compiled the same way
#   BUSYBOX           static busybox (default /bin/busybox)
#   KVER              kernel version (default: the one in ROOTFS/lib/modules with a
#                     ROOTFS/boot/vmlinuz-VERSION; the newest if several)
#   INITRD_MODULES    modules to include (default: the list below); INITRD_EXTRA_MODULES: more
#                     (an image manifest's initrd_modules)
#   INITRD_NIC_DRIVERS  all (default): every network driver, loaded by modalias; none: only the
#                     modules listed
#   SOURCE_DATE_EPOCH mtime of every entry (default 0)
# Needs: cpio (GNU, --reproducible), gzip, find, sort, awk (xz, zstd for compressed modules). Runs as any user that can read ROOTFS
# (/boot/vmlinuz and some modules may be root-only).
set -euo pipefail
# Under pipefail `cmd | grep -q` fails when grep exits at its first match
# before cmd has written everything (cmd gets SIGPIPE): the greps below read
# their whole input instead.

die() { echo "build-initrd: $*" >&2; exit 1; }
log() { echo "build-initrd: $*" >&2; }

[ $# -eq 2 ] || die "usage: $0 ROOTFS OUT_INITRD"
ROOTFS="$(cd "$1" && pwd)" || die "no such directory: $1"
OUT="$2"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="$(cd "$HERE/../.." && pwd)"
BUSYBOX="${BUSYBOX:-/bin/busybox}"
EPOCH="${SOURCE_DATE_EPOCH:-0}"

# name:required|optional. The file systems are required; nfsv3 is optional (NFSv4 is the
# default); netconsole (the network console) is optional. NIC drivers are not listed: every one is included and /init loads the ones its
# devices ask for. With INITRD_NIC_DRIVERS=none, list the NIC's driver here instead.
DEFAULT_MODULES="nfsv4:required nfsv3:optional overlay:required netconsole:optional"
MODULES="${INITRD_MODULES:-$DEFAULT_MODULES} ${INITRD_EXTRA_MODULES:-}"

for tool in cpio gzip find sort awk; do
  command -v "$tool" >/dev/null || die "missing tool: $tool"
done
cpio --help 2>/dev/null | grep -- --reproducible >/dev/null || die "cpio lacks --reproducible (need GNU cpio >= 2.13)"
[ -x "$BUSYBOX" ] || die "missing $BUSYBOX (package busybox-static)"
if command -v file >/dev/null && LC_ALL=C file -L "$BUSYBOX" | grep 'dynamically linked' >/dev/null; then
  die "$BUSYBOX is dynamically linked; install busybox-static"
fi
for f in "$HERE/init" "$HERE/udhcpc.script"; do [ -r "$f" ] || die "missing $f"; done

# ---------------------------------------------------------------- kernel version
if [ -z "${KVER:-}" ]; then
  KVER="$(for d in "$ROOTFS"/lib/modules/*/; do
    v="$(basename "$d")"
    [ -e "$ROOTFS/boot/vmlinuz-$v" ] && [ -s "$d/modules.dep" ] && echo "$v"
  done | sort -V | tail -n 1)"
  [ -n "$KVER" ] || die "no kernel in $ROOTFS (want /boot/vmlinuz-V and /lib/modules/V/modules.dep)"
fi
MODDIR="$ROOTFS/lib/modules/$KVER"
[ -s "$MODDIR/modules.dep" ] || die "missing $MODDIR/modules.dep (run depmod in the image)"

TMP="$(mktemp -d "${TMPDIR:-/tmp}/build-initrd.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
STAGE="$TMP/root"

# ---------------------------------------------------------------- provision-mount
is_static() {
  # An ELF file without a PT_INTERP program header (type 3) asks for no
  # dynamic loader: static or static-pie. Read with od (coreutils), as
  # neither file(1) nor readelf is on every control node (64-bit ELF, little-endian).
  local f="$1" phoff phentsize phnum i
  [ "$(od -An -tx1 -N4 "$f" 2>/dev/null | tr -d ' \n')" = 7f454c46 ] || return 1
  phoff=$(od -An -tu8 -j32 -N8 "$f" | tr -d ' ')
  phentsize=$(od -An -tu2 -j54 -N2 "$f" | tr -d ' ')
  phnum=$(od -An -tu2 -j56 -N2 "$f" | tr -d ' ')
  for ((i = 0; i < phnum; i++)); do
    [ "$(od -An -tu4 -j$((phoff + i * phentsize)) -N4 "$f" | tr -d ' ')" != 3 ] || return 1
  done
}
# static_tool NAME GIVEN: the static binary of provisiond/tools/NAME.cc: GIVEN, else the first
# built one in the source tree or on PATH, else compiled here.
static_tool() {
  local name="$1" bin="$2" c
  if [ -z "$bin" ]; then
    for c in "$SRC/build/provisiond/$name" "$SRC/build/provisiond/tools/$name" \
      "$SRC/build/tools/$name" "$SRC/build/$name" "$(command -v "$name" || true)"; do
      [ -n "$c" ] && [ -x "$c" ] && { bin="$c"; break; }
    done
  fi
  if [ -z "$bin" ]; then
    CXX="${CXX:-c++}"
    command -v "$CXX" >/dev/null || die "no $name found and no C++ compiler ($CXX) to build it"
    log "compiling $name with $CXX"
    "$CXX" -std=c++20 -O2 -Wall -Wextra -static -s -o "$TMP/$name" \
      "$SRC/provisiond/tools/$name.cc" || die "compiling $name failed"
    bin="$TMP/$name"
  fi
  [ -x "$bin" ] || die "$bin ($name) is not executable"
  is_static "$bin" || die "$bin is not statically linked (the initramfs has no libraries)"
  echo "$bin"
}
PM="$(static_tool provision-mount "${PROVISION_MOUNT:-}")"
PF="$(static_tool provision-fetch "${PROVISION_FETCH:-}")"

# ---------------------------------------------------------------- module closure
# modules.dep lines: "kernel/fs/nfs/nfsv4.ko: kernel/net/dns_resolver/dns_resolver.ko ...".
# Module names compare with - and _ as the same character.
modpath() { # NAME -> relative path in modules.dep, or nothing
  awk -v want="$(echo "$1" | tr - _)" -F: '{
      p = $1; n = p; sub(/.*\//, "", n); sub(/\.ko(\.(xz|zst|gz))?$/, "", n); gsub(/-/, "_", n)
      if (n == want) { print p; exit }
    }' "$MODDIR/modules.dep"
}
moddeps() { # relative path -> its dependencies (relative paths)
  awk -v p="$1" -F': *' '$1 == p { print $2; exit }' "$MODDIR/modules.dep" | tr ' ' '\n' | sed '/^$/d'
}
is_builtin() {
  [ -r "$MODDIR/modules.builtin" ] &&
    sed -e 's|.*/||' -e 's|\.ko$||' -e 's|-|_|g' "$MODDIR/modules.builtin" | grep -x "$(echo "$1" | tr - _)" >/dev/null
}
softdeps() { # NAME pre|post -> module names
  [ -r "$MODDIR/modules.softdep" ] || return 0
  awk -v want="$(echo "$1" | tr - _)" -v which="$2" '
    $1 == "softdep" { n = $2; gsub(/-/, "_", n); if (n != want) next
      mode = "pre"; for (i = 3; i <= NF; i++) {
        if ($i == "pre:") mode = "pre"; else if ($i == "post:") mode = "post"
        else if (mode == which && $i !~ /:/) print $i } }' "$MODDIR/modules.softdep"
}

declare -A INCLUDED=() # relative path -> 1
LOAD_LIST=()           # "name kind", load order
add_with_deps() {
  local p="$1" d
  [ -n "${INCLUDED[$p]:-}" ] && return 0
  INCLUDED[$p]=1
  for d in $(moddeps "$p"); do add_with_deps "$d"; done
}
add_module() { # NAME KIND
  local name="$1" kind="$2" p s
  for s in $(softdeps "$name" pre); do add_module "$s" optional; done
  p="$(modpath "$name")"
  if [ -z "$p" ]; then
    if is_builtin "$name"; then
      log "$name is built into $KVER"
      return 0
    fi
    [ "$kind" = required ] && die "module $name not found in $MODDIR"
    log "warning: module $name not found in $MODDIR; skipped"
    return 0
  fi
  add_with_deps "$p"
  LOAD_LIST+=("$(echo "$name" | tr - _) $kind")
  for s in $(softdeps "$name" post); do add_module "$s" optional; done
}
for entry in $MODULES; do
  case "$entry" in
    *:required) add_module "${entry%:required}" required ;;
    *:optional) add_module "${entry%:optional}" optional ;;
    *) add_module "$entry" required ;;
  esac
done

# Every network driver of the kernel and what it needs: loaded at boot by modalias, so the NIC
# that booted comes up whatever its make (Realtek, Intel, Aquantia, Broadcom, Mellanox...).
NIC_LIST=()
if [ "${INITRD_NIC_DRIVERS:-all}" = all ]; then
  while read -r p; do
    add_with_deps "$p"
    n="${p##*/}"
    NIC_LIST+=("$(echo "${n%%.ko*}" | tr - _)")
  done < <(awk -F: '{print $1}' "$MODDIR/modules.dep" | grep -E \
    '^kernel/drivers/net/(ethernet|usb)/|^kernel/drivers/net/(virtio_net|vmxnet3/vmxnet3|hyperv/hv_netvsc)\.ko|^kernel/drivers/usb/host/(xhci-pci|ehci-pci|ohci-pci|uhci-hcd)\.ko|^kernel/drivers/virtio/virtio_pci\.ko' |
    LC_ALL=C sort)
  log "${#NIC_LIST[@]} network and USB host drivers"
fi

# ---------------------------------------------------------------- staging tree
mkdir -p "$STAGE"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys,run,tmp,newroot,etc/provision,root}
mkdir -p "$STAGE/lib/modules/$KVER"
chmod 1777 "$STAGE/tmp"
chmod 0700 "$STAGE/root"
install -m 0755 "$BUSYBOX" "$STAGE/bin/busybox"
# Links for every applet, where busybox itself would install them (no PATH surprises: the kernel
# calls /sbin/modprobe for request_module, switch_root needs /bin/sh only for us).
while read -r applet; do
  case "$applet" in "" | bin/busybox) continue ;; esac
  if [ -e "$STAGE/$applet" ] || [ -L "$STAGE/$applet" ]; then continue; fi
  ln -s /bin/busybox "$STAGE/$applet"
done < <("$BUSYBOX" --list-full | LC_ALL=C sort)
[ -L "$STAGE/bin/sh" ] || ln -s busybox "$STAGE/bin/sh"
install -m 0755 "$HERE/init" "$STAGE/init"
install -m 0755 "$HERE/udhcpc.script" "$STAGE/etc/provision/udhcpc.script"
install -m 0755 "$PM" "$STAGE/sbin/provision-mount"
install -m 0755 "$PF" "$STAGE/sbin/provision-fetch"

for p in "${!INCLUDED[@]}"; do
  mkdir -p "$STAGE/lib/modules/$KVER/$(dirname "$p")"
  install -m 0644 "$MODDIR/$p" "$STAGE/lib/modules/$KVER/$p"
done
# Index files cut down to the included modules (every dependency of an included module is
# included, so each kept modules.dep line is complete).
{
  for p in "${!INCLUDED[@]}"; do echo "$p"; done
} | LC_ALL=C sort >"$TMP/included"
awk -F: 'NR == FNR { keep[$1] = 1; next } keep[$1]' "$TMP/included" "$MODDIR/modules.dep" \
  >"$STAGE/lib/modules/$KVER/modules.dep"
[ -r "$MODDIR/modules.order" ] &&
  awk 'NR == FNR { keep[$1] = 1; next } keep[$1]' "$TMP/included" "$MODDIR/modules.order" \
    >"$STAGE/lib/modules/$KVER/modules.order"
if [ -r "$MODDIR/modules.alias" ]; then
  sed -e 's|.*/||' -e 's|\.ko.*$||' -e 's|-|_|g' "$TMP/included" | LC_ALL=C sort -u >"$TMP/names"
  awk 'NR == FNR { keep[$1] = 1; next } /^alias / { n = $3; gsub(/-/, "_", n); if (keep[n]) print }' \
    "$TMP/names" "$MODDIR/modules.alias" >"$STAGE/lib/modules/$KVER/modules.alias"
fi
# The firmware files a module names: "firmware=NAME" entries of its .modinfo section, which
# are NUL-separated strings (no modinfo needed on the build host).
module_firmware() {
  case "$1" in
    *.xz) xz -dc "$1" ;;
    *.zst) zstd -dc "$1" ;;
    *) cat "$1" ;;
  esac 2>/dev/null | tr '\0' '\n' | sed -n 's/^firmware=\([A-Za-z0-9._/+-]*\)$/\1/p'
}
# Firmware the included drivers name, where ROOTFS has it (compressed or not).
FW=0
while read -r name; do
  for f in "$ROOTFS/lib/firmware/$name" "$ROOTFS/lib/firmware/$name.xz" "$ROOTFS/lib/firmware/$name.zst"; do
    [ -f "$f" ] || continue
    mkdir -p "$STAGE/lib/firmware/$(dirname "$name")"
    cp -L "$f" "$STAGE/lib/firmware/${f#"$ROOTFS/lib/firmware/"}"
    FW=$((FW + 1))
  done
done < <(for p in "${!INCLUDED[@]}"; do module_firmware "$MODDIR/$p"; done | LC_ALL=C sort -u)
printf '%s\n' "${NIC_LIST[@]}" | sed '/^$/d' >"$STAGE/etc/provision/nic-modules"
for f in modules.builtin modules.builtin.modinfo modules.softdep; do
  [ -r "$MODDIR/$f" ] && install -m 0644 "$MODDIR/$f" "$STAGE/lib/modules/$KVER/$f"
done
printf '%s\n' "${LOAD_LIST[@]}" | awk '!seen[$1]++' >"$STAGE/etc/provision/modules"
{
  echo "kernel=$KVER"
  echo "busybox=$("$BUSYBOX" 2>&1 | head -n 1)"
  echo "provision_mount_sha256=$(sha256sum <"$PM" | cut -d' ' -f1)"
  echo "provision_fetch_sha256=$(sha256sum <"$PF" | cut -d' ' -f1)"
  echo "modules=$(awk '{ printf "%s%s", sep, $1; sep = " " }' "$STAGE/etc/provision/modules")"
} >"$STAGE/etc/provision/initrd.info"

# ---------------------------------------------------------------- archive
find "$STAGE" -exec touch -h -d "@$EPOCH" {} +
mkdir -p "$(dirname "$OUT")"
(cd "$STAGE" && find . -mindepth 1 -printf '%P\n' | LC_ALL=C sort |
  cpio -o -H newc -R 0:0 --reproducible --quiet) >"$TMP/initrd.cpio" || die "cpio failed"
gzip -9 -n <"$TMP/initrd.cpio" >"$TMP/initrd.img"
mv -f "$TMP/initrd.img" "$OUT.tmp.$$"
mv -f "$OUT.tmp.$$" "$OUT"
log "$OUT: kernel $KVER, ${#INCLUDED[@]} modules, $FW firmware files, $(stat -c %s "$OUT") bytes"
