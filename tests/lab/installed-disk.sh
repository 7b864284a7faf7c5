#!/usr/bin/env bash
# installed-disk.sh TREE OUTDIR NAME ADDR/PREFIX AUTHORIZED_KEYS_FILE|- [USER:PASSWORD_FILE]
#
# An "installed machine" for the lab: a disk with its own Debian, which the machine boots by
# itself (not netbooted) and which provisiond later adopts over SSH (provisionctl node adopt).
# From TREE, a Debian 12 root tree made by mmdebstrap (an image of the image store: systemd,
# openssh-server, initramfs-tools, one kernel in /boot and /lib/modules), it writes:
#   OUTDIR/NAME.root.img    raw ext4 (sparse), label NAME-root (cut to 16 characters), the tree's
#                           used size + 1 GiB free; fstab mounts it by UUID
#   OUTDIR/NAME.vmlinuz     the tree's kernel
#   OUTDIR/NAME.initrd      the tree's own initramfs-tools (mkinitramfs run in the tree) with only
#                           what a virtio disk needs (MODULES=list: virtio_pci, virtio_blk, ext4):
#                           small, as TCG unpacks a big initrd slowly
#   OUTDIR/NAME.ssh_host_ed25519_key.pub  its SSH host key (made here when the tree has none), for
#                           adopt's --host-key
# lab.sh's `lab_vm_start NAME MAC disk` boots it with QEMU's direct kernel boot
# (root=UUID=<the image's UUID>); power.sh does with "NAME disk" in $LAB_DIR/firmware.
#
# The machine's own changes to the tree: hostname NAME, /etc/hosts, /etc/fstab, a new machine-id
# (no first-boot presets), systemd-networkd with ADDR/PREFIX on its Ethernet NIC (and
# systemd-networkd-wait-online, so network-online.target waits for it), root's authorized_keys
# (none with -), with USER:PASSWORD_FILE an owner's account USER in group sudo whose password is
# the file's first line (as a machine's owner has one: for node adopt --password --user USER),
# the netboot agent's units (provision-*.service) no longer started: a plain Debian with sshd.
#
# TREE is a shared cache and is never modified, nor its atimes: everything runs in a private mount
# namespace (unshare -m) that sees TREE only through a read-only bind mount. mkinitramfs runs
# chrooted in it with a tmpfs on /tmp and /proc, /sys, /dev bound; the changes go to an overlayfs
# whose upper layer is a tmpfs, and mkfs.ext4 -d copies the merged tree (owners, modes, xattrs and
# file capabilities kept) into the image. No loop device, no mount of the image. Needs root.
# Progress and seconds per step go to stderr.
set -euo pipefail

die() { echo "installed-disk: $*" >&2; exit 1; }
log() { echo "installed-disk: $*" >&2; }

[ $# -eq 5 ] || [ $# -eq 6 ] || die "usage: $0 TREE OUTDIR NAME ADDR/PREFIX AUTHORIZED_KEYS_FILE|- [USER:PASSWORD_FILE]"
tree="$1" out="$2" name="$3" addr="$4" keys="$5" owner="${6:-}"
[ "$(id -u)" -eq 0 ] || die "needs root (mount namespace, chroot, file owners)"
[[ "$name" =~ ^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$ ]] || die "NAME must be a host name: '$name'"
[[ "$addr" =~ ^([0-9]{1,3}\.){3}[0-9]{1,3}/[0-9]{1,2}$ ]] || die "ADDR/PREFIX like 10.99.0.50/24: '$addr'"
[ "$keys" = - ] || [ -s "$keys" ] || die "no authorized keys in '$keys'"
if [ -n "$owner" ]; then
  [[ "${owner%%:*}" =~ ^[a-z][a-z0-9-]{0,30}$ ]] || die "USER:PASSWORD_FILE: '${owner%%:*}' is not a user name"
  [ -s "${owner#*:}" ] || die "USER:PASSWORD_FILE: no password in '${owner#*:}'"
fi
[ -x "$tree/usr/sbin/mkinitramfs" ] || die "$tree: no mkinitramfs (initramfs-tools) in the tree"
for tool in unshare chroot mkfs.ext4 ssh-keygen; do
  command -v "$tool" >/dev/null || die "missing tool: $tool"
done
tree="$(cd "$tree" && pwd)"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

# The kernel: exactly one in the tree.
kernels=("$tree"/boot/vmlinuz-*)
{ [ ${#kernels[@]} -eq 1 ] && [ -f "${kernels[0]}" ]; } ||
  die "$tree/boot: want one vmlinuz-*, found: ${kernels[*]}"
kver="${kernels[0]##*/vmlinuz-}"
[ -d "$tree/lib/modules/$kver" ] || die "$tree/lib/modules/$kver missing"

# The rest runs in a private mount namespace: its mounts vanish with it, whatever happens.
if [ -z "${_INSTALLED_DISK_NS:-}" ]; then
  work="$(mktemp -d "${TMPDIR:-/tmp}/installed-disk.XXXXXX")"
  rc=0
  _INSTALLED_DISK_NS="$work" unshare --mount --propagation private -- "$BASH" "$0" "$@" || rc=$?
  # Only an empty mount point (the tmpfs was the namespace's) and maybe partial outputs remain.
  rmdir "$work"
  [ $rc -eq 0 ] || rm -f "$out/.$name".*.tmp
  exit $rc
fi
work="$_INSTALLED_DISK_NS"

t0="$EPOCHREALTIME"
ts="$t0"
step() { # step LABEL: seconds since the previous step
  local now="$EPOCHREALTIME"
  LC_ALL=C awk -v l="$1" -v a="$ts" -v b="$now" 'BEGIN { printf "installed-disk: %-28s %6.1f s\n", l, b - a }' >&2
  ts="$now"
}

mount -t tmpfs -o mode=0700 installed-disk "$work"
mkdir "$work"/{tree,chroot,upper,ovl,root}
# TREE, read-only and without atime updates, twice: once as the overlay's lower layer, once to
# chroot into (with its own mounts on top, which must not show in the image).
for d in tree chroot; do
  mount --bind "$tree" "$work/$d"
  mount -o remount,bind,ro,noatime "$work/$d"
done

# ---- initrd: the tree's mkinitramfs, small
c="$work/chroot"
mount -t tmpfs -o mode=1777 tmp "$c/tmp"
mount --bind /proc "$c/proc"
mount --bind /sys "$c/sys"
mount --bind /dev "$c/dev"
mkdir -p "$c/tmp/conf"/{conf.d,hooks,scripts}
cat >"$c/tmp/conf/initramfs.conf" <<'EOF'
# installed-disk.sh: only what booting from a virtio disk needs (under TCG a big initrd unpacks slowly).
MODULES=list
BUSYBOX=n
KEYMAP=n
COMPRESS=gzip
DEVICE=
NFSROOT=auto
RUNSIZE=10%
FSTYPE=ext4
EOF
echo RESUME=none >"$c/tmp/conf/conf.d/resume"
printf '%s\n' virtio_pci virtio_blk ext4 crc32c_generic >"$c/tmp/conf/modules"
chroot "$c" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin TMPDIR=/tmp \
  mkinitramfs -d /tmp/conf -o /tmp/initrd "$kver" >"$work/mkinitramfs.log" 2>&1 || {
  cat "$work/mkinitramfs.log" >&2
  die "mkinitramfs failed"
}
grep -v '^I: ' "$work/mkinitramfs.log" >&2 || true
cp "$c/tmp/initrd" "$out/.$name.initrd.tmp"
cp "${kernels[0]}" "$out/.$name.vmlinuz.tmp"
umount "$c/dev" "$c/sys" "$c/proc" "$c/tmp" "$c"
step "initrd ($kver)"

# ---- the machine's own changes, in an overlay over the tree
mount -t overlay installed-disk -o "lowerdir=$work/tree,upperdir=$work/upper,workdir=$work/ovl" "$work/root"
r="$work/root"
# put PATH MODE: write stdin to the tree's PATH, owned by root; an existing file (or a symlink,
# which must not lead out of the tree) is replaced.
put() {
  [ ! -L "$r$(dirname "$1")" ] || die "$(dirname "$1") is a symlink in the tree"
  rm -f "$r$1"
  cat >"$r$1"
  chown 0:0 "$r$1"
  chmod "$2" "$r$1"
}
# link TARGET PATH: a symlink, as systemctl enable makes them.
link() {
  mkdir -p "$r$(dirname "$2")"
  ln -sfn "$1" "$r$2"
}
ip="${addr%/*}"
uuid="$(cat /proc/sys/kernel/random/uuid)"
label="${name:0:11}-root"
echo "$name" | put /etc/hostname 0644
put /etc/hosts 0644 <<EOF
127.0.0.1	localhost
$ip	$name
::1	localhost ip6-localhost ip6-loopback
ff02::1	ip6-allnodes
ff02::2	ip6-allrouters
EOF
put /etc/fstab 0644 <<EOF
# <file system> <mount point> <type> <options> <dump> <pass>
UUID=$uuid	/	ext4	errors=remount-ro	0	1
EOF
# Its own machine-id: an installed machine's first boot is not the image's (an empty one would
# make systemd apply presets at that boot, re-enabling units).
printf '%s\n' "$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')" | put /etc/machine-id 0444
if [ -e "$r/var/lib/dbus/machine-id" ] || [ -L "$r/var/lib/dbus/machine-id" ]; then
  rm -f "$r/var/lib/dbus/machine-id"
  ln -s /etc/machine-id "$r/var/lib/dbus/machine-id"
fi
put /etc/motd 0644 <<EOF
provisiond lab installed machine $name: its own Debian on its own disk.
EOF
# systemd-networkd, as `systemctl enable systemd-networkd systemd-networkd-wait-online` does.
u=/lib/systemd/system
[ -f "$r$u/systemd-networkd.service" ] || die "no systemd-networkd in the tree"
link "$u/systemd-networkd.service" /etc/systemd/system/dbus-org.freedesktop.network1.service
link "$u/systemd-networkd.service" /etc/systemd/system/multi-user.target.wants/systemd-networkd.service
link "$u/systemd-networkd.socket" /etc/systemd/system/sockets.target.wants/systemd-networkd.socket
link "$u/systemd-networkd-wait-online.service" \
  /etc/systemd/system/network-online.target.wants/systemd-networkd-wait-online.service
mkdir -p "$r/etc/systemd/network"
put /etc/systemd/network/10-lab.network 0644 <<EOF
# installed-disk.sh: the lab network's static address (no DHCP, no router advertisements).
[Match]
Type=ether
Name=en* eth*

[Network]
Address=$addr
LinkLocalAddressing=no
IPv6AcceptRA=no
EOF
# root's SSH keys.
if [ -L "$r/root" ] || [ -L "$r/root/.ssh" ]; then die "/root or /root/.ssh is a symlink in the tree"; fi
mkdir -p "$r/root/.ssh"
chown 0:0 "$r/root/.ssh"
chmod 0700 "$r/root/.ssh"
if [ "$keys" = - ]; then rm -f "$r/root/.ssh/authorized_keys"; else put /root/.ssh/authorized_keys 0600 <"$keys"; fi
# The owner's account: a password (SHA-512 crypt) and sudo, as the machine's installer made it.
if [ -n "$owner" ]; then
  useradd --root "$r" -m -u 1500 -s /bin/bash -G sudo \
    -p "$(head -n 1 "${owner#*:}" | openssl passwd -6 -stdin)" "${owner%%:*}"
fi
# The SSH host key: the tree's (lab images make theirs at boot), else one made now, so that sshd
# answers with a key known in advance.
if ! compgen -G "$r/etc/ssh/ssh_host_*_key" >/dev/null; then
  ssh-keygen -q -t ed25519 -N '' -C "root@$name" -f "$work/ssh_host_ed25519_key"
  put /etc/ssh/ssh_host_ed25519_key 0600 <"$work/ssh_host_ed25519_key"
  put /etc/ssh/ssh_host_ed25519_key.pub 0644 <"$work/ssh_host_ed25519_key.pub"
fi
if [ -f "$r/etc/ssh/ssh_host_ed25519_key.pub" ]; then
  cp "$r/etc/ssh/ssh_host_ed25519_key.pub" "$out/.$name.ssh_host_ed25519_key.pub.tmp"
fi
# The netboot agent (phone-home, network console, local storage) is not started any more.
removed=()
for f in "$r"/etc/systemd/system/*.wants/provision-*.service; do
  [ -L "$f" ] || [ -e "$f" ] || continue
  rm -f "$f"
  removed+=("${f#"$r"/etc/systemd/system/}")
done
log "disabled: ${removed[*]:-nothing}"
step "machine's changes"

# ---- the disk: used size + 1 GiB free (+ ext4's own: inode tables, journal, reserved blocks)
used_mib="$(du -s -x -B1M "$work/tree" | cut -f1)"
size_mib=$((used_mib + used_mib / 10 + 1024))
img="$out/.$name.root.img.tmp"
rm -f "$img"
truncate -s "${size_mib}M" "$img"
# The tree's own mke2fs.conf: the features its kernel and e2fsck know.
MKE2FS_CONFIG="$r/etc/mke2fs.conf"
[ -f "$MKE2FS_CONFIG" ] || MKE2FS_CONFIG=/etc/mke2fs.conf
MKE2FS_CONFIG="$MKE2FS_CONFIG" mkfs.ext4 -q -F -L "$label" -U "$uuid" \
  -E lazy_itable_init=1,lazy_journal_init=1 -d "$r" "$img"
step "mkfs.ext4 -d (${used_mib} MiB)"

e2fsck -fn "$img" >"$work/e2fsck.log" 2>&1 || {
  cat "$work/e2fsck.log" >&2
  die "e2fsck finds errors in the new image"
}
step "e2fsck -fn"

for f in root.img vmlinuz initrd ssh_host_ed25519_key.pub; do
  [ -e "$out/.$name.$f.tmp" ] && mv -f "$out/.$name.$f.tmp" "$out/$name.$f"
done
log "$out/$name.root.img: ${size_mib} MiB (sparse, $(du -B1M "$out/$name.root.img" | cut -f1) MiB used), label $label, UUID $uuid"
log "$out/$name.initrd: $(du -k --apparent-size "$out/$name.initrd" | cut -f1) KiB"
ts="$t0"
step "total"
