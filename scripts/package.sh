#!/usr/bin/env bash
# Builds dist/provisiond_<version>_amd64.deb from the checkout with Debian's
# own tools: an optimized build without the build-tree defaults (its
# compiled-in paths are the installed ones), `cmake --install` into a staging
# root, dpkg-shlibdeps for the libraries' dependencies, dpkg-deb to pack it
# (owner root:root). Usage: scripts/package.sh [BUILD_DIR]   (default build-package)
# Prints the package's path last.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
build="${1:-build-package}"
# An absolute BUILD_DIR as it is, a relative one under the checkout.
case "$build" in /*) ;; *) build="$repo/$build" ;; esac
version="$(sed -n 's/^project(provisiond VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)"
arch="$(dpkg --print-architecture)"
# Debian's variables name who builds it.
maintainer="${DEBFULLNAME:-provisiond maintainers} <${DEBEMAIL:-maintainers@provisiond.example.org}>"
# The newest inventory schema this provisiond knows: the preinst refuses a
# downgrade that would meet a newer one.
schema="$(find provisiond/lib/store/migrations -name '[0-9][0-9][0-9]_*.sql' | wc -l)"

launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_SLOPPINESS="pch_defines,time_macros,include_file_mtime,include_file_ctime"
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
fi
echo "== build ($build: optimized, installed paths)"
# -O2 without debug information: the installed programs are stripped, so
# making it would only cost time (a third of the build here).
cmake -S . -B "$build" -G Ninja "${launcher[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
  -DCMAKE_INSTALL_PREFIX=/usr -DPROVISION_BUILD_TREE_DEFAULTS=OFF >/dev/null
ninja -C "$build" provisiond provisionctl provision-facts provision-mount provision-fetch

echo "== stage"
root="$build/deb-root"
rm -rf "$root"
DESTDIR="$root" cmake --install "$build" --strip >/dev/null
doc="$root/usr/share/doc/provisiond"
{
  echo "provisiond ($version) unstable; urgency=medium"
  echo
  echo "  * Built from the provisiond repository at $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)."
  echo
  echo " -- $maintainer  $(date -R -d "@$(git -C "$repo" log -1 --format=%ct 2>/dev/null || date +%s)")"
} | gzip -9n >"$doc/changelog.gz"
# Debian policy: documentation over 4 KiB compressed.
find "$doc" -name '*.md' -size +4k -exec gzip -9n {} +
# The man pages, made from the programs' own tables (scripts/make-reference.sh),
# and provisionctl's bash completion.
bash scripts/make-reference.sh --man "$build" "$build/man"
mkdir -p "$root/usr/share/man/man1" "$root/usr/share/man/man8"
gzip -9n <"$build/man/provisionctl.1" >"$root/usr/share/man/man1/provisionctl.1.gz"
gzip -9n <"$build/man/provisiond.8" >"$root/usr/share/man/man8/provisiond.8.gz"
install -D -m 0644 scripts/completion/provisionctl \
  "$root/usr/share/bash-completion/completions/provisionctl"
mkdir -p "$root/usr/share/lintian/overrides"
cat >"$root/usr/share/lintian/overrides/provisiond" <<'OVR'
# Copied into every image and initrd the nodes boot: static on purpose, so
# they run whatever the image's libraries are.
provisiond: statically-linked-binary [usr/lib/provisiond/provision-facts]
provisiond: statically-linked-binary [usr/lib/provisiond/provision-mount]
provisiond: statically-linked-binary [usr/lib/provisiond/provision-fetch]
# Playbook files copied to the nodes and run there, never on this machine.
provisiond: python3-script-but-no-python3-dep * [usr/share/provisiond/playbooks/files/*]
OVR

mkdir -p "$root/DEBIAN"
for script in preinst postinst prerm postrm; do
  sed -e "s/@SCHEMA@/$schema/" -e "s/@VERSION@/$version/" "scripts/package/$script" \
    >"$root/DEBIAN/$script"
  chmod 0755 "$root/DEBIAN/$script"
done
echo /etc/provisiond/provisiond.yaml >"$root/DEBIAN/conffiles"

# Libraries the two programs link, as Debian's shlibs say.
shlibs_dir="$build/shlibs"
rm -rf "$shlibs_dir" && mkdir -p "$shlibs_dir/debian"
echo "Source: provisiond" >"$shlibs_dir/debian/control"
shlibs="$(cd "$shlibs_dir" && dpkg-shlibdeps -O "$root/usr/sbin/provisiond" "$root/usr/bin/provisionctl" |
  sed -n 's/^shlibs:Depends=//p')"
# What provisiond runs: dnsmasq (its own config; dnsmasq-base has no system
# service to fight over port 67), nfs-ganesha with its VFS backend, the boot
# loaders (iPXE; the signed shim and grub), image builds (mmdebstrap, the
# initrd's static busybox, cpio; gpg for archive keys' fingerprints),
# ssh-keygen for the control key, and kill (procps) for the service's reload.
# ipmitool is the ipmi power driver's (Recommends: not every site has BMCs);
# skopeo and umoci are the oci image source's (container images as node
# images: Recommends, a site may build only from mirrors).
depends="$shlibs, dnsmasq-base, nfs-ganesha, nfs-ganesha-vfs, erofs-utils, ipxe, shim-signed, grub-efi-amd64-signed, mmdebstrap, gpg, busybox-static, cpio, openssh-client, procps, init-system-helpers (>= 1.54~)"
size="$(du -sk --exclude=DEBIAN "$root" | cut -f1)"
cat >"$root/DEBIAN/control" <<CONTROL
Package: provisiond
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $size
Depends: $depends
Recommends: ansible, sqlite3, ipmitool, skopeo, umoci
Suggests: qemu-system-x86, ovmf
Section: admin
Priority: optional
Description: bare-metal provisioning appliance for small GPU clusters
 provisiond netboots the nodes of a cluster (PXE, iPXE, or the signed shim and
 grub chain for Secure Boot), gives them a shared read-only root image over
 NFS with a RAM overlay, records what they phone home, and configures them
 over SSH with versioned hardware profiles and Ansible-syntax playbooks until
 they are ready for Slurm or PyTorch jobs. The inventory is kept in SQLite and
 shown on a web page; provisionctl drives it from the command line.
CONTROL
( cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z |
  xargs -0 md5sum >DEBIAN/md5sums )

mkdir -p dist
deb="dist/provisiond_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$repo/$deb"
