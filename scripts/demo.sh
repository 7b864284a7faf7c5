#!/usr/bin/env bash
# The main job, end to end: installs what is needed, builds provisiond, builds
# the lab image (once per machine), starts a private lab network (a network
# namespace: nothing touches this machine's own interfaces) with provisiond,
# dnsmasq, the NFS server and the lab's apt mirror, enrolls two virtual
# machines, applies the lab profile, powers them on, and shows them netboot,
# phone home with their facts and get configured over SSH by the profile's
# playbooks and health checks to `ready`. Then it keeps serving, with the web
# page and the API on this machine's loopback (http://127.0.0.1:8080), until
# Ctrl-C tears everything down.
# With --slurm: seed 003's cluster instead: three machines slurm0-slurm2 with
# the lab-slurm profile (Slurm, MUNGE, PyTorch baked into the lab image); once they are
# ready it shows sinfo and a three-node srun, and runs a small PyTorch DDP
# training job over torchrun on all three.
# Usage: scripts/demo.sh [--no-install] [--once] [--slurm]
#   (root; --once: stop when the nodes are ready and shown)
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$(pwd)"
install=1 once=0 slurm=0
for arg in "$@"; do
  case "$arg" in
    --no-install) install=0 ;;
    --once) once=1 ;;
    --slurm) slurm=1 ;;
    *) echo "usage: scripts/demo.sh [--no-install] [--once] [--slurm]" >&2; exit 2 ;;
  esac
done
if [ "$slurm" -eq 1 ]; then
  # PyTorch's import and a DDP job need more than the lab's default 512 MiB.
  image=lab profile=lab-slurm nodes='slurm[0-2]' names="slurm0 slurm1 slurm2"
  export LAB_VM_MEM="${LAB_VM_MEM:-1536}"
else
  image=lab profile=lab nodes='lab[0-1]' names="lab0 lab1"
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "the demo creates a network namespace and virtual machines: run it as root (sudo)" >&2
  exit 2
fi
T0="${EPOCHREALTIME//[!0-9]/}"
say() { printf '\n== [%4d s] %s\n' "$(((${EPOCHREALTIME//[!0-9]/} - T0) / 1000000))" "$*"; }
if [ "$install" -eq 1 ]; then
  # The demo's own packages (the build's and the lab's); --slurm's profile
  # runs one playbook on ansible-playbook, which comes with the tests' list.
  say "installing the packages the demo needs (Debian's apt; nothing when they are there)"
  if [ "$slurm" -eq 1 ]; then scripts/install-deps.sh; else scripts/install-deps.sh --demo; fi
fi
# Only the programs the demo runs: provisiond, provisionctl and the node
# tools every image and initrd gets (the tests, fuzz targets and benchmarks
# are the test command's).
say "building provisiond, provisionctl and the node tools (build/, optimized; ccache keeps what it compiled)"
# -O2 as the package's build (scripts/package.sh): GCC 12's -O3 warns falsely
# (-Wrestrict) in std::string, and the same flags share ccache's objects.
scripts/build.sh build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" -- \
  provisiond provisionctl provision-facts provision-mount provision-fetch >/dev/null
BIN="$REPO/build/provisiond"
PORT="${DEMO_PORT:-8080}"

source tests/lab/lab.sh
source tests/lab/lab-image.sh
forward=""
stop_forward() { [ -z "$forward" ] || { kill "$forward" 2>/dev/null; wait "$forward" 2>/dev/null || true; }; }
trap stop_forward EXIT

say "$image image"
# The profile's image stage (its `bake:` playbooks: lab bakes the compute
# user, hello and the node exporter; lab-slurm Slurm, MUNGE and PyTorch) into
# a derived image of lab, made here over this machine's uplink (the lab
# network reaches no mirror), once per machine: the nodes then do only their
# own setup at each boot.
STORE="$(lab_image_store "$BIN/provisiond" "$BIN/provisionctl" "$REPO/profiles" "$image" "$profile")"
echo "$image image $(cat "$STORE/$image/current") and the $profile profile's derived image in $STORE"

say "private lab network"
lab_init demo
lab_start_repo
cat >"$LAB_DIR/provisiond.yaml" <<CONF
listen: 0.0.0.0:8080
data_dir: $LAB_DIR/data
profiles_dir: $REPO/profiles
playbooks_dir: $REPO/playbooks
images_dir: $REPO/images
pxe_dir: $REPO/pxe
image_store: $STORE
tools_dir: $BIN
interface: $LAB_BRIDGE
dhcp:
  range: 10.99.0.100-10.99.0.199
power:
  command: $REPO/tests/lab/power.sh
CONF
lab_spawn provisiond "$BIN/provisiond" --config "$LAB_DIR/provisiond.yaml"
for _ in $(seq 1 300); do
  [ -s "$LAB_DIR/data/provisiond.url" ] && break
  sleep 0.1
done
[ -s "$LAB_DIR/data/provisiond.url" ] || { cat "$LAB_DIR/provisiond.log"; exit 1; }
# provisionctl runs in the lab's namespace: the API over plain HTTP answers loopback only.
export PROVISIOND_URL="http://127.0.0.1:8080"
export PROVISIOND_TOKEN="$(awk '!/^#/ && NF {print $1; exit}' "$LAB_DIR/data/tokens")"
ctl() { echo "\$ provisionctl $*"; lab_exec "$BIN/provisionctl" "$@"; }
# provisiond's API on this machine's loopback, forwarded into the namespace.
socat "TCP-LISTEN:$PORT,bind=127.0.0.1,fork,reuseaddr" \
  "EXEC:ip netns exec $LAB_NS socat STDIO TCP\\:127.0.0.1\\:8080" 2>/dev/null &
forward=$!

ctl preflight
ctl image verify "$image"
say "enroll the nodes ($nodes), apply the $profile profile, power them on"
i=0
for name in $names; do
  ctl node add "$name" --mac "52:54:00:de:00:1$i" --power command
  i=$((i + 1))
done
ctl profile apply "$profile" --yes
ctl node power on "$nodes"

say "waiting for them to netboot, phone home and be configured to ready (TCG: a few minutes)"
t0=$SECONDS
if ! ctl wait "$nodes" --state ready --timeout 1500; then
  for name in $names; do ctl node why "$name" || true; done
  ctl run list || true
  exit 1
fi
echo "ready $((SECONDS - t0)) s after power-on"
for name in $names; do
  echo "$name: ready $(lab_hello_to_ready "$BIN/provisionctl" "$name") s after it phoned home"
done
ctl node list
ctl node why "${names%% *}"
ctl run list
if [ "$slurm" -eq 1 ]; then
  say "Slurm: three nodes, a job on all three, and a PyTorch DDP job over torchrun on all three"
  ctl cmd slurm0 --user compute -- sinfo -N
  ctl cmd slurm0 --user compute -- srun -N3 hostname
  ctl cmd slurm0 --user compute -- torch-ddp-check 3
else
  say "the nodes are reachable over SSH as the compute user"
  ctl cmd "$nodes" --user compute -- 'id -un; hello'
fi
ctl export hostfile-ip

[ "$once" -eq 0 ] || exit 0
say "the lab keeps running"
cat <<TEXT
The web page: http://127.0.0.1:$PORT/ asks for a token before it shows anything: paste the one
in $LAB_DIR/data/tokens (an admin token: it can also power-cycle and apply). The API is on the
same address. In another terminal:
  export PROVISIOND_URL=http://127.0.0.1:$PORT
  export PROVISIOND_TOKEN=\$(awk '!/^#/ && NF {print \$1; exit}' $LAB_DIR/data/tokens)
  $BIN/provisionctl node list
  $BIN/provisionctl events --follow
  $BIN/provisionctl cmd all -- uptime
Serial consoles: $LAB_DIR/<node>.serial ($names). Ctrl-C stops everything.
TEXT
while kill -0 "$(cat "$LAB_DIR/pids" | head -1)" 2>/dev/null; do sleep 5; done
