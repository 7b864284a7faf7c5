# shellcheck shell=bash disable=SC2034,SC2154
# ssh_bench_common.sh: shared by playbook_bench.sh and cmd_bench.sh (sourced,
# not run). Real sshd targets on loopback (lib's start_sshd_targets: one
# shared port, target i on 127.0.1.i, key exchange pinned to
# curve25519-sha256, MaxStartups raised), one control key for every client,
# provisiond with the targets enrolled and their host keys pinned, a
# known_hosts file and an ssh_config for the OpenSSH clients. parse_options
# sources tests/lib.sh, whose harness the benchmarks share ($WORK, PIDS,
# CLEANUP_HOOKS and the cleanup of everything started, by pid, on exit,
# failure or Ctrl-C; die, stop_pid, start_provisiond).
#
# The sourcing script sets: bench (name for messages), repo, build_dir,
# nodes and runs (defaults), prefix (node names: PREFIX1..PREFIXN), and
# extra_option (its own options); then calls parse_options "$@", bench_init,
# start_targets, restart_provisiond, enroll_nodes.

usage() {
  sed -n '/^# Usage:/,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
}
# The options both benchmarks take; the sourcing script's extra_option
# handles its own (sets extra_shift, returns 1 for an unknown one). Then
# sources tests/lib.sh.
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
  PROVISIOND=$provisiond PROVISIONCTL=$provisionctl WORK_NAME=$bench
  # shellcheck source=tests/lib.sh
  source "$repo/tests/lib.sh"
}

bench_init() {
  [[ $(id -u) -eq 0 ]] || die "needs root (sshd's privilege separation)"
  for f in "$provisiond" "$provisionctl"; do
    [[ -x $f ]] || die "$f is not built (scripts/build.sh build-bench -DCMAKE_BUILD_TYPE=Release), or pass its path"
  done
  [[ -x /usr/sbin/sshd ]] || die "/usr/sbin/sshd is missing: apt-get install openssh-server"
  command -v jq >/dev/null || die "jq not found"
  chmod 755 "$WORK"
  load_before=$(cut -d' ' -f1-3 /proc/loadavg)
  # provisiond's control key, in the data dir restart_provisiond gives it
  # ($WORK/bench/data), made before it starts so the targets trust it; the
  # OpenSSH clients use the same key.
  mkdir -p "$WORK/bench/data/ssh"
  chmod 700 "$WORK/bench/data"
  ssh-keygen -q -t ed25519 -N '' -C "$bench" -f "$WORK/bench/data/ssh/id_ed25519"
  key="$WORK/bench/data/ssh/id_ed25519"
}

# Starts $nodes targets (sets TARGETS and PORT); sets addr[i] and hostkey[i]
# ("TYPE BASE64").
start_targets() {
  SSHD_TARGETS_KEX=curve25519-sha256 SSHD_TARGETS_MAX_STARTUPS=200:30:400 SSHD_START_TIMEOUT=30 \
    start_sshd_targets "$nodes" "$key.pub"
  addr=() hostkey=()
  local i
  for ((i = 1; i <= nodes; i++)); do
    addr[i]=$(addr_of "t$i") hostkey[i]=$(key_of "t$i")
  done
  # known_hosts and an ssh_config for the OpenSSH clients: node names map to
  # the targets' addresses, host keys checked, key exchange pinned.
  : >"$WORK/known_hosts"
  : >"$WORK/ssh_config"
  for ((i = 1; i <= nodes; i++)); do
    echo "[${addr[i]}]:$PORT ${hostkey[i]}" >>"$WORK/known_hosts"
    printf 'Host %s%d\n  HostName %s\n' "$prefix" "$i" "${addr[i]}" >>"$WORK/ssh_config"
  done
  cat >>"$WORK/ssh_config" <<EOF
Host *
  Port $PORT
  User root
  IdentityFile $key
  IdentitiesOnly yes
  UserKnownHostsFile $WORK/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  BatchMode yes
  KexAlgorithms curve25519-sha256
  ForwardAgent no
  ForwardX11 no
EOF
}

# (Re)starts provisiond (lib's start_provisiond) on the same data dir: its
# SSH sessions start fresh. Its playbooks: $PLAYBOOKS_DIR when set.
restart_provisiond() {
  if [[ -n ${PROVISIOND_PID:-} ]]; then
    stop_pid "$PROVISIOND_PID"
    rm -f "$DATA/data/provisiond.url"
  fi
  start_provisiond bench "ssh.port: $PORT" "configure.workers: $((nodes > 64 ? nodes : 64))" \
    "configure.task_timeout: 120" "ansible_python_interpreter: /usr/bin/python3"
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
