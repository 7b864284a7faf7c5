#!/usr/bin/env bash
# tests/lab/power_standins_selftest.sh: the lab's power stand-ins (plug.py,
# redfish.py, bmc.py) on 127.0.0.1, driven with curl and ipmitool against a
# fake power program (state in a file, its calls and LAB_BOOT_ONCE logged):
# every operation, wrong credentials, the boot overrides, a failing program.
# Then power.sh's status and LAB_BOOT_ONCE with lab.sh's VM functions stubbed
# (no namespace, no VM), alone and behind redfish.py and bmc.py. Needs
# Debian's python3 with python3-pyghmi, ipmitool, curl, openssl, ss; not root.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=lab-test.sh
source "$here/lab-test.sh" # say, fail (with dump), the ERR trap
py=/usr/bin/python3        # Debian's, which has pyghmi
work="$(mktemp -d "${TMPDIR:-/tmp}/power-standins.XXXXXX")"
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
dump() { lab_dump 20 "$work"/*.log "$work"/*.out "$work/calls" "$work"/labdir/*.log; }

node=n1 mac=52:54:00:00:00:01
echo 'plug S3cret' >"$work/plug.pw"
echo 'rf:S3cret' >"$work/redfish.pw"
echo 'ipmi-S3cret' >"$work/bmc.pw"
# The fake power program: PROG on|off|cycle|status HOSTNAME MAC. $work/fail
# makes it fail, $work/slow holds seconds it takes to switch.
cat >"$work/power" <<EOF
#!/usr/bin/env bash
set -euo pipefail
echo "\$1 \$2 \$3 \${LAB_BOOT_ONCE:-}" >>"$work/calls"
[ ! -e "$work/fail" ] || { echo "fake power failed" >&2; exit 1; }
case "\$1" in
  on | off | cycle) [ ! -e "$work/slow" ] || sleep "\$(cat "$work/slow")" ;;
esac
case "\$1" in
  on | cycle) echo on >"$work/\$2.state"; echo "\$2 \$1" ;;
  off) echo off >"$work/\$2.state"; echo "\$2 off" ;;
  status) cat "$work/\$2.state" 2>/dev/null || echo off ;;
  *) echo "fake power: no action \$1" >&2; exit 2 ;;
esac
EOF
chmod +x "$work/power"
: >"$work/calls"

expect() { # WHAT EXPECTED ACTUAL
  [ "$2" = "$3" ] || fail "$1: expected '$2', got '$3'"
}
last_call() { tail -n 1 "$work/calls"; }
calls() { wc -l <"$work/calls"; }
# free_port tcp|udp: an unused port in 20000-29999 (below the ephemeral range).
free_port() {
  local i port
  for ((i = 0; i < 50; i++)); do
    port=$((20000 + RANDOM % 10000))
    [ -z "$(ss -Hln"${1:0:1}" "sport = :$port")" ] && { echo "$port"; return; }
  done
  fail "no free $1 port"
}
# start NAME tcp|udp PORT CMD...: runs a stand-in, returns once it listens.
start() {
  local name="$1" proto="$2" port="$3" i
  shift 3
  "$@" >"$work/$name.out" 2>&1 &
  pids+=($!)
  for ((i = 0; i < 200; i++)); do
    [ -n "$(ss -Hln"${proto:0:1}" "src 127.0.0.1 and sport = :$port")" ] && return
    kill -0 "${pids[-1]}" 2>/dev/null || fail "$name exited"
    sleep 0.05
  done
  fail "$name does not listen on $proto port $port after 10 s"
}
# http ARGS...: curl, prints "STATUS BODY" ("STATUS" if no body); the body
# stays in $work/body.
http() {
  local status body
  status="$(curl -sS -o "$work/body" -w '%{http_code}' "$@")"
  body="$(cat "$work/body")"
  echo "$status${body:+ $body}"
}
# jget KEY/KEY/...: the value there in $work/body (JSON for lists, objects).
jget() {
  "$py" - "$work/body" "$1" <<'PY'
import json
import sys
value = json.load(open(sys.argv[1]))
for key in sys.argv[2].split('/'):
    value = value[int(key)] if isinstance(value, list) else value[key]
print(value if isinstance(value, str) else json.dumps(value))
PY
}

say "plug.py (Tasmota HTTP)"
port="$(free_port tcp)"
start plug tcp "$port" "$py" "$here/plug.py" --listen 127.0.0.1 --port "$port" \
  --node "$node" --mac "$mac" --power "$work/power" \
  --password-file "$work/plug.pw" --log "$work/plug.log"
cm="http://127.0.0.1:$port/cm?user=admin&password=plug%20S3cret&cmnd"
need='{"WARNING":"Need user=<username>&password=<password>"}'
expect "no credentials" "401 $need" "$(http "http://127.0.0.1:$port/cm?cmnd=Power")"
expect "wrong password" "401 $need" "$(http "${cm/plug%20S3cret/plug}=Power%20On")"
expect "wrong user" "401 $need" "$(http "${cm/admin/root}=Power%20On")"
expect "no call without credentials" 0 "$(calls)"
expect "Power" '200 {"POWER":"OFF"}' "$(http "$cm=Power")"
expect "Power calls" "status $node $mac " "$(last_call)"
expect "Power On" '200 {"POWER":"ON"}' "$(http "$cm=Power%20On")"
expect "Power On calls" "on $node $mac " "$(last_call)"
expect "power1 off" '200 {"POWER1":"OFF"}' "$(http "$cm=power1+off")"
expect "power1 off calls" "off $node $mac " "$(last_call)"
expect "Power1 On" '200 {"POWER1":"ON"}' "$(http "$cm=Power1%20On")"
expect "Power Toggle (on)" '200 {"POWER":"OFF"}' "$(http "$cm=Power%20Toggle")"
expect "Power TOGGLE (off)" '200 {"POWER":"ON"}' "$(http "$cm=Power%20TOGGLE")"
expect "Power 0" '200 {"POWER":"OFF"}' "$(http "$cm=Power%200")"
expect "Power1" '200 {"POWER1":"OFF"}' "$(http "$cm=Power1")"
expect "unknown command" '200 {"Command":"Unknown"}' "$(http "$cm=Status")"
expect "another path" "404 not found" "$(http "http://127.0.0.1:$port/")"
touch "$work/fail"
expect "failing program" "500 fake power failed" "$(http "$cm=Power%20On")"
rm "$work/fail"
expect "plug.log lines" 14 "$(wc -l <"$work/plug.log")"
! grep -q S3cret "$work/plug.log" || fail "plug.log has the password"

say "redfish.py (HTTPS)"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
  -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
  -keyout "$work/key.pem" -out "$work/cert.pem" 2>"$work/openssl.out"
: >"$work/calls" && rm -f "$work/$node.state"
# redfish LOG NODE PROGRAM [--allow ...]: a Redfish stand-in; sets url (its
# service root), system (NODE's path), sys_url and reset_url.
redfish() {
  local port
  port="$(free_port tcp)"
  start "$1" tcp "$port" "$py" "$here/redfish.py" --listen 127.0.0.1 \
    --port "$port" --cert "$work/cert.pem" --key "$work/key.pem" --user root \
    --password-file "$work/redfish.pw" --node "$2" --mac "$mac" \
    --power "$3" --log "$work/$1.log" "${@:4}"
  url="https://127.0.0.1:$port/redfish/v1"
  system="/redfish/v1/Systems/$2"
  sys_url="$url/Systems/$2"
  reset_url="$sys_url/Actions/ComputerSystem.Reset"
}
code() { "$@" | cut -d' ' -f1; } # the HTTP status of http's "STATUS BODY"
rf() { http --cacert "$work/cert.pem" "$@"; }
rfa() { rf --anyauth -u 'root:rf:S3cret' -H 'Content-Type: application/json' "$@"; }
rf_reset() { rfa -X POST -d "{\"ResetType\":\"$1\"}" "$reset_url"; }
rf_boot() {
  rfa -X PATCH -d "{\"Boot\":{\"BootSourceOverrideEnabled\":\"$1\",\"BootSourceOverrideTarget\":\"$2\"}}" "$sys_url"
}
rf_get() { rfa "$sys_url" >/dev/null && jget "$1"; } # KEY/...: the system's
rf_override() { echo "$(rf_get Boot/BootSourceOverrideEnabled)/$(jget Boot/BootSourceOverrideTarget)"; }
redfish redfish "$node" "$work/power"
for root in "$url/" "$url"; do
  rf "$root" >/dev/null
  expect "ServiceRoot $root" "#ServiceRoot.v1_5_0.ServiceRoot 1.6.0 RootService /redfish/v1/Systems" \
    "$(jget @odata.type) $(jget RedfishVersion) $(jget Id) $(jget Systems/@odata.id)"
done
expect "Systems without credentials" 401 "$(code rf "$url/Systems")"
expect "its error" Base.1.0.GeneralError "$(jget error/code)"
curl -sS --cacert "$work/cert.pem" -D "$work/headers" -o /dev/null "$url/Systems"
grep -qi '^WWW-Authenticate: Basic' "$work/headers" || fail "401 without WWW-Authenticate: Basic"
expect "wrong password" 401 "$(code rf -u root:rf "$url/Systems")"
expect "Systems" 200 "$(code rfa "$url/Systems")"
expect "its members" "1 $system" "$(jget Members@odata.count) $(jget Members/0/@odata.id)"
expect "the system" 200 "$(code rfa "$sys_url")"
expect "its fields" "#ComputerSystem.v1_13_0.ComputerSystem $node $node Off" \
  "$(jget @odata.type) $(jget Id) $(jget Name) $(jget PowerState)"
expect "its override" "Disabled/None" "$(rf_override)"
expect "its targets" '["None", "Pxe", "Hdd"]' \
  "$(jget Boot/BootSourceOverrideTarget@Redfish.AllowableValues)"
expect "its Reset" "$system/Actions/ComputerSystem.Reset" \
  "$(jget 'Actions/#ComputerSystem.Reset/target')"
expect "its ResetTypes" '["On", "ForceOff", "GracefulShutdown", "ForceRestart", "PowerCycle"]' \
  "$(jget 'Actions/#ComputerSystem.Reset/ResetType@Redfish.AllowableValues')"
expect "On" 204 "$(rf_reset On)"
expect "On calls" "on $node $mac " "$(last_call)"
expect "PowerState On" On "$(rf_get PowerState)"
expect "ForceOff" 204 "$(rf_reset ForceOff)"
expect "ForceOff calls" "off $node $mac " "$(last_call)"
expect "GracefulShutdown" 204 "$(rf_reset GracefulShutdown)"
expect "GracefulShutdown calls" "off $node $mac " "$(last_call)"
expect "ForceRestart" 204 "$(rf_reset ForceRestart)"
expect "ForceRestart calls" "cycle $node $mac " "$(last_call)"
expect "PowerCycle" 204 "$(rf_reset PowerCycle)"
expect "PowerCycle calls" "cycle $node $mac " "$(last_call)"
n="$(calls)"
expect "Nmi" 400 "$(code rf_reset Nmi)"
expect "no ResetType" 400 "$(code rfa -X POST -d '{}' "$reset_url")"
expect "a body that is no JSON" 400 "$(code rfa -X POST -d 'On' "$reset_url")"
expect "Reset without credentials" 401 "$(code rf -X POST -d '{"ResetType":"On"}' "$reset_url")"
expect "no call for refused resets" "$n" "$(calls)"
expect "PATCH Sometimes" 400 "$(code rf_boot Sometimes Pxe)"
expect "PATCH Floppy" 400 "$(code rf_boot Once Floppy)"
expect "PATCH another property" 400 "$(code rfa -X PATCH -d '{"AssetTag":"x"}' "$sys_url")"
expect "override unchanged" "Disabled/None" "$(rf_override)"
expect "PATCH Once/Pxe" 204 "$(rf_boot Once Pxe)"
expect "override Once/Pxe" "Once/Pxe" "$(rf_override)"
expect "ForceOff keeps it" 204 "$(rf_reset ForceOff)"
expect "override still Once/Pxe" "Once/Pxe" "$(rf_override)"
expect "On with Once/Pxe" 204 "$(rf_reset On)"
expect "On calls with LAB_BOOT_ONCE" "on $node $mac pxe" "$(last_call)"
expect "override used up" "Disabled/None" "$(rf_override)"
expect "PowerCycle after it" 204 "$(rf_reset PowerCycle)"
expect "PowerCycle calls without" "cycle $node $mac " "$(last_call)"
expect "PATCH Continuous/Pxe" 204 "$(rf_boot Continuous Pxe)"
for i in 1 2; do
  expect "ForceRestart $i with Continuous/Pxe" 204 "$(rf_reset ForceRestart)"
  expect "its call $i" "cycle $node $mac pxe" "$(last_call)"
done
expect "override kept" "Continuous/Pxe" "$(rf_override)"
expect "PATCH Once/Hdd" 204 "$(rf_boot Once Hdd)"
expect "PowerCycle with Once/Hdd" 204 "$(rf_reset PowerCycle)"
expect "its call" "cycle $node $mac " "$(last_call)"
expect "override used up" "Disabled/None" "$(rf_override)"
expect "another resource" 404 "$(code rfa "$url/Managers")"
expect "POST on Systems" 405 "$(code rfa -X POST -d '{}' "$url/Systems")"
touch "$work/fail"
expect "failing program" 500 "$(code rf_reset On)"
expect "its error" "on failed: fake power failed" "$(jget error/message)"
expect "the system with it" 500 "$(code rfa "$sys_url")"
rm "$work/fail"
! grep -q S3cret "$work/redfish.log" || fail "redfish.log has the password"
redfish redfish-allow "$node" "$work/power" --allow On,ForceOff,ForceRestart
expect "--allow ResetTypes" '["On", "ForceOff", "ForceRestart"]' \
  "$(rf_get 'Actions/#ComputerSystem.Reset/ResetType@Redfish.AllowableValues')"
expect "PowerCycle not allowed" 400 "$(code rf_reset PowerCycle)"
expect "ForceRestart allowed" 204 "$(rf_reset ForceRestart)"

say "bmc.py (IPMI, pyghmi)"
: >"$work/calls" && rm -f "$work/$node.state"
# bmc LOG NODE PROGRAM: an IPMI stand-in; sets ipmi_port.
bmc() {
  ipmi_port="$(free_port udp)"
  start "$1" udp "$ipmi_port" "$py" "$here/bmc.py" --listen 127.0.0.1 \
    --port "$ipmi_port" --user admin --password-file "$work/bmc.pw" \
    --node "$2" --mac "$mac" --power "$3" --log "$work/$1.log"
}
ipmi_pw=ipmi-S3cret
ipmi() { # ARGS...: ipmitool, the password $ipmi_pw in its environment
  IPMI_PASSWORD="$ipmi_pw" ipmitool -I lanplus -H 127.0.0.1 -p "$ipmi_port" -U admin -E "$@"
}
# The controls are carried out after the answer; a status waits for them.
control() { ipmi chassis power "$1" && ipmi chassis power status >/dev/null; }
selector() { ipmi chassis bootparam get 5 | sed -n 's/.*Boot Device Selector : //p'; }
switched() { tail -n 2 "$work/calls" | head -n 1; } # the call before the status
bmc bmc "$node" "$work/power"
expect "status" "Chassis Power is off" "$(ipmi chassis power status)"
expect "status calls" "status $node $mac " "$(last_call)"
expect "on" "Chassis Power Control: Up/On" "$(control on)"
expect "on calls" "on $node $mac " "$(switched)"
expect "status on" "Chassis Power is on" "$(ipmi chassis power status)"
expect "off" "Chassis Power Control: Down/Off" "$(control off)"
expect "off calls" "off $node $mac " "$(switched)"
expect "cycle" "Chassis Power Control: Cycle" "$(control cycle)"
expect "cycle calls" "cycle $node $mac " "$(switched)"
expect "reset" "Chassis Power Control: Reset" "$(control reset)"
expect "reset calls cycle" "cycle $node $mac " "$(switched)"
expect "soft" "Chassis Power Control: Soft" "$(control soft)"
expect "soft calls off" "off $node $mac " "$(switched)"
expect "no override" "No override" "$(selector)"
expect "bootdev pxe" "Set Boot Device to pxe" "$(ipmi chassis bootdev pxe)"
expect "override pxe" "Force PXE" "$(selector)"
control off >/dev/null
expect "off keeps it" "Force PXE" "$(selector)"
control on >/dev/null
expect "on with bootdev pxe" "on $node $mac pxe" "$(switched)"
expect "override used up" "No override" "$(selector)"
ipmi chassis bootdev pxe >/dev/null
control cycle >/dev/null
expect "cycle with bootdev pxe" "cycle $node $mac pxe" "$(switched)"
control cycle >/dev/null
expect "the next cycle without" "cycle $node $mac " "$(switched)"
ipmi chassis bootdev pxe >/dev/null
expect "bootdev none" "Set Boot Device to none" "$(ipmi chassis bootdev none)"
control reset >/dev/null
expect "reset after bootdev none" "cycle $node $mac " "$(switched)"
expect "cipher suite 3" "Chassis Power is on" "$(ipmi -C 3 chassis power status)"
n="$(calls)"
! ipmi_pw=wrong ipmi chassis power on >"$work/wrong.out" 2>&1 || fail "a wrong password switched"
! ipmi -C 17 chassis power on >"$work/c17.out" 2>&1 || fail "cipher suite 17 worked"
expect "no call for them" "$n" "$(calls)"
echo 2 >"$work/slow" # longer than ipmitool's 1 s before it resends
expect "a slow cycle" "Chassis Power Control: Cycle" "$(ipmi chassis power cycle)"
expect "status after it" "Chassis Power is on" "$(ipmi chassis power status)"
expect "the slow cycle ran once" 1 "$(tail -n +"$((n + 1))" "$work/calls" | grep -c '^cycle')"
rm "$work/slow"
touch "$work/fail"
! ipmi chassis power status >"$work/fail.out" 2>&1 || fail "status with a failing program"
rm "$work/fail"
! grep -q S3cret "$work/bmc.log" || fail "bmc.log has the password"

say "power.sh (lab.sh's VM functions stubbed)"
mkdir "$work/lab" "$work/labdir"
cp "$here/power.sh" "$work/lab/"
cat >"$work/lab/lab.sh" <<'EOF'
# A stub of lab.sh's VM functions: a VM runs while $LAB_DIR/NAME.running exists.
lab_vm_running() { [ -e "$LAB_DIR/$1.running" ]; }
lab_vm_start() {
  echo "start $* ${LAB_VM_EXTRA_ARGS[*]}" >>"$LAB_DIR/vm.log"
  touch "$LAB_DIR/$1.running"
}
lab_vm_stop() { echo "stop $*" >>"$LAB_DIR/vm.log"; rm -f "$LAB_DIR/$1.running"; }
EOF
export LAB_NS=stub LAB_DIR="$work/labdir"
printf 'vm2 uefi\nvm3 disk\n' >"$LAB_DIR/firmware"
lab_power() { "$work/lab/power.sh" "$@"; }
once='vm1: boot once from the network (LAB_BOOT_ONCE=pxe)'
expect "status off" off "$(lab_power status vm1 "$mac")"
LAB_BOOT_ONCE=pxe lab_power on vm1 "$mac" >/dev/null
expect "on, LAB_BOOT_ONCE=pxe (bios)" "start vm1 $mac bios -boot once=n" "$(tail -n 1 "$LAB_DIR/vm.log")"
expect "power.log" "$once" "$(tail -n 1 "$LAB_DIR/power.log")"
expect "status on" on "$(lab_power status vm1 "$mac")"
LAB_BOOT_ONCE=pxe lab_power on vm1 "$mac" >/dev/null
expect "on again starts nothing" 1 "$(grep -c start "$LAB_DIR/vm.log")"
lab_power cycle vm1 "$mac" >/dev/null
expect "cycle without it" "start vm1 $mac bios " "$(tail -n 1 "$LAB_DIR/vm.log")"
LAB_BOOT_ONCE=pxe lab_power cycle vm1 "$mac" >/dev/null
expect "cycle with it" "start vm1 $mac bios -boot once=n" "$(tail -n 1 "$LAB_DIR/vm.log")"
lab_power off vm1 "$mac" >/dev/null
expect "status off again" off "$(lab_power status vm1 "$mac")"
LAB_BOOT_ONCE=pxe lab_power on vm2 "$mac" >/dev/null
expect "uefi: no QEMU option" "start vm2 $mac uefi " "$(tail -n 1 "$LAB_DIR/vm.log")"
expect "uefi: power.log" "${once/vm1/vm2}" "$(tail -n 1 "$LAB_DIR/power.log")"
LAB_BOOT_ONCE=pxe lab_power on vm3 "$mac" >/dev/null
expect "disk: power.log" "vm3: LAB_BOOT_ONCE=pxe ignored: a disk machine never netboots" \
  "$(tail -n 1 "$LAB_DIR/power.log")"
expect "usage" "usage: power.sh on|off|cycle|status HOSTNAME MAC" "$(lab_power status 2>&1 || true)"

say "power.sh behind redfish.py and bmc.py"
redfish redfish-lab vm4 "$work/lab/power.sh"
expect "Once/Pxe" 204 "$(rf_boot Once Pxe)"
expect "On" 204 "$(rf_reset On)"
expect "its VM" "start vm4 $mac bios -boot once=n" "$(tail -n 1 "$LAB_DIR/vm.log")"
expect "PowerState" On "$(rf_get PowerState)"
bmc bmc-lab vm5 "$work/lab/power.sh"
ipmi chassis bootdev pxe >/dev/null
expect "cycle" "Chassis Power Control: Cycle" "$(control cycle)"
expect "its VM" "start vm5 $mac bios -boot once=n" "$(tail -n 1 "$LAB_DIR/vm.log")"
expect "status" "Chassis Power is on" "$(ipmi chassis power status)"
control off >/dev/null
expect "status off" "Chassis Power is off" "$(ipmi chassis power status)"
say "all passed"
