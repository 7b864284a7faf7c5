#!/usr/bin/env bash
# Configuration over SSH against real sshd processes on loopback (each with
# its own host key, on its own 127.0.1.N address, one port for all): a
# profile's playbooks (every module that can run here), health checks and
# the ready gate, re-apply running nothing, host key pinning and mismatch,
# an unreachable node, cmd, playbook run, run list/show/logs and the exports.
# Usage: configure_test.sh PROVISIOND PROVISIONCTL
PROVISIOND="$(realpath "$1")"
PROVISIONCTL="$(realpath "$2")"
source "$(dirname "$0")/../lib.sh"
ctl() { "$PROVISIONCTL" "$@"; }

NODES="$WORK/nodes" # what the playbooks write, one directory per node
USER_NAME="pvt$$"   # a user and group the playbook creates and the cleanup removes
mkdir -p "$NODES" "$WORK/it/data/ssh" "$WORK/profiles/itest" "$WORK/playbooks/templates"
CLEANUP_HOOKS+=("userdel -r $USER_NAME >/dev/null 2>&1; groupdel ${USER_NAME}g >/dev/null 2>&1")

# provisiond's control key, made before it starts so the targets trust it.
ssh-keygen -q -t ed25519 -N '' -C provisiond-test -f "$WORK/it/data/ssh/id_ed25519"
start_sshd_targets 5 "$WORK/it/data/ssh/id_ed25519.pub"

cat >"$WORK/profiles/itest/profile.yaml" <<EOF
version: itest
description: integration test profile
image:
  name: lab
secrets:
  - {name: itest_key, generate: random, bytes: 48}
playbooks:
  - playbook: itest.yml
    vars:
      base: $NODES
      test_user: $USER_NAME
      status_url: URL/web/style.css
      itest_secret: {secret: itest_key}
health_log: $NODES/health.log
health_hook: printf '%s|%s\\n' "\$PROVISION_HEALTH_STATUS" "\$PROVISION_HEALTH_REASON" >$NODES/hook.\$PROVISION_NODE
health_checks:
  - name: marker-present
    command: test -d $NODES
    timeout: 10
  - name: not-tripped
    command: test ! -e $NODES/tripped
    timeout: 10
nodes:
  pattern: it*
EOF

cat >"$WORK/playbooks/templates/node.conf.j2" <<'EOF'
# {{ inventory_hostname }}
{% for h in groups['all'] %}
{{ h }} {{ hostvars[h].ansible_host }}
{% endfor %}
EOF

cat >"$WORK/playbooks/itest.yml" <<'EOF'
- name: Every module that can run on a loopback target
  hosts: all
  become: true
  vars:
    dir: "{{ base }}/{{ inventory_hostname }}"
  tasks:
    - name: node directory
      file:
        path: "{{ dir }}"
        state: directory
        mode: "0755"
    - name: a secret from the store (no_log is implied)
      copy:
        dest: "{{ dir }}/secret"
        content: "{{ itest_secret }}"
        mode: "0600"
    - name: a command that prints it without naming it
      command: cat {{ dir }}/secret
      changed_when: false
    - name: a file from content
      copy:
        dest: "{{ dir }}/motd"
        content: "configured by provisiond\n"
        mode: "0640"
      notify: note the change
    - name: a template over the inventory
      template:
        src: node.conf.j2
        dest: "{{ dir }}/node.conf"
    - name: a line in a file
      lineinfile:
        path: "{{ dir }}/settings"
        line: "max_jobs=4"
        regexp: "^max_jobs="
        create: true
    # it1 and it2 are this one machine: only it1 makes the user (two useradd
    # at once on one machine race).
    - name: a group
      group:
        name: "{{ test_user }}g"
      when: inventory_hostname == 'it1'
    - name: a user in it
      user:
        name: "{{ test_user }}"
        groups: "{{ test_user }}g"
        shell: /bin/sh
        create_home: false
      when: inventory_hostname == 'it1'
    - name: a command that only runs once
      command: touch {{ dir }}/once
      args:
        creates: "{{ dir }}/once"
    - name: a shell pipeline, read only
      shell: cat {{ dir }}/settings | grep -c max_jobs
      register: jobs
      changed_when: false
    - name: stat the file
      stat:
        path: "{{ dir }}/motd"
      register: motd
    - name: check what was done
      assert:
        that:
          - jobs.stdout == "1"
          - motd.stat.exists
          - motd.stat.mode == "0640"
    - name: the API answers (its port is open)
      wait_for:
        port: "{{ status_url.split(':')[2].split('/')[0] | int }}"
        host: 127.0.0.1
        timeout: 10
    - name: download from provisiond
      get_url:
        url: "{{ status_url }}"
        dest: "{{ dir }}/page.css"
    - name: a package that is installed already
      apt:
        name: openssh-server
        state: present
  handlers:
    - name: note the change
      shell: echo changed >> {{ dir }}/handler.log
EOF

# A cluster profile whose nodes wait for each other (wait_for_peers): a node's
# playbooks run once every node of the hostlist has phoned home.
mkdir -p "$WORK/profiles/peers"
cat >"$WORK/profiles/peers/profile.yaml" <<EOF
version: peers
image:
  name: lab
wait_for_peers: 120
playbooks:
  - playbook: peers.yml
    vars:
      base: $NODES
nodes:
  hostlist: pw[1-2]
EOF
cat >"$WORK/playbooks/peers.yml" <<'EOF'
- hosts: all
  tasks:
    - name: every node of the cluster, as this node's playbooks see it
      copy:
        dest: "{{ base }}/peers-{{ inventory_hostname }}.txt"
        content: "{% for h in groups['all'] %}{{ h }} {{ hostvars[h].ansible_host }} {{ (hostvars[h].provisiond_facts.ssh_host_key | default('') | length) > 20 }}\n{% endfor %}"
EOF

# A machine that keeps its own OS, adopted over SSH: its profile's bake
# playbook runs on it (it has no image), then the node stage. (Its "machine"
# is the sshd target t5: the playbooks write only under $NODES.)
mkdir -p "$WORK/profiles/inst"
cat >"$WORK/profiles/inst/profile.yaml" <<EOF
version: inst
image:
  name: lab
bake:
  - playbook: stage.yml
    vars: {base: $NODES, stage: image}
playbooks:
  - playbook: stage.yml
    vars: {base: $NODES, stage: node}
nodes:
  pattern: inst*
EOF
cat >"$WORK/playbooks/stage.yml" <<'EOF'
- hosts: all
  tasks:
    - name: the stage ran here (a line each time)
      shell: echo "{{ stage }} provisiond_stage={{ provisiond_stage }}" >>"{{ base }}/{{ inventory_hostname }}-stages"
EOF

PROFILES_DIR="$WORK/profiles" PLAYBOOKS_DIR="$WORK/playbooks" start_provisiond it "tools_dir: $(dirname "$PROVISIOND")" "ssh.port: $PORT" "configure.task_timeout: 60" \
  "configure.connect_retry: 3" "configure.installed_hosts: $NODES/hosts"
sed -i "s#URL/web#$URL/web#" "$WORK/profiles/itest/profile.yaml"
DB="$DATA/data/provisiond.db"

# hello NODE KEY: the node boots and phones home (tests/lib.sh) with the host
# key it reports.
hello() {
  node_hello "$URL" "$(sqlite3 "$DB" "select mac from nodes where hostname = '$1'")" \
    "{\"ssh_host_key\": \"$2\"}"
}
runs_of() { sqlite3 "$DB" "select count(*) from runs where node = '$1'"; }

echo "== enroll, apply: nodes that are down are configured when they phone home"
for i in 1 2 3 4; do
  check "enroll it$i" ctl node add "it$i" --mac "52:54:00:cc:00:0$i" --ip "$(addr_of "t$i")" --profile itest
done
check "enroll it5 at an address where nothing listens" ctl node add it5 --mac 52:54:00:cc:00:05 \
  --ip 127.0.1.99 --profile itest
fake_boot_files "$WORK" 4096 4096
check "import the profile's image (random bytes: nodes here boot nothing, but get scripts)" \
  ctl image import lab --kernel "$WORK/vmlinuz" --initrd "$WORK/initrd.img"
check "apply" ctl profile apply itest --yes
expect_output "not configured before its hello" "configure: when it phones home"

echo "== phone-home -> configuring -> playbooks -> health -> ready"
check "it1 phones home" hello it1 "$(key_of t1)"
check "it2 phones home" hello it2 "$(key_of t2)"
check "wait for it1 and it2 to be ready" ctl wait 'it[1-2]' --timeout 120
expect_output "wait reports both" "2/2 ready"
ctl node show it1 >"$WORK/show" 2>&1
expect_eq "it1 is ready" "$(sqlite3 "$DB" "select state from nodes where hostname='it1'")" ready
expect_eq "the motd was written on it1" "$(cat "$NODES/it1/motd")" "configured by provisiond"
expect_eq "its mode" "$(stat -c %a "$NODES/it1/motd")" 640
expect_eq "the template saw the inventory" "$(grep -c '^it' "$NODES/it1/node.conf")" 5
expect_eq "the handler ran once" "$(cat "$NODES/it1/handler.log")" changed
check "the user exists in its group" bash -c "id -nG $USER_NAME | grep -qw ${USER_NAME}g"
expect_eq "the download is the web page's style sheet" "$(cmp -s "$NODES/it2/page.css" "$REPO/web/style.css" && echo same)" same

check "run list" ctl run list --node it1
expect_output "the configure run is listed as ok" "configure"
RUN="$(sqlite3 "$DB" "select id from runs where node='it1' and kind='configure' order by id desc limit 1")"
check "run show" ctl run show "$RUN"
expect_output "run show lists the tasks with file:line" "itest.yml:"
expect_output "and the health check" "marker-present"
expect_eq "every task recorded" "$(sqlite3 "$DB" "select count(*) from run_tasks where run_id=$RUN")" 18
# it1 and it2 share this machine: the group and the user are made by it1
# only, so count over both (8 changed each, 2 on it1).
expect_eq "changed counted" "$(sqlite3 "$DB" "select sum(changed) from runs where kind='configure' and node in ('it1', 'it2')")" 18

echo "== secrets: made once on first use, on the nodes, nowhere else"
SECRET_FILE="$WORK/it/data/secrets/itest_key"
expect_eq "the secret was made 0600 in a 0700 directory" \
  "$(stat -c %a "$SECRET_FILE") $(stat -c %a "$(dirname "$SECRET_FILE")")" "600 700"
SECRET="$(cat "$SECRET_FILE")"
expect_eq "it is 48 random bytes, base64" "$(printf %s "$SECRET" | base64 -d | wc -c)" 48
expect_eq "both nodes got the same value" "$(cat "$NODES/it1/secret")|$(cat "$NODES/it2/secret")" "$SECRET|$SECRET"
expect_eq "the task that uses it records no output (no_log)" \
  "$(sqlite3 "$DB" "select msg from run_tasks where run_id=$RUN and task like 'a secret from the store%'")" \
  "(output hidden: no_log)"
expect_eq "the task that printed it recorded it redacted" \
  "$(sqlite3 "$DB" "select stdout from run_tasks where run_id=$RUN and task like 'a command that prints it%'")" "********"
check "secret list" ctl secret list
expect_output "lists itest_key as stored, declared by itest" "itest_key"
for path in /api/v1/secrets /api/v1/runs "/api/v1/runs/$RUN" "/api/v1/events?limit=100000" \
  /api/v1/profiles/itest /api/v1/nodes/it1 /api/v1/nodes /api/v1/export/ansible-inventory; do
  curl -sf "${AUTH[@]}" "$URL$path" >"$WORK/answer"
  if grep -qF "$SECRET" "$WORK/answer"; then fail "GET $path carries the secret"; else pass "GET $path: no secret"; fi
done
ctl run logs "$RUN" >"$WORK/logs" 2>&1
for f in "$WORK/logs" "$WORK/provisiond-it.log"; do
  if grep -qF "$SECRET" "$f"; then fail "$(basename "$f") carries the secret"; else pass "$(basename "$f"): no secret"; fi
done
if sqlite3 "$DB" .dump | grep -qF "$SECRET"; then fail "the database holds the secret"; else pass "the database does not hold it"; fi
printf 'the-operators-own-value' | ctl secret set itest_key >/dev/null
expect_eq "secret set replaces the value" "$(cat "$SECRET_FILE")" "the-operators-own-value"
printf '%s\n' "$SECRET" | ctl secret set itest_key >/dev/null
check "run logs" ctl run logs "$RUN"
expect_output "logs have the tasks' output" "stdout| 1"

echo "== applying the same version again runs nothing"
before="$(runs_of it1)"
check "apply again" ctl profile apply itest --yes
expect_output "says it is done" "configure: already done"
expect_eq "no new run on it1" "$(runs_of it1)" "$before"

echo "== an applied profile is a snapshot: an edit waits for the next apply; rollback"
# configured_runs NODE: finished configure runs of NODE.
configured_runs() {
  sqlite3 "$DB" "select count(*) from runs where node = '$1' and kind = 'configure' and status != 'running'"
}
# reconfigured NODE N: a configure run beyond the first N has finished.
reconfigured() { [ "$(configured_runs "$1")" -gt "$2" ]; }
FIRST="$(sqlite3 "$DB" "select sha256 from applied_profiles order by id desc limit 1")"
cp "$NODES/it1/node.conf" "$WORK/node.conf.first"
cp "$WORK/playbooks/templates/node.conf.j2" "$WORK/node.conf.j2.first"
printf '# edited after the apply\n' >>"$WORK/playbooks/templates/node.conf.j2"
n="$(configured_runs it1)"
check "configure it1 again by hand" curl -sf -X POST -H "Authorization: Bearer $TOKEN" \
  -d '{"force": true}' "$URL/api/v1/nodes/it1/configure"
wait_for 120 "it1's forced configure run ends" reconfigured it1 "$n"
check "it1's file is what was applied, not the edit" cmp "$WORK/node.conf.first" "$NODES/it1/node.conf"
check "plan after the edit" ctl profile plan itest
expect_output "the plan names the edited template" "playbooks/templates/node.conf.j2"
n="$(configured_runs it1)"
check "apply the edit" ctl profile apply itest --yes
SECOND="$(sqlite3 "$DB" "select sha256 from applied_profiles order by id desc limit 1")"
check "a new content hash" test "$SECOND" != "$FIRST"
wait_for 120 "it1 is configured with the new snapshot" reconfigured it1 "$n"
check "it1's file has the edit" grep -q '^# edited after the apply$' "$NODES/it1/node.conf"
n="$(configured_runs it1)"
check "roll back to the first snapshot" ctl profile apply "itest@${FIRST:0:12}" --yes
wait_for 120 "it1 is configured with the first snapshot again" reconfigured it1 "$n"
check "it1's file is the first one, byte for byte" cmp "$WORK/node.conf.first" "$NODES/it1/node.conf"
expect_eq "the applied hash is the first one" \
  "$(sqlite3 "$DB" "select sha256 from applied_profiles order by id desc limit 1")" "$FIRST"
check "the snapshot directory is provisiond's alone" \
  test "$(stat -c %a "$DATA/data/snapshots")" = 700
cp "$WORK/node.conf.j2.first" "$WORK/playbooks/templates/node.conf.j2"

echo "== a second run of the playbook changes nothing"
check "playbook run on it1" ctl playbook run "$WORK/playbooks/itest.yml" it1 \
  -e base="$NODES" -e test_user="$USER_NAME" -e status_url="$URL/web/style.css" -e itest_secret="$SECRET"
expect_output "recap: nothing changed" "changed=0"
RUN2="$(sqlite3 "$DB" "select id from runs where node='it1' and kind='playbook' order by id desc limit 1")"
# get_url does not fetch again once dest exists (force: false), as in Ansible.
expect_eq "no task changed" \
  "$(sqlite3 "$DB" "select count(*) from run_tasks where run_id=$RUN2 and status='changed'")" 0
expect_eq "every task ran" \
  "$(sqlite3 "$DB" "select count(*) from run_tasks where run_id=$RUN2 and status='ok'")" 15
expect_eq "the handler did not run again" "$(cat "$NODES/it1/handler.log")" changed

echo "== a changed host key is refused, and says so"
check "it3 phones home with another node's key" hello it3 "$(key_of t1)"
check "it3 ends" bash -c "! '$PROVISIONCTL' wait it3 --timeout 60"
expect_eq "it3 failed" "$(sqlite3 "$DB" "select state from nodes where hostname='it3'")" failed
expect_output "the wait names the host key" "host key"
check "events name it" bash -c "'$PROVISIONCTL' events --node it3 | grep -q 'host key changed'"

echo "== an unreachable node fails alone"
check "it5 phones home" hello it5 "$(key_of t4)"
check "it5 ends" bash -c "! '$PROVISIONCTL' wait it5 --timeout 60"
expect_eq "it5 failed" "$(sqlite3 "$DB" "select state from nodes where hostname='it5'")" failed
expect_eq "it5's run is unreachable" \
  "$(sqlite3 "$DB" "select status from runs where node='it5' order by id desc limit 1")" unreachable
# configure.connect_retry: 3 -> tries after 1 s and 2 s more (a node's sshd may still be starting).
check "it5 was tried again, backing off" bash -c "grep -q 'it5: .*trying again in 1 s' '$WORK/provisiond-it.log' &&
  grep -q 'it5: .*trying again in 2 s' '$WORK/provisiond-it.log'"
expect_eq "it1 still ready" "$(sqlite3 "$DB" "select state from nodes where hostname='it1'")" ready

echo "== cmd: all at once, folded output, exit code"
check "cmd on it1,it2" ctl cmd 'it[1-2]' -- echo hello
expect_output "identical outputs folded under one hostlist" "it[1-2] (2)"
expect_output "2 ok" "2/2 node(s) ok"
check "cmd as another user" ctl cmd 'it[1-2]' --user nobody -- id -un
expect_output "runs as nobody" "nobody"
expect_exit 1 "cmd with an unreachable node exits 1" ctl cmd it1,it5 -- true
expect_output "names the failed node" "failed: it5"
expect_exit 1 "a failing command exits 1" ctl cmd it1 -- 'exit 7'
expect_output "with its exit code" "exit code 7"

echo "== node check: the health checks now, all of them, kept on the node and its row"
# (The targets share this machine's files: every node writes the same health log.)
check "node check it1,it2 passes" ctl node check 'it[1-2]'
expect_output "one line per node" "it2: ok (2/2 checks passed)"
expect_eq "the node keeps the status" "$(cat "$NODES/health.log.status")" ok
check "and a line per check" grep -q " it1 not-tripped ok\$" "$NODES/health.log"
touch "$NODES/tripped"
expect_exit 1 "a failing check exits 1" ctl node check it1
expect_output "naming the check" "it1: failed (1/2 checks passed): not-tripped: exit code 1"
expect_eq "the status names it" "$(cat "$NODES/health.log.status")" "failed: not-tripped"
expect_eq "the profile's health_hook got the outcome" "$(cat "$NODES/hook.it1")" "failed|not-tripped: exit code 1"
check "node show has it" bash -c "'$PROVISIONCTL' node show it1 | grep -q 'health.*failed; marker-present ok; not-tripped failed'"
expect_eq "its state stays" "$(sqlite3 "$DB" "select state from nodes where hostname='it1'")" ready
check "a run of kind health" bash -c "'$PROVISIONCTL' run list --node it1 | grep -q health"
rm -f "$NODES/tripped"
check "node check it1 passes again" ctl node check it1
expect_eq "and the hook hears it" "$(cat "$NODES/hook.it1")" "ok|"
check "what the hook did is a health event" bash -c "'$PROVISIONCTL' events --node it1 | grep -q 'hook: done'"
expect_exit 1 "an unreachable node is its own failure" ctl node check 'it1,it5'
expect_output "it1 passes" "it1: ok (2/2 checks passed)"
expect_output "it5 is unreachable" "it5: unreachable"
expect_exit 1 "an unknown node is refused, nothing runs" ctl node check it1,nosuch
expect_output "naming it" "nosuch"

echo "== gather: one file from every node into DIR/<node>/, one node's failure its own"
# The targets share this machine's files: every node has the same one.
head -c 300000 /dev/urandom >"$WORK/gather-src.bin"
chmod 0644 "$WORK/gather-src.bin"
expect_exit 1 "gather with an unreachable node exits 1" \
  ctl gather 'it[1-2],it5' "$WORK/gather-src.bin" "$WORK/gathered"
expect_output "names the unreachable node" "it5: unreachable"
check "it1's copy is the file, byte for byte" cmp "$WORK/gather-src.bin" "$WORK/gathered/it1/gather-src.bin"
check "it2's too" cmp "$WORK/gather-src.bin" "$WORK/gathered/it2/gather-src.bin"
check "it5 has no folder" test ! -e "$WORK/gathered/it5"
expect_eq "copies are 0600" "$(stat -c %a "$WORK/gathered/it1/gather-src.bin")" 600
expect_exit 1 "a missing file is each node's error" ctl gather 'it[1-2]' /nonexistent/x "$WORK/gathered2"
expect_output "which file, per node" "it2: failed: no such file: /nonexistent/x"
expect_exit 1 "a relative path is refused" ctl gather it1 etc/hostname "$WORK/gathered3"
expect_output "saying so" "must be absolute"
expect_exit 1 "as another user, a file it may not reach" \
  ctl gather it1 "$WORK/it/data/ssh/id_ed25519" "$WORK/gathered4" --user nobody
expect_output "is that node's error" "it1: failed: cannot reach $WORK/it/data/ssh/id_ed25519 as nobody"
expect_exit 1 "or read" ctl gather it1 /etc/shadow "$WORK/gathered4" --user nobody
expect_output "says so" "it1: failed: cannot read /etc/shadow as nobody"
check "nothing saved" test ! -e "$WORK/gathered4"

echo "== first contact pins the host key of a node that never phoned home"
expect_eq "it4 has no key" "$(sqlite3 "$DB" "select host_key from nodes where hostname='it4'")" ""
check "cmd on it4" ctl cmd it4 -- true
expect_eq "it4's key is pinned" "$(sqlite3 "$DB" "select host_key from nodes where hostname='it4'" | cut -d' ' -f1-2)" "$(key_of t4)"
check "the event says so" bash -c "'$PROVISIONCTL' events --node it4 | grep -q 'pinned at first contact'"
check "node set --host-key replaces it" ctl node set it4 --host-key "$(key_of t1)"
expect_exit 1 "then the node is refused" ctl cmd it4 -- true
expect_output "because of its host key" "host key"
check "and set back" ctl node set it4 --host-key "$(key_of t4)"
check "works again" ctl cmd it4 -- true

echo "== an installed machine adopted over SSH: its key confirmed, its facts, both stages, no netboot"
check "enroll inst1 by address" ctl node add inst1 --mac 52:54:00:cc:00:10 --ip "$(addr_of t5)" --profile inst
expect_exit 2 "adopt without a terminal or --yes only shows the key" ctl node adopt inst1
expect_output "the key inst1 shows" "$(key_of t5)"
expect_output "and its fingerprint" "SHA256:"
expect_eq "nothing was stored" "$(sqlite3 "$DB" "select installed || ',' || coalesce(host_key, '') || ',' || state from nodes where hostname='inst1'")" "0,,enrolled"
expect_exit 1 "another key than the one it shows is refused" ctl node adopt inst1 --host-key "$(key_of t1)"
expect_eq "still not adopted" "$(sqlite3 "$DB" "select installed from nodes where hostname='inst1'")" 0
expect_eq "a password without the confirmed key is refused" "$(curl -s -o /dev/null -w '%{http_code}' -X POST \
  -H "Authorization: Bearer $TOKEN" -d '{"password":"secret-pw-1"}' "$URL/api/v1/nodes/inst1/adopt")" 400
check "refused: one line on stdin as the password, against a machine that takes none for root" bash -c \
  "! echo secret-pw-2 | '$PROVISIONCTL' node adopt inst1 --host-key '$(key_of t5)' --password"
check "the password is nowhere in the events or the database" bash -c \
  "! '$PROVISIONCTL' events --limit 100000 | grep -q secret-pw && ! grep -qa secret-pw '$DB'"
# The machine's own hosts file (here a stand-in: configure.installed_hosts), with a line of its own.
printf '127.0.0.1\tlocalhost\n10.1.2.3\tthe-owners-own\n' >"$NODES/hosts"
check "adopt with the key confirmed" ctl node adopt inst1 --host-key "$(key_of t5)"
expect_output "adopted" "inst1: adopted"
check "inst1 becomes ready" ctl wait inst1 --timeout 120
check "its hosts file keeps its own line" grep -qx "$(printf '10.1.2.3\tthe-owners-own')" "$NODES/hosts"
check "and lists the cluster's nodes in provisiond's block" bash -c "sed -n '/^# BEGIN provisiond/,/^# END provisiond/p' '$NODES/hosts' | grep -qx \"\$(printf '%s\tinst1' '$(addr_of t5)')\""
expect_eq "the image stage ran on it (as the image stage), then the node stage" "$(cat "$NODES/inst1-stages")" \
  "$(printf 'image provisiond_stage=image\nnode provisiond_stage=node')"
expect_eq "installed, its key pinned" "$(sqlite3 "$DB" "select installed || ',' || host_key from nodes where hostname='inst1'" | cut -d' ' -f1-2)" "1,$(key_of t5)"
check "its facts came from provision-facts run on it" bash -c "sqlite3 '$DB' \"select facts from nodes where hostname='inst1'\" | grep -q memory_bytes"
check "an event names the address and the key's fingerprint" bash -c "'$PROVISIONCTL' events --node inst1 | grep -q 'adopted over SSH at $(addr_of t5), host key SHA256:'"
expect_eq "no boot stage recorded" "$(sqlite3 "$DB" "select coalesce(stage, '') from nodes where hostname='inst1'")" ""
n="$(configured_runs inst1)"
check "configure inst1 again" curl -sf -X POST -H "Authorization: Bearer $TOKEN" -d '{"force": true}' \
  "$URL/api/v1/nodes/inst1/configure"
wait_for 120 "inst1's second configure run ends" reconfigured inst1 "$n"
expect_eq "its image stage, which ran already, is not run again: the node stage only" \
  "$(cat "$NODES/inst1-stages")" "$(printf 'image provisiond_stage=image\nnode provisiond_stage=node\nnode provisiond_stage=node')"
expect_eq "the key of what ran at image stage is kept on its row" \
  "$(sqlite3 "$DB" "select length(installed_baked) from nodes where hostname='inst1'")" 16
curl -s "$URL/boot/52-54-00-cc-00-10.ipxe" >"$WORK/inst1.ipxe"
check "if it netboots, it is told to boot its disk" grep -q "not netbooting" "$WORK/inst1.ipxe"

echo "== playbook run failures"
cat >"$WORK/playbooks/fail.yml" <<'EOF'
- hosts: all
  tasks:
    - name: breaks
      command: /bin/false
EOF
expect_exit 1 "a failing playbook exits 1" ctl playbook run "$WORK/playbooks/fail.yml" 'it[1-2]'
expect_output "recap names the task" "breaks"
cat >"$WORK/playbooks/bad.yml" <<'EOF'
- hosts: all
  tasks:
    - name: typo
      copyy:
        dest: /tmp/x
EOF
expect_exit 1 "an unknown module is refused before anything runs" ctl playbook run "$WORK/playbooks/bad.yml" it1
expect_output "with file:line" "bad.yml:4"
expect_exit 1 "a playbook outside playbooks_dir is refused" ctl playbook run /etc/hostname it1
expect_output "saying where playbooks come from" "playbooks_dir"
grep -qF -- "$(head -c 40 /etc/hostname)" "$WORK/out" && fail "the refusal repeats the file's content"

echo "== wait_for_peers: a node's playbooks wait until every node of its hostlist phoned home"
check "enroll pw1" ctl node add pw1 --mac 52:54:00:cc:01:01 --ip "$(addr_of t1)"
check "enroll pw2" ctl node add pw2 --mac 52:54:00:cc:01:02 --ip "$(addr_of t2)"
check "apply peers" ctl profile apply peers --yes
check "pw1 phones home" hello pw1 "$(key_of t1)"
waiting_event() {
  ctl events --node pw1 --limit 100 >"$WORK/pw-events" &&
    grep -q "other nodes to phone home: pw2" "$WORK/pw-events"
}
wait_for 30 "pw1 says it waits for pw2" waiting_event
expect_eq "pw1 is configuring, waiting" "$(sqlite3 "$DB" "select state from nodes where hostname='pw1'")" configuring
check "nothing ran on pw1 yet" test ! -e "$NODES/peers-pw1.txt"
check "pw2 phones home" hello pw2 "$(key_of t2)"
check "both become ready" ctl wait 'pw[1-2]' --timeout 120
expect_eq "pw1's playbook saw pw2 with its address and host key" "$(cat "$NODES/peers-pw1.txt")" \
  "$(printf 'pw1 %s True\npw2 %s True' "$(addr_of t1)" "$(addr_of t2)")"
check "and says so" bash -c "'$PROVISIONCTL' events --node pw1 | grep -q 'every node of profile peers has phoned home'"

echo "== exports"
check "hostfile" ctl export hostfile 'it[1-2]'
expect_eq "hostfile lists the names" "$(cat "$WORK/out")" "$(printf 'it1\nit2')"
check "hostfile-ip" ctl export hostfile-ip 'it[1-2]'
expect_eq "hostfile-ip lists the addresses" "$(cat "$WORK/out")" "$(printf '%s\n%s' "$(addr_of t1)" "$(addr_of t2)")"
ctl export ansible-inventory >"$WORK/inventory.yml"
check "ansible-inventory reads the export" ansible-inventory -i "$WORK/inventory.yml" --list
expect_output "with the addresses" "$(addr_of t1)"
check "slurm-nodes" ctl export slurm-nodes it1
expect_output "a NodeName line" "NodeName=it1 NodeAddr=$(addr_of t1)"

finish
