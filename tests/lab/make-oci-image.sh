# shellcheck shell=bash
# tests/lab/make-oci-image.sh: the lab's container image, made on this machine
# as an image maker would with Debian's tools, for the oci image source
# (images/lab-oci/image.yaml; tests/lab/oci_import_test.sh).
#
# Source it from a bash script:   source tests/lab/make-oci-image.sh; tar="$(lab_oci_archive)"
#
#   lab_oci_archive   Prints the path of an OCI archive (skopeo's oci-archive:,
#                     tag "lab") of two layers: a Debian minbase root from
#                     mmdebstrap (the suite and mirror of images/lab/image.yaml;
#                     no kernel, no systemd, no sshd, as in a container image),
#                     then an upper layer made with umoci that deletes
#                     /etc/issue.net (a whiteout, etc/.wh.issue.net) and adds
#                     /usr/local/bin/lab-capable with the file capability
#                     cap_net_raw+ep (setcap). Cached under LAB_CACHE_DIR
#                     (default /var/tmp/provisiond-lab-cache)/oci-KEY, keyed by
#                     this file, the suite and the mirror: only the first run on
#                     a machine makes it. Progress goes to stderr.
lab_oci_archive() {
  local repo manifest suite mirror key cache out work rc=0
  repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  manifest="$repo/images/lab/image.yaml"
  suite="$(awk '$1 == "suite:" {print $2; exit}' "$manifest")"
  mirror="$(awk '$1 == "mirror:" {print $2; exit}' "$manifest")"
  key="$({ cat "${BASH_SOURCE[0]}"; echo "$suite $mirror"; } | sha256sum | cut -c1-16)"
  cache="${LAB_CACHE_DIR:-/var/tmp/provisiond-lab-cache}/oci-$key"
  out="$cache/lab-oci.tar"
  if [ -s "$out" ]; then
    echo "$out"
    return 0
  fi
  for tool in mmdebstrap umoci skopeo setcap; do
    command -v "$tool" >/dev/null || { echo "lab_oci_archive: missing $tool (tests/lab/packages.txt, tests/packages.txt)" >&2; return 1; }
  done
  work="$(mktemp -d)"
  echo "making the lab's OCI archive into $cache (only the first time on this machine)" >&2
  (
    set -e
    mmdebstrap --mode=root --variant=minbase --aptopt='Acquire::Languages "none"' \
      --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
      --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*' \
      "$suite" "$work/minbase" "$mirror" >&2
    umoci init --layout "$work/layout"
    umoci new --image "$work/layout:lab"
    umoci unpack --image "$work/layout:lab" "$work/lower" >/dev/null
    cp -a "$work/minbase/." "$work/lower/rootfs/"
    umoci repack --image "$work/layout:lab" "$work/lower"
    # The upper layer: from a fresh unpack, so that its changes are a diff.
    umoci unpack --image "$work/layout:lab" "$work/upper" >/dev/null
    rm "$work/upper/rootfs/etc/issue.net"
    cp "$work/upper/rootfs/usr/bin/true" "$work/upper/rootfs/usr/local/bin/lab-capable"
    setcap cap_net_raw+ep "$work/upper/rootfs/usr/local/bin/lab-capable"
    umoci repack --image "$work/layout:lab" "$work/upper"
    mkdir -p "$cache"
    rm -f "$out.new"
    skopeo copy -q "oci:$work/layout:lab" "oci-archive:$out.new:lab"
    mv "$out.new" "$out"
  ) || rc=$?
  rm -rf "$work"
  [ "$rc" -eq 0 ] && echo "$out"
  return "$rc"
}
