# shellcheck shell=bash
# tests/lab/lab-repo.sh: the lab's own apt repository. The lab network reaches
# nothing outside, so lab-node.yml (profiles/lab) installs its package from a
# small flat repository that the lab harness serves on the bridge's address
# (lab.sh: lab_start_repo), as a site would serve a local mirror.
#
# Source it from a bash script:   source tests/lab/lab-repo.sh; dir="$(lab_repo_dir)"
#
#   lab_repo_dir    Prints the directory to serve; it holds debian-lab/, a flat
#                   repository (the .debs, Packages, Release) for
#                   `deb [trusted=yes] http://10.99.0.1:8081/debian-lab ./`.
#                   Built on this machine (apt over the host's own network, the
#                   suite and mirror of images/lab/image.yaml, so the packages
#                   fit the lab nodes) with `apt-get download` and
#                   `apt-ftparchive` (apt-utils), in a private apt state that
#                   leaves the host's apt alone. Cached under LAB_CACHE_DIR
#                   (default /var/tmp/provisiond-lab-cache)/repo, keyed by the
#                   suite, mirror and package list: only the first run on a
#                   machine builds it. Progress goes to stderr.
#
# Settings: LAB_REPO_PACKAGES (default "hello"): the packages in the repository.

lab_repo_dir() {
  local repo manifest suite mirror packages key cache dir work rc=0
  repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  manifest="$repo/images/lab/image.yaml"
  suite="$(awk '$1 == "suite:" {print $2; exit}' "$manifest")"
  mirror="$(awk '$1 == "mirror:" {print $2; exit}' "$manifest")"
  packages="${LAB_REPO_PACKAGES:-hello}"
  if [ -z "$suite" ] || [ -z "$mirror" ]; then
    echo "lab_repo_dir: no suite or mirror in $manifest" >&2
    return 1
  fi
  local tool
  for tool in apt-get apt-ftparchive; do
    command -v "$tool" >/dev/null || {
      echo "lab_repo_dir: missing $tool (package apt-utils, see tests/lab/packages.txt)" >&2
      return 1
    }
  done
  key="$(printf '%s\n' "$suite" "$mirror" "$packages" | sha256sum | cut -c1-16)"
  cache="${LAB_CACHE_DIR:-/var/tmp/provisiond-lab-cache}/repo"
  dir="$cache/$key"
  if [ -s "$dir/debian-lab/Packages" ] && [ -s "$dir/debian-lab/Release" ]; then
    echo "$dir"
    return 0
  fi
  mkdir -p "$cache" || return 1
  chmod 0755 "$(dirname "$cache")" "$cache"
  work="$(mktemp -d "$cache/.build.XXXXXX")" || return 1
  echo "building the lab apt repository ($packages from $suite) into $dir (only the first time on this machine)" >&2
  mkdir -p "$work/state/lists/partial" "$work/cache/archives/partial" "$work/parts" \
    "$work/root/debian-lab"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main" \
    >"$work/sources.list"
  local apt=(-o "Dir::State=$work/state" -o "Dir::State::Lists=$work/state/lists"
    -o "Dir::Cache=$work/cache" -o "Dir::Etc::SourceList=$work/sources.list"
    -o "Dir::Etc::SourceParts=$work/parts" -o "APT::Sandbox::User=root" -q)
  # shellcheck disable=SC2086 # the package list is words
  if ! apt-get "${apt[@]}" update >"$work/apt.log" 2>&1 ||
    grep -qE '^(W|E): (Failed to fetch|Some index files)' "$work/apt.log" ||
    ! (cd "$work/root/debian-lab" && apt-get "${apt[@]}" download $packages) >>"$work/apt.log" 2>&1 ||
    ! (cd "$work/root/debian-lab" && apt-ftparchive packages . >Packages &&
      apt-ftparchive release . >../Release && mv ../Release Release) 2>>"$work/apt.log"; then
    echo "lab_repo_dir: building the repository failed:" >&2
    tail -n 20 "$work/apt.log" >&2
    rc=1
  fi
  if [ "$rc" -eq 0 ]; then
    chmod -R a+rX "$work/root"
    # Another run may have built it meanwhile: theirs is as good.
    mv -T "$work/root" "$dir" 2>/dev/null || [ -s "$dir/debian-lab/Packages" ] || rc=1
  fi
  rm -rf "$work"
  [ "$rc" -eq 0 ] && echo "$dir"
  return "$rc"
}
