#!/usr/bin/env bash
# cmd_bench.sh: `true` on N real sshd targets on loopback (default 64), run by
# provisiond (provisionctl cmd HOSTLIST -- true), pdsh -R ssh and clush, in one
# run, alternating; pdsh and clush open fresh SSH connections each time.
#
# Each round runs every side once, the order rotating per round. provisiond's
# turn: it is restarted on the same data dir, so its first cmd opens fresh
# sessions ("fresh"), then --persistent more cmds over the sessions it keeps
# ("persistent"). pdsh and clush get fanout N (all nodes at once), the same
# key, known_hosts and KexAlgorithms curve25519-sha256 through an ssh_config
# (-F). Each run is a new client process, timed from start to exit; a run
# that fails on any node fails the benchmark.
#
# Needs root (sshd), openssh-server, pdsh, clustershell, jq, and
# provisiond/provisionctl built (scripts/build.sh build-bench
# -DCMAKE_BUILD_TYPE=Release). Everything started is stopped by pid, and the
# temp directory removed, on exit, failure or Ctrl-C.
#
# Usage: tests/bench/cmd_bench.sh [options]
#   --build-dir DIR      where provisiond was built (default: <repo>/build-bench)
#   --provisiond PATH    default: DIR/provisiond/provisiond
#   --provisionctl PATH  default: DIR/provisiond/provisionctl
#   --nodes N            sshd targets (default 64)
#   --runs N             rounds (default 5)
#   --persistent N       provisiond cmds over kept sessions per round (default 3)
#   --json FILE          results (default: DIR/tests/bench/cmd_bench.json)
set -euo pipefail

bench=cmd_bench
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build_dir=$repo/build-bench
nodes=64 runs=5 persistent=3 prefix=c
# shellcheck source=tests/bench/ssh_bench_common.sh
source "$repo/tests/bench/ssh_bench_common.sh"
extra_option() {
  [[ $1 == --persistent ]] || return 1
  persistent=${2:?}
  extra_shift=2
}
parse_options "$@"
[[ $persistent =~ ^[1-9][0-9]*$ && $persistent -le 100 ]] || { echo "--persistent must be 1..100" >&2; exit 2; }

command -v pdsh >/dev/null || die "pdsh not found: apt-get install pdsh"
command -v clush >/dev/null || die "clush not found: apt-get install clustershell"
mkdir -p "$(dirname "$json_out")"
bench_init
start_targets
restart_provisiond
enroll_nodes

hosts="$prefix[1-$nodes]"
# pdsh's ssh module runs: ssh $PDSH_SSH_ARGS_APPEND $PDSH_SSH_ARGS CMD.
export PDSH_SSH_ARGS="-F $WORK/ssh_config -x -l%u %h"
export PDSH_SSH_ARGS_APPEND=""
run_pdsh() { pdsh -R ssh -f "$nodes" -S -w "$hosts" "$@"; }
run_clush() { clush -f "$nodes" -S -o "-F $WORK/ssh_config" -w "$hosts" "$@"; }
run_provisiond() { "$provisionctl" cmd "$hosts" -- "$@"; }

# Every side reaches every node: `echo ok` answers N times.
check_side() {  # $1: side
  local out n
  out=$("run_$1" echo ok 2>&1) || die "$1: echo ok failed: $(head -c 2000 <<<"$out")"
  case $1 in
    provisiond) grep -qF "$nodes/$nodes node(s) ok" <<<"$out" || die "provisiond: not all ok: $(head -c 2000 <<<"$out")" ;;
    *)
      n=$(grep -cE "^$prefix[0-9]+: ok$" <<<"$out" || true)
      ((n == nodes)) || die "$1: $n of $nodes nodes answered: $(head -c 2000 <<<"$out")"
      ;;
  esac
}
for side in provisiond pdsh clush; do check_side "$side"; done

# CPU used so far, in clock ticks: "TARGETS PROVISIOND". TARGETS: the sshd
# targets' process trees (each listener, its live connection processes and
# everything they reaped), the floor every side pays; PROVISIOND: its process.
cpu_ticks() {
  python3 - "$TARGETS/pids" "${PROVISIOND_PID:-0}" <<'PY'
import os, sys
roots = {int(l.split()[1]) for l in open(sys.argv[1]) if l.strip()}
ppid, cpu = {}, {}
for d in os.listdir("/proc"):
    if not d.isdigit():
        continue
    try:
        f = open("/proc/%s/stat" % d).read().rsplit(")", 1)[1].split()
    except OSError:
        continue
    ppid[int(d)] = int(f[1])
    cpu[int(d)] = sum(int(x) for x in f[11:15])  # utime stime cutime cstime
total = 0
for p, c in cpu.items():
    q = p
    while q in ppid:
        if q in roots:
            total += c
            break
        q = ppid[q]
print(total, cpu.get(int(sys.argv[2]), 0))
PY
}
# The bench shell's reaped children (pdsh, clush, provisionctl), in ticks:
# read without a fork (cutime + cstime of $$).
own_children_ticks() {
  local line f
  read -r line </proc/$$/stat
  line=${line##*) }
  read -r -a f <<<"$line"
  echo $((f[13] + f[14]))
}
hz=$(getconf CLK_TCK)
ticks_s() { awk -v t="$1" -v hz="$hz" 'BEGIN { printf "%.2f", t / hz }'; }

# One measured run of `true`; appends "round side kind seconds client_cpu_s targets_cpu_s".
rows=()
measure() {  # $1: round, $2: side, $3: kind
  local t0 t1 rc=0 err="$WORK/err" c0 c1 k0 k1 client
  read -r -a c0 <<<"$(cpu_ticks)"
  k0=$(own_children_ticks)
  t0=$(now)
  "run_$2" true >"$WORK/out" 2>"$err" || rc=$?
  t1=$(now)
  k1=$(own_children_ticks)
  read -r -a c1 <<<"$(cpu_ticks)"
  ((rc == 0)) || die "$2 exited $rc: $(head -c 2000 "$err") $(head -c 2000 "$WORK/out")"
  if [[ $2 == provisiond ]]; then
    grep -qF "$nodes/$nodes node(s) ok" "$WORK/out" || die "provisiond: not all ok: $(head -c 2000 "$WORK/out")"
  fi
  client=$((k1 - k0))
  [[ $2 != provisiond ]] || client=$((client + c1[1] - c0[1]))
  rows+=("$1 $2 $3 $(elapsed "$t0" "$t1") $(ticks_s "$client") $(ticks_s $((c1[0] - c0[0])))")
}
side_provisiond() {  # $1: round
  local k
  restart_provisiond
  measure "$1" provisiond fresh
  for ((k = 0; k < persistent; k++)); do measure "$1" provisiond persistent; done
}

sides=(provisiond pdsh clush)
loads=()
for ((r = 1; r <= runs; r++)); do
  loads+=("$(cut -d' ' -f1-3 /proc/loadavg)")
  for ((s = 0; s < 3; s++)); do
    side=${sides[(s + r - 1) % 3]}
    case $side in
      provisiond) side_provisiond "$r" ;;
      *) measure "$r" "$side" fresh ;;
    esac
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# --- report ------------------------------------------------------------------
colf() {  # $1: side, $2: kind, $3: field
  printf '%s\n' "${rows[@]}" | awk -v s="$1" -v k="$2" -v f="$3" '$2 == s && $3 == k { print $f }'
}
col() {  # $1: side, $2: kind
  printf '%s\n' "${rows[@]}" | awk -v s="$1" -v k="$2" '$2 == s && $3 == k { print $4 }'
}
# shellcheck disable=SC2046
{
  p_fresh=$(median $(col provisiond fresh))
  p_pers=$(median $(col provisiond persistent))
  pdsh_med=$(median $(col pdsh fresh))
  clush_med=$(median $(col clush fresh))
}
pdsh_version=$(pdsh -V 2>&1 | sed -n '1p')
clush_version=$(clush --version 2>&1 | sed -n '1p')
date_utc=$(date -u +%Y-%m-%dT%H:%M:%SZ)

echo "$bench: 'true' on $nodes sshd targets on loopback, $runs round(s), order rotating; provisiond: 1 fresh + $persistent persistent per round"
echo "$pdsh_version (-R ssh, fanout $nodes), $clush_version (fanout $nodes), provisionctl cmd; kex curve25519-sha256 everywhere"
echo "$(nproc) CPUs, load average $load_before at start, $load_after at the end"
echo "CPU s: the client's (pdsh, clush: their processes; provisiond: provisionctl and provisiond's own) and the sshd targets' (every process of theirs), over the run"
printf '%-5s %-11s %-11s %8s %10s %11s\n' round side connections "s" "client CPU" "targets CPU"
for row in "${rows[@]}"; do
  read -r r side kind secs ccpu tcpu <<<"$row"
  printf '%-5s %-11s %-11s %8s %10s %11s\n' "$r" "$side" "$kind" "$secs" "$ccpu" "$tcpu"
done
echo "medians (s): provisiond fresh $p_fresh, persistent $p_pers; pdsh $pdsh_med; clush $clush_med"
# shellcheck disable=SC2046
echo "median CPU s, client / targets: provisiond fresh $(median $(colf provisiond fresh 5)) / $(median $(colf provisiond fresh 6)); pdsh $(median $(colf pdsh fresh 5)) / $(median $(colf pdsh fresh 6)); clush $(median $(colf clush fresh 5)) / $(median $(colf clush fresh 6)); the targets' CPU over $(nproc) CPUs is the floor of a side's wall time"
echo "ratio provisiond fresh/pdsh $(ratio "$p_fresh" "$pdsh_med"), fresh/clush $(ratio "$p_fresh" "$clush_med") (goal <= 0.9, issue 18)"
echo "ratio provisiond persistent/pdsh $(ratio "$p_pers" "$pdsh_med"), persistent/clush $(ratio "$p_pers" "$clush_med") (goal <= 0.1)"

rows_json=$(printf '%s\n' "${rows[@]}" | awk 'BEGIN { printf "[" } {
  printf "%s{\"round\": %d, \"side\": \"%s\", \"connections\": \"%s\", \"s\": %s, \"client_cpu_s\": %s, \"targets_cpu_s\": %s}",
    (NR > 1 ? ", " : ""), $1, $2, $3, $4, $5, $6 } END { printf "]" }')
loads_json=$(printf '"%s",' "${loads[@]}")
cat >"$json_out" <<EOF
{
  "benchmark": "cmd",
  "date": "$date_utc",
  "machine": {"hostname": "$(uname -n)", "cpus": $(nproc), "loadavg_at_start": "$load_before",
              "loadavg_per_round": [${loads_json%,}], "loadavg_at_end": "$load_after"},
  "nodes": $nodes, "rounds": $runs, "persistent_per_round": $persistent, "command": "true",
  "median_s": {"provisiond_fresh": $p_fresh, "provisiond_persistent": $p_pers, "pdsh": $pdsh_med, "clush": $clush_med},
  "versions": {"pdsh": "$pdsh_version", "clush": "$clush_version"},
  "ratio": {"provisiond_fresh_over_pdsh": $(ratio "$p_fresh" "$pdsh_med"),
            "provisiond_fresh_over_clush": $(ratio "$p_fresh" "$clush_med"),
            "provisiond_persistent_over_pdsh": $(ratio "$p_pers" "$pdsh_med"),
            "provisiond_persistent_over_clush": $(ratio "$p_pers" "$clush_med")},
  "runs": $rows_json
}
EOF
jq . "$json_out" >/dev/null || die "wrote invalid JSON to $json_out"
echo "results: $json_out"
