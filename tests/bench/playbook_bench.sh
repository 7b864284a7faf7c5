#!/usr/bin/env bash
# playbook_bench.sh: one 20-task playbook (file, copy, template, lineinfile,
# command, a no-op apt) on N real sshd targets on loopback, run by provisiond
# on its native runner (provisionctl playbook run), by provisiond on its
# Ansible runner (--runner ansible: provisiond's inventory, known_hosts and
# callback around ansible-playbook) and by plain ansible-playbook (forks N,
# pipelining, ControlPersist) against the very same targets, in one run,
# alternating. Ratios: native/ansible (goal <= 0.05) and provisiond's Ansible
# path over plain ansible-playbook (goal <= 1.1).
#
# Each round, per side: run 1 on fresh connections (provisiond restarted on
# the same data dir; Ansible's control masters closed) into a new directory,
# so its tasks change things; run 2 the same again (nothing changes); run 3
# into another new directory over the sessions / control masters run 1 and 2
# left open (changes, persistent connections). Every task writes below
# <tmp>/out/<round>-<side>-<run>/<node>, so targets never collide.
#
# Needs root (sshd), openssh-server, ansible (Debian's), python3-apt for
# /usr/bin/python3 (Ansible's apt module), jq, and provisiond/provisionctl
# built (scripts/build.sh build-bench -DCMAKE_BUILD_TYPE=Release).
# Everything started (sshd targets, provisiond, ssh control masters) is
# stopped by pid, and the temp directory removed, on exit, failure or Ctrl-C.
#
# Usage: tests/bench/playbook_bench.sh [options]
#   --build-dir DIR      where provisiond was built (default: <repo>/build-bench)
#   --provisiond PATH    default: DIR/provisiond/provisiond
#   --provisionctl PATH  default: DIR/provisiond/provisionctl
#   --nodes N            sshd targets (default 32; Ansible's forks are N too)
#   --runs N             rounds (default 3)
#   --json FILE          results (default: DIR/tests/bench/playbook_bench.json)
set -euo pipefail

bench=playbook_bench
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build_dir=$repo/build-bench
nodes=32 runs=3 prefix=b
# shellcheck source=tests/bench/ssh_bench_common.sh
source "$repo/tests/bench/ssh_bench_common.sh"
extra_option() { return 1; }
parse_options "$@"

command -v ansible-playbook >/dev/null || die "ansible-playbook not found: apt-get install ansible"
/usr/bin/python3 -c 'import apt' 2>/dev/null ||
  die "Ansible's apt module needs python3-apt for /usr/bin/python3 (apt-get install python3-apt)"
mkdir -p "$(dirname "$json_out")"
bench_init

# --- the playbook: 20 tasks, every one writing below its node's directory ----
mkdir -p "$WORK/play/templates" "$WORK/out"
cat >"$WORK/play/templates/node.conf.j2" <<'EOF'
# {{ inventory_hostname }}, managed
name={{ inventory_hostname }}
address={{ ansible_host }}
EOF
cat >"$WORK/play/templates/hosts.j2" <<'EOF'
{% for h in groups['all'] %}
{{ hostvars[h].ansible_host }} {{ h }}
{% endfor %}
EOF
cat >"$WORK/play/bench.yml" <<'EOF'
- name: playbook_bench
  hosts: all
  gather_facts: false
  vars:
    dir: "{{ base }}/{{ inventory_hostname }}"
  tasks:
    - name: node directory
      file:
        path: "{{ dir }}"
        state: directory
        mode: "0755"
    - name: etc directory
      file:
        path: "{{ dir }}/etc"
        state: directory
        mode: "0755"
    - name: data directory
      file:
        path: "{{ dir }}/data"
        state: directory
        mode: "0750"
    - name: motd from content
      copy:
        dest: "{{ dir }}/etc/motd"
        content: "configured for the benchmark\n"
        mode: "0644"
    - name: node.conf from a template
      template:
        src: node.conf.j2
        dest: "{{ dir }}/etc/node.conf"
        mode: "0644"
    - name: hosts from a template over the inventory
      template:
        src: hosts.j2
        dest: "{{ dir }}/etc/hosts"
        mode: "0644"
    - name: settings, max_jobs
      lineinfile:
        path: "{{ dir }}/etc/settings"
        regexp: "^max_jobs="
        line: "max_jobs=4"
        create: true
        mode: "0640"
    - name: settings, log_level
      lineinfile:
        path: "{{ dir }}/etc/settings"
        regexp: "^log_level="
        line: "log_level=info"
    - name: settings, a line that is not there
      lineinfile:
        path: "{{ dir }}/etc/settings"
        regexp: "^obsolete="
        state: absent
    - name: a command that runs once
      command: touch {{ dir }}/data/once
      args:
        creates: "{{ dir }}/data/once"
    - name: the kernel release
      command: uname -r
      register: kernel
      changed_when: false
    - name: the login user
      command: id -un
      register: login
      changed_when: false
    - name: the kernel release into a file
      copy:
        dest: "{{ dir }}/data/kernel"
        content: "{{ kernel.stdout }} {{ login.stdout }}\n"
        mode: "0644"
    - name: a link to node.conf
      file:
        src: "{{ dir }}/etc/node.conf"
        dest: "{{ dir }}/etc/current.conf"
        state: link
    - name: settings mode
      file:
        path: "{{ dir }}/etc/settings"
        mode: "0640"
    - name: a package that is installed already
      apt:
        name: openssh-server
        state: present
    - name: read the settings back
      command: cat {{ dir }}/etc/settings
      register: settings
      changed_when: false
    - name: an empty log directory
      file:
        path: "{{ dir }}/log"
        state: directory
        mode: "0700"
    - name: no stale file
      file:
        path: "{{ dir }}/data/stale"
        state: absent
    - name: a line that records the settings' length
      lineinfile:
        path: "{{ dir }}/data/facts"
        regexp: "^settings_lines="
        line: "settings_lines={{ settings.stdout_lines | length }}"
        create: true
        mode: "0644"
EOF
tasks=$(grep -c '^    - name:' "$WORK/play/bench.yml")

PLAYBOOKS_DIR=$WORK/play  # provisiond runs playbooks from its playbooks_dir only
start_targets
restart_provisiond
enroll_nodes

# --- Ansible: the same targets, key, known hosts and key exchange -------------
mkdir -p "$WORK/ansible/home" "$WORK/ansible/local" "$WORK/cp"
{
  echo "[bench]"
  for ((i = 1; i <= nodes; i++)); do echo "$prefix$i ansible_host=${addr[i]}"; done
  echo "[bench:vars]"
  echo "ansible_port=$PORT"
  echo "ansible_user=root"
  echo "ansible_ssh_private_key_file=$key"
  echo "ansible_python_interpreter=/usr/bin/python3"
} >"$WORK/ansible/inventory.ini"
cat >"$WORK/ansible/ansible.cfg" <<EOF
[defaults]
inventory = $WORK/ansible/inventory.ini
forks = $nodes
host_key_checking = True
retry_files_enabled = False
interpreter_python = /usr/bin/python3
local_tmp = $WORK/ansible/local
remote_tmp = $WORK/ansible/remote
stdout_callback = default
deprecation_warnings = False
nocows = 1

[ssh_connection]
pipelining = True
ssh_args = -o ControlMaster=auto -o ControlPersist=60s -o KexAlgorithms=curve25519-sha256 -o UserKnownHostsFile=$WORK/known_hosts -o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes -o BatchMode=yes
control_path_dir = $WORK/cp
control_path = %(directory)s/%%C
EOF
export ANSIBLE_CONFIG=$WORK/ansible/ansible.cfg ANSIBLE_HOME=$WORK/ansible/home
# sed reads all of it: with head, ansible-playbook could die of SIGPIPE.
ansible_version=$(ansible-playbook --version 2>/dev/null | sed -n '1s/^ansible-playbook //p')

masters_alive() {  # control master sockets in the control path directory
  local n=0 s
  for s in "$WORK/cp"/*; do [[ -S $s ]] && n=$((n + 1)); done
  echo "$n"
}
close_masters() {  # asks each control master to exit (they are ours)
  local s
  for s in "$WORK/cp"/*; do
    [[ -S $s ]] && ssh -F /dev/null -o ControlPath="$s" -O exit bench >/dev/null 2>&1 || true
  done
  for ((i = 0; i < 100; i++)); do
    [[ $(masters_alive) -eq 0 ]] && return 0
    sleep 0.05
  done
}
CLEANUP_HOOKS+=(close_masters)

# Checks what a run wrote: every node's files, with their contents.
check_output() {  # $1: base directory, $2: what for messages
  local base=$1 i d
  for ((i = 1; i <= nodes; i++)); do
    d=$base/$prefix$i
    [[ -f $d/data/once && -d $d/log && -L $d/etc/current.conf ]] || die "$2: $d is incomplete"
    [[ $(cat "$d/etc/settings") == $'max_jobs=4\nlog_level=info' ]] || die "$2: $d/etc/settings is wrong"
    [[ $(wc -l <"$d/etc/hosts") -eq $nodes ]] || die "$2: $d/etc/hosts does not list $nodes nodes"
    grep -qx "address=${addr[i]}" "$d/etc/node.conf" || die "$2: $d/etc/node.conf is wrong"
    grep -qx 'settings_lines=2' "$d/data/facts" || die "$2: $d/data/facts is wrong"
    [[ $(stat -c %a "$d/etc/settings") == 640 ]] || die "$2: $d/etc/settings has the wrong mode"
  done
}

# One measured run; appends a row to the table and sets: wall, server, changed.
rows=()
run_provisiond() {  # $1: round, $2: run number, $3: base, $4: connections; $runner
  local t0 t1 rc=0 out="$WORK/p-$runner-$1-$2.json"
  t0=$(now)
  "$provisionctl" playbook run "$WORK/play/bench.yml" "$prefix[1-$nodes]" -e "base=$3" --json \
    --runner "$runner" >"$out" 2>"$WORK/p-$1-$2.err" || rc=$?
  t1=$(now)
  ((rc == 0)) || die "provisionctl playbook run exited $rc: $(tail -c 2000 "$WORK/p-$1-$2.err") $(jq -c '[.runs[] | select(.status != "ok") | {node, status, message}][:3]' "$out" 2>/dev/null)"
  wall=$(elapsed "$t0" "$t1")
  # --json: a "PLAYBOOK ..." line, then the runs as one JSON line.
  tail -n 1 "$out" >"$out.runs" && mv "$out.runs" "$out"
  local ok_runs
  read -r ok_runs changed server < <(jq -r '[([.runs[] | select(.status == "ok")] | length),
      ([.runs[].changed] | add), (([.runs[].finished_ms] | max) - ([.runs[].started_ms] | min)) / 1000] | @tsv' "$out")
  ((ok_runs == nodes)) || die "provisiond ($runner): $ok_runs of $nodes runs ok: $(jq -c '[.runs[] | select(.status != "ok") | {node, status, message}][:3]' "$out")"
  rows+=("$1 $side $2 $wall $server $changed $4")
}
run_ansible() {  # $1: round, $2: run number, $3: base, $4: connections
  local t0 t1 rc=0 log="$WORK/a-$1-$2.log" recap failed
  t0=$(now)
  ansible-playbook "$WORK/play/bench.yml" -e "base=$3" >"$log" 2>&1 || rc=$?
  t1=$(now)
  ((rc == 0)) || die "ansible-playbook exited $rc: $(tail -n 30 "$log")"
  wall=$(elapsed "$t0" "$t1")
  recap=$(sed -n '/^PLAY RECAP/,$p' "$log" | grep -E '^[^ ]+ +: ok=')
  [[ $(grep -c . <<<"$recap") -eq $nodes ]] || die "ansible: the recap does not list $nodes hosts"
  failed=$(grep -Ev 'unreachable=0 +failed=0' <<<"$recap" || true)
  [[ -z $failed ]] || die "ansible: failed hosts: $failed"
  changed=$(grep -o 'changed=[0-9]*' <<<"$recap" | cut -d= -f2 | awk '{ s += $1 } END { print s }')
  server=null
  rows+=("$1 ansible $2 $wall - $changed $4")
}

# provisiond: restart (fresh sessions), run 1 and 2 on one directory, run 3
# on another over the sessions kept open.
side_provisiond() {  # $1: round, $2: runner (native, ansible)
  local runner=$2 side base
  side=$([[ $2 == native ]] && echo provisiond || echo prov-ansible)
  base="$WORK/out/$1-$side"
  restart_provisiond  # a restart: fresh sessions (and no ssh control masters)
  run_provisiond "$1" 1 "$base-1" fresh
  check_output "$base-1" "$side round $1 run 1"
  run_provisiond "$1" 2 "$base-1" persistent
  ((changed == 0)) || die "$side round $1 run 2 changed $changed task(s), expected none: $("$provisionctl" run show "$(jq '.runs[0].id' "$WORK/p-$runner-$1-2.json")" 2>&1 | grep -i changed)"
  run_provisiond "$1" 3 "$base-3" persistent
  check_output "$base-3" "$side round $1 run 3"
  rm -rf "$base-1" "$base-3"
}
side_ansible() {  # $1: round
  local base="$WORK/out/$1-ansible" alive
  close_masters
  run_ansible "$1" 1 "$base-1" "fresh"
  check_output "$base-1" "ansible round $1 run 1"
  alive=$(masters_alive)
  run_ansible "$1" 2 "$base-1" "persistent($alive)"
  ((changed == 0)) || die "ansible round $1 run 2 changed $changed task(s), expected none"
  alive=$(masters_alive)
  run_ansible "$1" 3 "$base-3" "persistent($alive)"
  check_output "$base-3" "ansible round $1 run 3"
  rm -rf "$base-1" "$base-3"
}

loads=()
for ((r = 1; r <= runs; r++)); do
  loads+=("$(cut -d' ' -f1-3 /proc/loadavg)")
  if ((r % 2)); then
    side_provisiond "$r" native; side_ansible "$r"; side_provisiond "$r" ansible
  else
    side_provisiond "$r" ansible; side_ansible "$r"; side_provisiond "$r" native
  fi
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# --- report ------------------------------------------------------------------
col() {  # $1: side, $2: run, $3: field (4 wall, 5 server, 6 changed)
  printf '%s\n' "${rows[@]}" | awk -v s="$1" -v r="$2" -v f="$3" '$2 == s && $3 == r { print $f }'
}
declare -A med
for side in provisiond ansible prov-ansible; do
  for run in 1 2 3; do
    # shellcheck disable=SC2046
    med[$side$run]=$(median $(col "$side" "$run" 4))
  done
done
for run in 1 2 3; do
  # shellcheck disable=SC2046
  med[server$run]=$(median $(col provisiond "$run" 5))
done
kinds=("" "fresh connections, changes" "persistent, nothing changes" "persistent, changes")
date_utc=$(date -u +%Y-%m-%dT%H:%M:%SZ)
provisiond_version=$("$provisiond" --version 2>/dev/null | head -n 1 || echo unknown)

echo "$bench: $tasks tasks (file, copy, template, lineinfile, command, apt present) on $nodes sshd targets on loopback, $runs round(s), alternating"
echo "ansible-playbook $ansible_version (forks $nodes, pipelining, ControlPersist 60s) vs provisiond ($provisiond_version, configure.workers $((nodes > 64 ? nodes : 64)))"
echo "kex curve25519-sha256 on both sides; $(nproc) CPUs, load average $load_before at start, $load_after at the end"
echo "run 1: fresh connections, changes; run 2: the same again, nothing changes; run 3: a new directory over persistent connections"
printf '%-5s %-11s %-3s %9s %9s %8s  %s\n' round side run "wall s" "server s" changed connections
for row in "${rows[@]}"; do
  read -r r side run wall server changed conn <<<"$row"
  printf '%-5s %-11s %-3s %9s %9s %8s  %s\n' "$r" "$side" "$run" "$wall" "$server" "$changed" "$conn"
done
echo "medians (s)                         provisiond  (server)    ansible  provisiond/ansible"
for run in 1 2 3; do
  printf '  run %d: %-28s %9s %9s %10s  %s\n' "$run" "${kinds[run]}" "${med[provisiond$run]}" \
    "${med[server$run]}" "${med[ansible$run]}" "$(ratio "${med[provisiond$run]}" "${med[ansible$run]}")"
done
echo "goal (issue 5): provisiond <= 0.05 of Ansible's time"
echo "provisiond's Ansible runner (--runner ansible) over plain ansible-playbook"
for run in 1 2 3; do
  printf '  run %d: %-28s %9s %9s  %s\n' "$run" "${kinds[run]}" "${med[prov-ansible$run]}" \
    "${med[ansible$run]}" "$(ratio "${med[prov-ansible$run]}" "${med[ansible$run]}")"
done
echo "goal (issue 15): <= 1.1"

rows_json=$(printf '%s\n' "${rows[@]}" | awk 'BEGIN { printf "[" } {
  printf "%s{\"round\": %d, \"side\": \"%s\", \"run\": %d, \"wall_s\": %s, \"server_s\": %s, \"changed\": %d, \"connections\": \"%s\"}",
    (NR > 1 ? ", " : ""), $1, $2, $3, $4, ($5 == "-" ? "null" : $5), $6, $7 } END { printf "]" }')
loads_json=$(printf '"%s",' "${loads[@]}")
cat >"$json_out" <<EOF
{
  "benchmark": "playbook",
  "date": "$date_utc",
  "machine": {"hostname": "$(uname -n)", "cpus": $(nproc), "loadavg_at_start": "$load_before",
              "loadavg_per_round": [${loads_json%,}], "loadavg_at_end": "$load_after"},
  "nodes": $nodes, "tasks": $tasks, "rounds": $runs,
  "ansible": {"version": "$ansible_version", "forks": $nodes, "pipelining": true, "control_persist_s": 60,
              "median_s": {"run1": ${med[ansible1]}, "run2": ${med[ansible2]}, "run3": ${med[ansible3]}}},
  "provisiond": {"version": "$provisiond_version",
                 "median_s": {"run1": ${med[provisiond1]}, "run2": ${med[provisiond2]}, "run3": ${med[provisiond3]}},
                 "median_server_s": {"run1": ${med[server1]}, "run2": ${med[server2]}, "run3": ${med[server3]}}},
  "provisiond_ansible_runner": {"median_s": {"run1": ${med[prov-ansible1]}, "run2": ${med[prov-ansible2]}, "run3": ${med[prov-ansible3]}}},
  "ratio_ansible_runner_over_ansible": {"run1": $(ratio "${med[prov-ansible1]}" "${med[ansible1]}"),
                                        "run2": $(ratio "${med[prov-ansible2]}" "${med[ansible2]}"),
                                        "run3": $(ratio "${med[prov-ansible3]}" "${med[ansible3]}")},
  "ratio_provisiond_over_ansible": {"run1": $(ratio "${med[provisiond1]}" "${med[ansible1]}"),
                                    "run2": $(ratio "${med[provisiond2]}" "${med[ansible2]}"),
                                    "run3": $(ratio "${med[provisiond3]}" "${med[ansible3]}")},
  "runs": $rows_json
}
EOF
jq . "$json_out" >/dev/null || die "wrote invalid JSON to $json_out"
echo "results: $json_out"
