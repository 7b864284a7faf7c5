#!/usr/bin/env bash
# The shipped playbooks are Ansible too: every playbooks/*.yml passes
# `ansible-playbook --syntax-check` against an inventory shaped like the one
# `provisionctl export ansible-inventory` writes (ansible_host and
# provisiond_facts per node), and every template under playbooks/templates
# renders under Ansible's own Jinja with that inventory into the files the
# nodes would get (checked line by line). Offline: Ansible's config, home and
# temp dirs are in a temp dir, nothing is contacted (connection local, and
# the template module writes only into the temp dir).
# Usage: playbook_syntax_test.sh [REPO_DIR]
set -euo pipefail

REPO="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
PLAYBOOKS="$REPO/playbooks"
command -v ansible-playbook >/dev/null || {
  echo "FAIL: ansible-playbook not found (Debian package ansible, see tests/packages.txt)" >&2
  exit 1
}

WORK="$(mktemp -d "${TMPDIR:-/tmp}/provision-playbooks.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
export HOME="$WORK/home" ANSIBLE_HOME="$WORK/home/.ansible"
export ANSIBLE_CONFIG="$WORK/ansible.cfg"
export ANSIBLE_LOCAL_TEMP="$WORK/tmp" ANSIBLE_REMOTE_TEMP="$WORK/remote-tmp"
export ANSIBLE_RETRY_FILES_ENABLED=0 ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0
export ANSIBLE_GATHERING=explicit ANSIBLE_HOST_KEY_CHECKING=0 ANSIBLE_STDOUT_CALLBACK=default
export ANSIBLE_COLLECTIONS_PATH="$WORK/collections" ANSIBLE_ROLES_PATH="$WORK/roles"
mkdir -p "$HOME" "$ANSIBLE_LOCAL_TEMP" "$ANSIBLE_REMOTE_TEMP"
printf '[defaults]\ninventory = %s/inventory.yml\n' "$WORK" >"$ANSIBLE_CONFIG"

FAILURES=0
PASSED=0
fail() {
  echo "FAIL: $*" >&2
  FAILURES=$((FAILURES + 1))
}
pass() {
  echo "ok: $*"
  PASSED=$((PASSED + 1))
}

# Three nodes as provisiond exports them: node0 with an Intel Arc and an
# NVIDIA GPU it could not name (no PCI ID database on it), node1 with
# two NVIDIA GPUs (a VGA one and a 3D controller) plus an audio function,
# node2 with one; each with its phone-home facts and host key.
node() { # name ip pci-json
  cat <<EOF
    $1:
      ansible_host: $2
      ansible_connection: local
      ansible_python_interpreter: $(command -v python3)
      provisiond_facts:
        cpu: {model: "Test CPU", threads: 8, cores: 4}
        memory_bytes: 17179869184
        kernel: 6.1.0-test-amd64
        hostname: $1
        image: lab@test
        os: "Debian GNU/Linux 12 (bookworm)"
        ssh_host_key: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI$1key root@$1"
        nics: []
        disks: []
        pci: $3
EOF
}
{
  echo "all:"
  echo "  hosts:"
  node node0 10.0.0.1 '[{slot: "0000:00:02.0", vendor_id: "8086", device_id: "56a0", class: "0300", vendor: "Intel Corporation", device: "DG2 [Arc A770]", driver: ""}, {slot: "0000:05:00.0", vendor_id: "10de", device_id: "2330", class: "0302", vendor: "", device: "", driver: "nvidia"}]'
  node node1 10.0.0.2 '[{slot: "0000:01:00.0", vendor_id: "10de", device_id: "2b85", class: "0300", vendor: "NVIDIA Corporation", device: "GB202 [GeForce RTX 5090]", driver: ""}, {slot: "0000:01:00.1", vendor_id: "10de", device_id: "22e8", class: "0403", vendor: "NVIDIA Corporation", device: "audio", driver: ""}, {slot: "0000:02:00.0", vendor_id: "10de", device_id: "2330", class: "0302", vendor: "NVIDIA Corporation", device: "GH100 [H100]", driver: ""}]'
  node node2 10.0.0.3 '[{slot: "0000:01:00.0", vendor_id: "10de", device_id: "2f04", class: "0300", vendor: "NVIDIA Corporation", device: "GB205 [GeForce RTX 5070]", driver: ""}]'
} >"$WORK/inventory.yml"

# ---------------------------------------------------------------- syntax of every playbook
shopt -s nullglob
books=("$PLAYBOOKS"/*.yml)
[ ${#books[@]} -gt 0 ] || fail "no playbooks in $PLAYBOOKS"
for book in "${books[@]}"; do
  name="$(basename "$book")"
  if ansible-playbook -i "$WORK/inventory.yml" --syntax-check "$book" >"$WORK/out" 2>&1; then
    pass "$name passes ansible-playbook --syntax-check"
  else
    fail "$name fails ansible-playbook --syntax-check: $(tail -n 20 "$WORK/out")"
  fi
  # Each playbook says what it does, which seed asks for it and its check.
  if head -n 40 "$book" | grep '^# Check' >/dev/null && head -n 40 "$book" | grep -i '^# .*seed' >/dev/null; then
    pass "$name has its header (seed, check)"
  else
    fail "$name: its header comment must name the seed and say '# Check: ...'"
  fi
done

# ---------------------------------------------------------------- templates under Ansible's Jinja
# The facts the playbooks compute with set_fact before they render these
# templates are given as they would be: slurm_gpus is "node=x..." per node.
cat >"$WORK/render.yml" <<EOF
- name: Render the shipped templates
  hosts: all
  gather_facts: false
  vars:
    out: "$WORK/out-{{ inventory_hostname }}"
    slurm_ctl: node0
    slurm_gpus: " node0= node1=xx node2=x"
    vllm_head_node: node0
    compute_user: compute
  tasks:
    - ansible.builtin.file:
        path: "{{ out }}"
        state: directory
    - ansible.builtin.template:
        src: "$PLAYBOOKS/templates/{{ item }}"
        dest: "{{ out }}/{{ item | regex_replace('\\\\.j2\$', '') }}"
      loop:
$(cd "$PLAYBOOKS/templates" && for t in *.j2; do echo "        - $t"; done)
EOF
if ansible-playbook -i "$WORK/inventory.yml" "$WORK/render.yml" >"$WORK/out" 2>&1; then
  pass "every template renders under Ansible"
else
  fail "templates do not render under Ansible: $(grep -E 'FAILED|fatal|ERROR|msg' "$WORK/out" | head -n 20)"
fi

# expect_file NODE FILE EXPECTED: the rendered file is exactly EXPECTED.
expect_file() {
  local got
  got="$(cat "$WORK/out-$1/$2" 2>/dev/null)" || { fail "$2 was not rendered for $1"; return; }
  if [ "$got" == "$3" ]; then pass "$2 for $1"; else
    fail "$2 for $1: expected:
$3
got:
$got"
  fi
}
# expect_line NODE FILE LINE: the rendered file has LINE.
expect_line() {
  if grep -qxF -- "$3" "$WORK/out-$1/$2" 2>/dev/null; then pass "$2 for $1 has '$3'"; else
    fail "$2 for $1 lacks the line '$3': $(cat "$WORK/out-$1/$2" 2>/dev/null)"
  fi
}
# expect_no_line NODE FILE REGEX: no line of the rendered file matches.
expect_no_line() {
  if grep -qE -- "$3" "$WORK/out-$1/$2" 2>/dev/null; then
    fail "$2 for $1 has a line matching /$3/: $(cat "$WORK/out-$1/$2")"
  else pass "$2 for $1 has no /$3/"; fi
}

expect_file node1 hostfile "node0
node1
node2"
expect_file node1 hostfile-ip "10.0.0.1
10.0.0.2
10.0.0.3"
expect_line node2 ssh_known_hosts "node0,10.0.0.1 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAInode0key"
expect_line node2 ssh_known_hosts "node2,10.0.0.3 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAInode2key"
expect_line node0 slurm.conf "SlurmctldHost=node0(10.0.0.1)"
expect_line node0 slurm.conf "NodeName=node0 NodeAddr=10.0.0.1 CPUs=8 RealMemory=15564 Gres=gpu:arc_a770:1,gpu:10de_2330:1 State=UNKNOWN"
expect_line node0 slurm.conf "NodeName=node1 NodeAddr=10.0.0.2 CPUs=8 RealMemory=15564 Gres=gpu:rtx_5090:1,gpu:h100:1 State=UNKNOWN"
expect_line node0 slurm.conf "NodeName=node2 NodeAddr=10.0.0.3 CPUs=8 RealMemory=15564 Gres=gpu:rtx_5070:1 State=UNKNOWN"
expect_line node0 slurm.conf "GresTypes=gpu"
expect_line node0 gres.conf "NodeName=node0 Name=gpu Type=arc_a770 File=/dev/dri/by-path/pci-0000:00:02.0-render"
expect_line node0 gres.conf "NodeName=node0 Name=gpu Type=10de_2330 File=/dev/nvidia0"
expect_line node0 gres.conf "NodeName=node1 Name=gpu Type=rtx_5090 File=/dev/nvidia0"
expect_line node0 gres.conf "NodeName=node1 Name=gpu Type=h100 File=/dev/nvidia1"
expect_line node0 gres.conf "NodeName=node2 Name=gpu Type=rtx_5070 File=/dev/nvidia0"
expect_no_line node0 gres.conf "22e8|audio"
if cmp -s "$WORK/out-node0/slurm.conf" "$WORK/out-node2/slurm.conf"; then
  pass "slurm.conf is the same on every node"
else
  fail "slurm.conf differs between node0 and node2"
fi
expect_line node0 vllm-ray.service "ExecStart=/opt/vllm/bin/ray start --block --head --node-ip-address=10.0.0.1 --port=6379"
expect_line node1 vllm-ray.service "ExecStart=/opt/vllm/bin/ray start --block --node-ip-address=10.0.0.2 --address=10.0.0.1:6379"
expect_line node0 vllm.service "ExecStart=/opt/vllm/bin/vllm serve mistralai/Mistral-Small-Instruct-2409 --host 0.0.0.0 --port 8000 --quantization bitsandbytes --pipeline-parallel-size 3 --tensor-parallel-size 1 --max-model-len 8192 --distributed-executor-backend ray "
expect_line node0 provisiond-lab-heartbeat.service "ExecStart=/bin/sh -c 'while :; do date +%%s > /run/provisiond-lab-heartbeat; sleep \"\$INTERVAL\"; done'"
expect_line node1 provisiond-lab.conf "cpu_threads=8"
expect_line node1 provisiond-lab.conf "nodes=node0,node1,node2"

echo "$PASSED passed, $FAILURES failed"
[ "$FAILURES" -eq 0 ]
