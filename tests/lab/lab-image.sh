# shellcheck shell=bash
# lab_image_store PROVISIOND PROVISIONCTL PROFILES_DIR [IMAGE [PROFILE]]
#   Prints the image store that holds a built IMAGE (default `lab`) from
#   images/IMAGE/image.yaml, building it first
#   when missing. With PROFILE (one whose bake playbooks start from IMAGE),
#   also its derived image (`provisionctl profile bake`), which the image
#   stage makes over this machine's uplink as a control node would: the lab
#   network reaches no mirror. A derived image already there is reused. The store is cached under LAB_CACHE_DIR (default
#   /var/tmp/provisiond-lab-cache), keyed by everything that goes into the
#   image, so only the first run on a machine builds it. The build runs in a
#   provisiond on this machine's loopback (the lab network reaches nothing
#   outside), as a control node builds images over its own uplink.
#   Progress goes to stderr.
lab_image_store() {
  local provisiond="$1" provisionctl="$2" profiles="$3" image="${4:-lab}" profile="${5:-}"
  local repo key store work pid rc=0
  repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  key="$(cat "$repo/images/$image/image.yaml" "$repo"/images/initramfs/* "$repo"/images/agent/* \
    "$repo"/provisiond/agent/*.cc "$repo"/provisiond/agent/*.h "$repo"/provisiond/tools/*.cc \
    "$repo"/provisiond/lib/images/*.cc | sha256sum | cut -c1-16)"
  store="${LAB_CACHE_DIR:-/var/tmp/provisiond-lab-cache}/image-store-$key"
  mkdir -p "$store"
  chmod 0755 "$(dirname "$store")" "$store"
  local built=0
  if [ -s "$store/$image/current" ] && [ -d "$store/$image/$(cat "$store/$image/current")/root" ]; then
    built=1
    [ -n "$profile" ] || { echo "$store"; return 0; }
  fi
  work="$(mktemp -d)"
  if lab_local_provisiond "$work" "$provisiond" "$profiles" "$repo/images" "$store"; then
    pid="$LAB_LOCAL_PID"
    if [ "$built" -eq 0 ]; then
      echo "building the $image image into $store (only the first time on this machine)" >&2
      "$provisionctl" image build "$image" >&2 || rc=$?
    fi
    if [ "$rc" -eq 0 ] && [ -n "$profile" ]; then
      "$provisionctl" profile bake "$profile" >&2 || rc=$?
    fi
    unset PROVISIOND_URL PROVISIOND_TOKEN
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null || true
  else
    cat "$work/provisiond.log" >&2
    rc=1
  fi
  [ "$rc" -eq 0 ] || tail -20 "$work/provisiond.log" >&2
  rm -rf "$work"
  [ "$rc" -eq 0 ] && echo "$store"
  return "$rc"
}

# lab_local_provisiond WORK PROVISIOND PROFILES_DIR IMAGES_DIR STORE
#   Starts a provisiond on this machine's loopback (any free port, data in
#   WORK/data, its log WORK/provisiond.log) as a control node builds and
#   imports images over its own uplink; once it answers, exports
#   PROVISIOND_URL and PROVISIOND_TOKEN (its admin token) and sets
#   LAB_LOCAL_PID. Returns 1 when it does not come up within 30 s (it is
#   stopped then).
lab_local_provisiond() {
  local work="$1" provisiond="$2" profiles="$3" images="$4" store="$5" repo i
  repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  cat >"$work/provisiond.yaml" <<CONF
listen: 127.0.0.1:0
data_dir: $work/data
profiles_dir: $profiles
playbooks_dir: $repo/playbooks
images_dir: $images
pxe_dir: $repo/pxe
image_store: $store
tools_dir: $(dirname "$provisiond")
CONF
  "$provisiond" --config "$work/provisiond.yaml" >"$work/provisiond.log" 2>&1 &
  LAB_LOCAL_PID=$!
  for i in $(seq 1 300); do
    [ -s "$work/data/provisiond.url" ] && break
    kill -0 "$LAB_LOCAL_PID" 2>/dev/null || break
    sleep 0.1
  done
  if [ ! -s "$work/data/provisiond.url" ]; then
    kill "$LAB_LOCAL_PID" 2>/dev/null
    wait "$LAB_LOCAL_PID" 2>/dev/null || true
    return 1
  fi
  export PROVISIOND_URL PROVISIOND_TOKEN
  PROVISIOND_URL="$(cat "$work/data/provisiond.url")"
  PROVISIOND_TOKEN="$(awk '!/^#/ && NF {print $1; exit}' "$work/data/tokens")"
}
