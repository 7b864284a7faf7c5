# shellcheck shell=bash disable=SC2034,SC2154
# ssh_bench_common.sh: shared by playbook_bench.sh and cmd_bench.sh (sourced,
# not run). Real sshd targets on loopback (tests/sshd/sshd-targets.sh, one
# shared port, target i on 127.0.1.i, key exchange pinned to
# curve25519-sha256, MaxStartups raised), one control key for every client,
# provisiond on a fresh data dir with the targets enrolled and their host keys
# pinned, a known_hosts file and an ssh_config for the OpenSSH clients, and
# cleanup of everything started (by pid) on exit, failure or Ctrl-C.
#
# The sourcing script sets: bench (name for messages), repo, build_dir,
# nodes and runs (defaults), prefix (node names: PREFIX1..PREFIXN), and
# extra_option (its own options); then calls parse_options "$@", bench_init,
# start_targets, start_provisiond, enroll_nodes.

die() { echo "$bench: $*" >&2; exit 1; }

usage() {
  sed -n '/^# Usage:/,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
}
# The options both benchmarks take; the sourcing script's extra_option
# handles its own (sets extra_shift, returns 1 for an unknown one).
provisiond='' provisionctl='' json_out=''
parse_options() {
  while (($#)); do
    case $1 in
      --build-dir) build_dir=${2:?}; shift 2 ;;
      --provisiond) provisiond=${2:?}; shift 2 ;;
      --provisionctl) provisionctl=${2:?}; shift 2 ;;
      --nodes) nodes=${2:?}; shift 2 ;;
      --runs) runs=${2:?}; shift 2 ;;
      --json) json_out=${2:?}; shift 2 ;;
      -h | --help) usage ;;
      *)
        extra_shift=0
        extra_option "$@" || { echo "$bench: unknown argument '$1'" >&2; usage; }
        shift "$extra_shift"
        ;;
    esac
  done
  [[ $nodes =~ ^[1-9][0-9]*$ && $nodes -le 254 ]] || { echo "--nodes must be 1..254" >&2; exit 2; }
  [[ $runs =~ ^[1-9][0-9]*$ && $runs -le 100 ]] || { echo "--runs must be 1..100" >&2; exit 2; }
  provisiond=${provisiond:-$build_dir/provisiond/provisiond}
  provisionctl=${provisionctl:-$build_dir/provisiond/provisionctl}
  json_out=${json_out:-$build_dir/tests/bench/$bench.json}
}

provisiond_pid='' tmp='' targets_started=0
# Commands the sourcing script adds, run first at cleanup (closing ssh
# control masters and the like).
cleanup_hooks=()

# Stops a process this script started, by pid.
stop_pid() {
  local pid=$1 i
  [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null || true
}

bench_cleanup() {
  local rc=$? hook
  trap - INT TERM
  for hook in "${cleanup_hooks[@]}"; do eval "$hook" || true; done
  stop_pid "$provisiond_pid"
  if ((targets_started)); then
    bash "$repo/tests/sshd/sshd-targets.sh" stop "$tmp/targets" >/dev/null 2>&1 || true
  fi
  if ((rc != 0)) && [[ -n $tmp ]]; then
    for log in "$tmp"/provisiond*.log; do
      [[ -s $log ]] && { echo "--- $log (last lines)" >&2; tail -n 20 "$log" >&2; }
    done
  fi
  [[ -n $tmp ]] && rm -rf "$tmp"
  exit "$rc"
}

bench_init() {
  [[ $(id -u) -eq 0 ]] || die "needs root (sshd's privilege separation)"
  for f in "$provisiond" "$provisionctl"; do
    [[ -x $f ]] || die "$f is not built (scripts/build.sh build-bench -DCMAKE_BUILD_TYPE=Release), or pass its path"
  done
  [[ -x /usr/sbin/sshd ]] || die "/usr/sbin/sshd is missing: apt-get install openssh-server"
  command -v jq >/dev/null || die "jq not found"
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/$bench.XXXXXX")
  chmod 755 "$tmp"
  trap bench_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  load_before=$(cut -d' ' -f1-3 /proc/loadavg)
  mkdir -p "$tmp/data/ssh"
  chmod 700 "$tmp/data"
  # provisiond's control key, made before it starts so the targets trust it;
  # the OpenSSH clients use the same key.
  ssh-keygen -q -t ed25519 -N '' -C "$bench" -f "$tmp/data/ssh/id_ed25519"
  key="$tmp/data/ssh/id_ed25519"
}

# Starts $nodes targets; sets port, and addr[i], hostkey[i] ("TYPE BASE64").
start_targets() {
  targets_started=1
  SSHD_TARGETS_SHARED_PORT=1 SSHD_TARGETS_KEX=curve25519-sha256 \
    SSHD_TARGETS_MAX_STARTUPS=200:30:400 SSHD_START_TIMEOUT=30 \
    bash "$repo/tests/sshd/sshd-targets.sh" start "$nodes" "$tmp/targets" "$key.pub" >/dev/null ||
    die "the sshd targets did not start"
  addr=() hostkey=()
  local name p type b64 a i
  while read -r name p type b64 a; do
    i=${name#t}
    port=$p addr[i]=$a hostkey[i]="$type $b64"
  done <"$tmp/targets/targets"
  # known_hosts and an ssh_config for the OpenSSH clients: node names map to
  # the targets' addresses, host keys checked, key exchange pinned.
  : >"$tmp/known_hosts"
  : >"$tmp/ssh_config"
  for ((i = 1; i <= nodes; i++)); do
    echo "[${addr[i]}]:$port ${hostkey[i]}" >>"$tmp/known_hosts"
    printf 'Host %s%d\n  HostName %s\n' "$prefix" "$i" "${addr[i]}" >>"$tmp/ssh_config"
  done
  cat >>"$tmp/ssh_config" <<EOF
Host *
  Port $port
  User root
  IdentityFile $key
  IdentitiesOnly yes
  UserKnownHostsFile $tmp/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  BatchMode yes
  KexAlgorithms curve25519-sha256
  ForwardAgent no
  ForwardX11 no
EOF
}

# (Re)starts provisiond on the same data dir: its SSH sessions start fresh.
# Sets PROVISIOND_URL and PROVISIOND_TOKEN for provisionctl.
provisiond_starts=0
start_provisiond() {
  stop_pid "$provisiond_pid"
  provisiond_pid=''
  cat >"$tmp/provisiond.yaml" <<EOF
listen: 127.0.0.1:0
data_dir: $tmp/data
profiles_dir: $repo/profiles
playbooks_dir: ${bench_playbooks_dir:-$repo/playbooks}
ssh.port: $port
configure.workers: $((nodes > 64 ? nodes : 64))
configure.task_timeout: 120
ansible_python_interpreter: /usr/bin/python3
EOF
  rm -f "$tmp/data/provisiond.url"
  provisiond_starts=$((provisiond_starts + 1))
  "$provisiond" -c "$tmp/provisiond.yaml" >"$tmp/provisiond-$provisiond_starts.log" 2>&1 &
  provisiond_pid=$!
  local i
  for ((i = 0; i < 400; i++)); do  # up to 20 s
    [[ -s $tmp/data/provisiond.url ]] && break
    kill -0 "$provisiond_pid" 2>/dev/null || die "provisiond exited during start"
    sleep 0.05
  done
  [[ -s $tmp/data/provisiond.url ]] || die "provisiond wrote no provisiond.url in 20 s"
  PROVISIOND_URL=$(<"$tmp/data/provisiond.url")
  PROVISIOND_TOKEN=$(awk '!/^#/ && NF {print $1; exit}' "$tmp/data/tokens")
  export PROVISIOND_URL PROVISIOND_TOKEN
}

# Enrolls PREFIX1..PREFIXN with their addresses and pins their host keys.
enroll_nodes() {
  local i
  for ((i = 1; i <= nodes; i++)); do
    "$provisionctl" node add "$prefix$i" --mac "$(printf '52:54:00:ee:%02x:%02x' $((i / 256)) $((i % 256)))" \
      --ip "${addr[i]}" >/dev/null || die "node add $prefix$i failed"
    "$provisionctl" node set "$prefix$i" --host-key "${hostkey[i]}" >/dev/null ||
      die "node set $prefix$i --host-key failed"
  done
}

# Seconds since the epoch, microseconds.
now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

# median of the arguments (mean of the middle two for an even count)
median() {
  printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
    if (NR == 0) { print "null"; exit }
    printf "%.3f\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.4f", a / b; else print "null" }'; }
join() { local IFS=,; echo "$*"; }
