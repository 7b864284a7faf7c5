#!/usr/bin/env bash
# Bring your own Ansible, against real sshd processes on loopback: which
# runner a playbook gets and why (`playbook check`), a role with roles:,
# meta dependencies, defaults, include_tasks, block/rescue/always and
# handlers, on the native runner and on ansible-playbook with the same
# results; a playbook outside the native subset (a collection module, a
# lookup) under ansible-playbook with per-task results in `run show`;
# run_once and delegate_to: localhost alike on both runners; host
# key pinning under Ansible; a profile whose playbook runs under Ansible
# taking nodes to `ready`; refusals with Ansible's own error.
# Every task writes below the test's own folder: the targets are this machine.
# Usage: ansible_test.sh PROVISIOND PROVISIONCTL
PROVISIOND="$(realpath "$1")"
PROVISIONCTL="$(realpath "$2")"
source "$(dirname "$0")/../lib.sh"
ctl() { "$PROVISIONCTL" "$@"; }

command -v ansible-playbook >/dev/null || {
  echo "FAIL: ansible-playbook is not installed (scripts/install-deps.sh installs it)" >&2
  exit 1
}
NODES="$WORK/nodes"
PB="$WORK/playbooks"
mkdir -p "$NODES" "$WORK/an/data/ssh" "$WORK/profiles/anprof" \
  "$PB"/roles/{common/defaults,common/tasks,nodeconf/defaults,nodeconf/tasks,nodeconf/handlers,nodeconf/templates,nodeconf/meta}

ssh-keygen -q -t ed25519 -N '' -C provisiond-test -f "$WORK/an/data/ssh/id_ed25519"
start_sshd_targets 4 "$WORK/an/data/ssh/id_ed25519.pub"

# --- a role in the shapes public roles take -----------------------------------
cat >"$PB/roles/common/defaults/main.yml" <<'EOF'
common_dir: "{{ base }}/{{ inventory_hostname }}"
EOF
cat >"$PB/roles/common/tasks/main.yml" <<'EOF'
- name: the node's folder
  file: path={{ common_dir }} state=directory mode=0755
EOF
cat >"$PB/roles/nodeconf/meta/main.yml" <<'EOF'
galaxy_info:
  author: provisiond tests
  description: settings for a compute node
dependencies:
  - role: common
EOF
cat >"$PB/roles/nodeconf/defaults/main.yml" <<'EOF'
nodeconf_port: 8080
nodeconf_extra: from the defaults
EOF
cat >"$PB/roles/nodeconf/templates/settings.j2" <<'EOF'
# {{ inventory_hostname }}
port={{ nodeconf_port }}
extra={{ nodeconf_extra }}
EOF
cat >"$PB/roles/nodeconf/tasks/main.yml" <<'EOF'
- name: the settings file
  template:
    src: settings.j2
    dest: "{{ common_dir }}/settings.conf"
  notify: settings changed
- name: more settings
  include_tasks: extra.yml
- name: try, rescue, always
  block:
    - name: this one fails
      command: /bin/false
    - name: never reached
      copy: content="unreachable\n" dest={{ common_dir }}/not-reached
  rescue:
    - name: the rescue
      copy: content="rescued\n" dest={{ common_dir }}/rescued
  always:
    - name: always
      copy: content="always\n" dest={{ common_dir }}/always
EOF
cat >"$PB/roles/nodeconf/tasks/extra.yml" <<'EOF'
- name: a line from the included file
  lineinfile:
    path: "{{ common_dir }}/included.conf"
    line: "included=yes"
    create: true
EOF
cat >"$PB/roles/nodeconf/handlers/main.yml" <<'EOF'
- name: settings changed
  shell: echo changed >> {{ common_dir }}/handler.log
EOF
cat >"$PB/roles-site.yml" <<'EOF'
- name: a node's settings, by role
  hosts: all
  gather_facts: false
  roles:
    - role: nodeconf
      nodeconf_extra: from the play
EOF
# Outside the native subset: a collection's module and a controller lookup.
cat >"$PB/outside.yml" <<'EOF'
- name: beyond the native runner
  hosts: all
  gather_facts: false
  tasks:
    - name: the node's folder
      ansible.builtin.file:
        path: "{{ base }}/{{ inventory_hostname }}/ini"
        state: directory
    - name: an ini setting, by a collection module
      community.general.ini_file:
        path: "{{ base }}/{{ inventory_hostname }}/ini/node.ini"
        section: node
        option: name
        value: "{{ inventory_hostname }}"
    - name: a block of lines
      ansible.builtin.blockinfile:
        path: "{{ base }}/{{ inventory_hostname }}/ini/block.txt"
        create: true
        block: |
          facts from provisiond: {{ provisiond_facts | length }}
          controller: {{ lookup('pipe', 'echo from-the-controller') }}
    - name: fails on the third node only
      ansible.builtin.command: /bin/false
      when: inventory_hostname == 'a3'
EOF
# Cluster-wide steps: a token made once for all the nodes of the run, a
# record written on the control node (no SSH_CONNECTION there).
cat >"$PB/cluster-once.yml" <<'EOF'
- name: cluster-wide steps
  hosts: all
  gather_facts: false
  tasks:
    - name: the node's folder
      ansible.builtin.file: path={{ base }}/{{ inventory_hostname }} state=directory
    - name: a token made once for the cluster
      ansible.builtin.shell: echo "token-$(cat /proc/sys/kernel/random/uuid)" | tee -a {{ base }}/once.log
      register: token
      run_once: true
    - name: every node keeps the token
      ansible.builtin.copy: content="{{ token.stdout }}\n" dest={{ base }}/{{ inventory_hostname }}/token
    - name: a record on the control node
      ansible.builtin.shell: echo "{{ inventory_hostname }} ${SSH_CONNECTION:-on-the-control-node}" > {{ base }}/{{ inventory_hostname }}/delegated
      delegate_to: localhost
EOF
cat >"$PB/broken.yml" <<'EOF'
- hosts: all
  tasks:
    - name: two modules in one task
      ansible.builtin.command: /bin/true
      ansible.builtin.shell: /bin/true
EOF

PROFILES_DIR="$WORK/profiles" PLAYBOOKS_DIR="$PB" start_provisiond an "ssh.port: $PORT" "configure.task_timeout: 60"
DB="$DATA/data/provisiond.db"
for i in 1 2 3; do
  check "enroll a$i" ctl node add "a$i" --mac "52:54:00:dd:00:0$i" --ip "$(addr_of "t$i")"
done

echo "== playbook check: the runner and why"
expect_exit 1 "outside.yml forced native is refused" ctl playbook check "$PB/outside.yml" --runner native
expect_output "with the native loader's file:line" "outside.yml:"
check "outside.yml" ctl playbook check "$PB/outside.yml"
expect_output "runs on ansible" "runs on ansible"
expect_output "because of the collection module" "community.general.ini_file"
expect_exit 1 "broken.yml is refused" ctl playbook check "$PB/broken.yml"
expect_output "with Ansible's own error" "conflicting action statements"

echo "== playbook check: a role loads natively"
check "roles-site.yml" ctl playbook check "$PB/roles-site.yml"
expect_output "runs natively" "runs on native (loads natively)"

# The same role on each runner: the same files, the same records.
for runner in native ansible; do
  echo "== the role on the $runner runner"
  check "playbook run roles-site.yml --runner $runner" ctl playbook run "$PB/roles-site.yml" 'a[1-2]' \
    --runner "$runner" -e base="$NODES/$runner"
  expect_output "the runner is printed" "RUNNER $runner"
  for n in a1 a2; do
    d="$NODES/$runner/$n"
    expect_eq "$runner $n: template with the play's role var, the include's line" \
      "$(tail -n 2 "$d/settings.conf" | tr '\n' ' ')$(cat "$d/included.conf")" "port=8080 extra=from the play included=yes"
    expect_eq "$runner $n: rescue and always ran, the rest of the block did not" \
      "$(cat "$d/rescued" "$d/always") $(test -e "$d/not-reached" && echo reached)" "rescued
always "
    expect_eq "$runner $n: the handler ran once" "$(cat "$d/handler.log")" changed
  done
  RUN="$(sqlite3 "$DB" "select id from runs where node='a1' and kind='playbook' order by id desc limit 1")"
  expect_eq "$runner: the run is ok" "$(sqlite3 "$DB" "select status from runs where id=$RUN")" ok
  check "$runner: run show" ctl run show "$RUN"
  expect_output "$runner: per-task results with the role's file:line" "roles/nodeconf/tasks/main.yml:"
  expect_output "$runner: the rescued failure is shown" "this one fails"
  expect_eq "$runner: the failure is recorded as failed, the run still ok" \
    "$(sqlite3 "$DB" "select status from run_tasks where run_id=$RUN and task='this one fails'")" failed
  # Ansible also reports the include itself as a task.
  expect_eq "$runner: tasks recorded (dependency, template, include, line, block 3, handler)" \
    "$(sqlite3 "$DB" "select count(*) from run_tasks where run_id=$RUN")" "$([ $runner = native ] && echo 7 || echo 8)"
  check "$runner: second run" ctl playbook run "$PB/roles-site.yml" 'a[1-2]' --runner "$runner" \
    -e base="$NODES/$runner"
  RUN2="$(sqlite3 "$DB" "select id from runs where node='a1' and kind='playbook' order by id desc limit 1")"
  expect_eq "$runner: the second run changes nothing" \
    "$(sqlite3 "$DB" "select count(*) from run_tasks where run_id=$RUN2 and status='changed'")" 0
done
expect_eq "the runs say which ran under ansible-playbook" \
  "$(sqlite3 "$DB" "select count(*) from runs where what = '$PB/roles-site.yml (ansible-playbook)'")" 4

for runner in native ansible; do
  echo "== run_once and delegate_to: localhost on the $runner runner"
  check "playbook run cluster-once.yml --runner $runner" ctl playbook run "$PB/cluster-once.yml" 'a[1-3]' \
    --runner "$runner" -e base="$NODES/once-$runner"
  expect_eq "$runner: the run_once task ran once" "$(wc -l <"$NODES/once-$runner/once.log")" 1
  for n in a1 a2 a3; do
    expect_eq "$runner $n: has the one token" "$(cat "$NODES/once-$runner/$n/token")" \
      "$(cat "$NODES/once-$runner/once.log")"
    expect_eq "$runner $n: the delegated task ran on the control node, with $n's vars" \
      "$(cat "$NODES/once-$runner/$n/delegated")" "$n on-the-control-node"
  done
done
check "cluster-once.yml loads natively" ctl playbook check "$PB/cluster-once.yml"
expect_output "cluster-once.yml runs natively" "runs on native (loads natively)"

echo "== outside the native subset: ansible-playbook, one node's failure its own"
expect_exit 1 "outside.yml on a[1-3] exits 1 (a3 fails)" ctl playbook run "$PB/outside.yml" 'a[1-3]' \
  -e base="$NODES/outside"
expect_output "runs on ansible, saying why" "RUNNER ansible (outside the native subset"
expect_eq "statuses per node" \
  "$(sqlite3 "$DB" "select group_concat(status, ' ') from (select status from runs where kind='playbook' and what like '%outside.yml%' order by node)")" \
  "ok ok failed"
expect_eq "the collection module wrote a1's ini" "$(grep -c '^name = a1' "$NODES/outside/a1/ini/node.ini")" 1
check "the lookup ran on the controller" grep -q 'controller: from-the-controller' "$NODES/outside/a2/ini/block.txt"
RUN3="$(sqlite3 "$DB" "select id from runs where node='a3' and kind='playbook' order by id desc limit 1")"
expect_eq "a3's run names the failed task" \
  "$(sqlite3 "$DB" "select message from runs where id=$RUN3" | cut -d' ' -f1-5)" "fails on the third node"
expect_eq "a3's failing task has its exit code" \
  "$(sqlite3 "$DB" "select exit_code from run_tasks where run_id=$RUN3 and status='failed'")" 1

echo "== host keys: pinned at first contact, a changed one refused under Ansible too"
expect_eq "a1's key was pinned" "$(sqlite3 "$DB" "select host_key from nodes where hostname='a1'" | cut -d' ' -f1-2)" \
  "$(key_of t1)"
check "pin another target's key on a2" ctl node set a2 --host-key "$(key_of t3)"
# ssh's own words reach the run unless Ansible's write to the dying ssh
# wins the race ("Broken pipe", seen on a loaded machine): every try must
# be refused, and one of three must say why.
for try in 1 2 3; do
  expect_exit 1 "the run on a2 is refused by ssh under ansible-playbook (try $try)" \
    ctl playbook run "$PB/outside.yml" a2 -e base="$NODES/refused"
  REFUSED="$(sqlite3 "$DB" "select message from runs where node='a2' order by id desc limit 1")"
  case "$REFUSED" in *"Host key verification failed"*) break ;; esac
done
case "$REFUSED" in
*"Host key verification failed"*) pass "because of its host key (try $try)" ;;
*) fail "the refusal does not name the host key: $REFUSED" ;;
esac
check "nothing ran on a2" test ! -e "$NODES/refused"
check "set a2's key back" ctl node set a2 --host-key "$(key_of t2)"

echo "== a profile with a playbook Ansible refuses: listed, refused when planned"
mkdir -p "$WORK/profiles/anbroken"
printf 'version: anbroken\nimage: {name: lab}\nplaybooks:\n  - playbook: broken.yml\nnodes: {pattern: "b*"}\n' \
  >"$WORK/profiles/anbroken/profile.yaml"
check "profile list (parsed only: no Ansible run)" ctl profile list
expect_output "lists it" "anbroken"
expect_exit 1 "its plan is refused" ctl profile plan anbroken
expect_output "at the profile's line" "anbroken/profile.yaml:4: playbook 'broken.yml' does not load"
expect_output "with Ansible's own error" "conflicting action statements"
expect_exit 1 "its apply too" ctl profile apply anbroken --yes
rm -r "$WORK/profiles/anbroken"

echo "== a profile whose playbook runs under ansible-playbook takes nodes to ready"
cat >"$WORK/profiles/anprof/profile.yaml" <<EOF
version: anprof
description: a role from the playbooks folder, under ansible-playbook
image:
  name: lab
playbooks:
  - playbook: roles-site.yml
    runner: ansible
    vars:
      base: $NODES/profile
health_checks:
  - name: settings written
    command: test -s $NODES/profile
nodes:
  pattern: p*
EOF
check "profile show" ctl profile show anprof
expect_output "the profile says which runner" "ansible"
for i in 1 2; do
  check "enroll p$i" ctl node add "p$i" --mac "52:54:00:dd:01:0$i" --ip "$(addr_of "t$i")" --profile anprof
done
fake_boot_files "$WORK" 4096 4096
check "import the profile's image" ctl image import lab --kernel "$WORK/vmlinuz" --initrd "$WORK/initrd.img"
check "apply" ctl profile apply anprof --yes
for i in 1 2; do
  check "p$i phones home" node_hello "$URL" "52:54:00:dd:01:0$i" "{\"ssh_host_key\": \"$(key_of "t$i")\"}"
done
check "wait for p1 and p2 to be ready" ctl wait 'p[1-2]' --timeout 180
expect_output "both ready" "2/2 ready"
expect_eq "p2's role ran from the applied snapshot" "$(cat "$NODES/profile/p2/included.conf")" "included=yes"
check "the snapshot carries the role" test -f "$(ls -d "$DATA"/data/snapshots/*/ | head -n 1)playbooks/roles/nodeconf/tasks/main.yml"

echo "== ssh connections are kept per node and pinned key, never shared across nodes"
# ssh control masters rename themselves "ssh: <socket> [mux]"; provisiond's
# sockets are named <login user>@<host key alias>. Tests run one at a time:
# only this provisiond's masters have such names.
masters() { ps -eo args | grep -E '^ssh: /.*/root@pv-[0-9a-f]{16} \[mux\]$' || true; }
# A master lives 60 s after its last use (ControlPersist): one run on three
# nodes first, so a slow machine's gaps between the steps above do not count.
check "one Ansible run on a1, p1 and p2" ctl playbook run "$PB/roles-site.yml" 'a1,p[1-2]' --runner ansible \
  -e base="$NODES/masters"
aliases="$(masters | sort -u | wc -l)"
check "one control master per node and key ($aliases)" test "$aliases" -ge 3

echo "== masters a killed provisiond left are stopped when it starts again"
kill -KILL "$PROVISIOND_PID"
wait "$PROVISIOND_PID" || true
check "SIGKILL leaves the masters running" test "$(masters | wc -l)" -ge 3
rm -f "$DATA/data/provisiond.url"
PROFILES_DIR="$WORK/profiles" PLAYBOOKS_DIR="$PB" start_provisiond an "ssh.port: $PORT" "configure.task_timeout: 60"
wait_for 30 "the left masters stopped at start" bash -c "! ps -eo args | grep -qE '^ssh: /.*/root@pv-[0-9a-f]{16} \[mux\]$'" &&
  pass "the left masters stopped at start"
check "one more Ansible run after the restart" ctl playbook run "$PB/roles-site.yml" a1 --runner ansible \
  -e base="$NODES/after-restart"
check "its masters are up again" test "$(masters | wc -l)" -ge 1

echo "== no ssh control master outlives provisiond"
kill "$PROVISIOND_PID"
wait "$PROVISIOND_PID" || true
left="$(masters | wc -l)"
expect_eq "control masters stopped with provisiond" "$left" 0

finish
