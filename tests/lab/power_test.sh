#!/usr/bin/env bash
# Lab test of the power drivers against real protocols: a QEMU machine in the
# lab network switched through labelled stand-ins that speak the protocol
# and drive the machine (tests/lab/power.sh underneath):
#   1. webhook: a Tasmota plug (plug.py, Tasmota's web commands, a web
#      password from the secrets store): status, on (the machine netboots:
#      its DHCP request is seen), cycle (a new QEMU process), off
#   2. a chain: off=ssh+webhook on a machine with no SSH: the ssh driver
#      fails, the plug switches it off, and the event and node show say so
#   3. ipmi: Debian's ipmitool against an IPMI BMC built on python3-pyghmi
#      (bmc.py): status, on with the one-time network boot (chassis bootdev
#      pxe, seen on the machine's QEMU command line), cycle, off
#   4. redfish: a Redfish BMC over HTTPS (redfish.py, a self-signed
#      certificate): its key pinned on first use, on with the Pxe override,
#      status, cycle, off; the BMC showing another key is refused
#   5. the secrets (the plug's password, the BMC's) are in no event, no log
#      line, no API answer
# The machine is enrolled without a profile: its iPXE waits, so it stays on
# until it is switched off.
# Usage: power_test.sh PROVISIOND PROVISIONCTL   (root)
set -euo pipefail
PROVISIOND="$(realpath "$1")"
PROVISIONCTL="$(realpath "$2")"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
TIMEOUT="${LAB_TIMEOUT:-120}"
dump() {
  [ -n "${LAB_DIR:-}" ] || return 0
  lab_dump 30 "$LAB_DIR"/provisiond.log "$LAB_DIR"/power.log "$LAB_DIR"/plug.log \
    "$LAB_DIR"/bmc.log "$LAB_DIR"/redfish.log "$LAB_DIR"/*-requests.log
}
LAB_POLL_S=0.2
source "$HERE/lab-test.sh"

[ "$(id -u)" -eq 0 ] || fail "run as root (network namespaces, taps)"
for tool in ipmitool openssl; do
  command -v "$tool" >/dev/null || fail "missing $tool (tests/packages.txt)"
done
/usr/bin/python3 -c 'import pyghmi.ipmi.bmc' 2>/dev/null || fail "missing python3-pyghmi (tests/packages.txt)"
source "$HERE/lab.sh"
lab_init power

DATA="$LAB_DIR/data"
cat >"$LAB_DIR/provisiond.yaml" <<CONF
listen: 0.0.0.0:8080
data_dir: $DATA
profiles_dir: $REPO/profiles
playbooks_dir: $REPO/playbooks
pxe_dir: $REPO/pxe
interface: $LAB_BRIDGE
dhcp:
  mode: full
  range: 10.99.0.100-10.99.0.199
CONF
lab_spawn provisiond "$PROVISIOND" --config "$LAB_DIR/provisiond.yaml"
wait_for "provisiond's URL file" 20 test -s "$DATA/provisiond.url"
export PROVISIOND_URL="http://127.0.0.1:8080"
export PROVISIOND_TOKEN="$(awk '!/^#/ && NF {print $1; exit}' "$DATA/tokens")"
wait_for "dnsmasq to listen on DHCP" 20 lab_wait_port udp 67 1

PW0=52:54:00:97:00:10
ctl node add pw0 --mac "$PW0" >/dev/null
PLUG_PW="plug-$RANDOM-$RANDOM-pw" BMC_PW="bmc-$RANDOM-$RANDOM-pw"
printf '%s\n' "$PLUG_PW" >"$LAB_DIR/plug.pw"
printf '%s\n' "$BMC_PW" >"$LAB_DIR/bmc.pw"
chmod 600 "$LAB_DIR"/*.pw
ctl secret set plug-pw0 --from-file "$LAB_DIR/plug.pw" >/dev/null
ctl secret set bmc-pw0 --from-file "$LAB_DIR/bmc.pw" >/dev/null
standin() {  # NAME PROGRAM ARGS...: a stand-in in the lab, switching pw0
  local name="$1"
  shift
  lab_spawn "$name" /usr/bin/python3 "$HERE/$1" "${@:2}" --node pw0 --mac "$PW0" \
    --power "$HERE/power.sh" --log "$LAB_DIR/$name-requests.log"
  echo "$LAB_LAST_PID" >"$LAB_DIR/$name.standin-pid"
}
vm_pid() { cat "$LAB_DIR/pw0.pid" 2>/dev/null; }
power() {  # ACTION: prints provisionctl's line, fails the test when it fails
  local out
  out="$(ctl node power "$1" pw0 2>&1)" || fail "node power $1 pw0 failed: $out"
  echo "$out"
}
expect() {  # WHAT TEXT PATTERN
  grep -qE -- "$3" <<<"$2" || fail "$1: '$2' does not match '$3'"
}
off_now() { ! lab_vm_running pw0; }

# 1. The Tasmota plug.
standin plug plug.py --listen "$LAB_ADDR" --port 8081 --password-file "$LAB_DIR/plug.pw"
wait_for "the plug on port 8081" 20 lab_wait_port tcp 8081 1
ctl node set pw0 --power "driver=webhook,preset=tasmota,host=$LAB_ADDR:8081,secret=plug-pw0,cycle_delay=1" >/dev/null
expect "plug status" "$(power status)" "status \(off \(webhook \(tasmota at $LAB_ADDR:8081\)\)\)"
expect "plug on" "$(power on)" "switched on"
lab_vm_running pw0 || fail "pw0 is not running after the plug switched it on"
wait_for "pw0's DHCP request" "$TIMEOUT" has_event pw0 "dhcp:"
expect "plug status" "$(power status)" "status \(on "
before="$(vm_pid)"
expect "plug cycle" "$(power cycle)" "switched off, 1 s, on"
lab_vm_running pw0 && [ "$(vm_pid)" != "$before" ] || fail "pw0 was not started again by the cycle"
expect "plug off" "$(power off)" "switched off"
off_now || fail "pw0 still runs after the plug switched it off"
grep -q "Power On" "$LAB_DIR/plug-requests.log" || fail "the plug saw no Power On"
say "webhook (Tasmota plug stand-in): status off, on (pw0 asked for DHCP), status on, cycle (a new QEMU process), off"

# 2. A chain: a clean shutdown first, the plug when the node does not answer.
ctl node set pw0 --power "driver=webhook,preset=tasmota,host=$LAB_ADDR:8081,secret=plug-pw0,off=ssh+webhook" >/dev/null
ctl node show pw0 >"$LAB_DIR/show.out"
grep -q "power plan: *on: webhook; off: ssh, then webhook if ssh fails; cycle: webhook; status: webhook" "$LAB_DIR/show.out" ||
  { cat "$LAB_DIR/show.out"; fail "node show does not show the power plan"; }
power on >/dev/null
expect "chained off" "$(power off)" "ssh failed \(.*\), then webhook \(tasmota at $LAB_ADDR:8081\): switched off"
off_now || fail "pw0 still runs after the chain's plug"
has_event pw0 "off: ssh failed (.*), then webhook" || fail "the power event does not name the fallback"
say "chain off=ssh+webhook: ssh failed (no SSH on pw0), the plug switched it off; node show's power plan and the event say so"

# 3. IPMI: ipmitool against the pyghmi BMC.
standin bmc bmc.py --listen "$LAB_ADDR" --port 6230 --user admin --password-file "$LAB_DIR/bmc.pw"
wait_for "the IPMI BMC on port 6230" 20 lab_wait_port udp 6230 1
ctl node set pw0 --power "driver=ipmi,address=$LAB_ADDR,port=6230,user=admin,secret=bmc-pw0" >/dev/null
expect "ipmi status" "$(power status)" "status \(off \(ipmi: Chassis Power is off\)\)"
: >"$LAB_DIR/power.log.mark"
expect "ipmi on" "$(power on)" "next boot from the network, then Chassis Power Control: Up/On"
wait_for "pw0 to run after IPMI on" 30 lab_vm_running pw0
grep -q "pw0: boot once from the network" "$LAB_DIR/power.log" || fail "the BMC's bootdev pxe did not reach the machine"
grep -q "bootdev\|boot device\|network" "$LAB_DIR/bmc-requests.log" || fail "the BMC logged no boot device override"
expect "ipmi status" "$(power status)" "status \(on \(ipmi: Chassis Power is on\)\)"
before="$(vm_pid)"
expect "ipmi cycle" "$(power cycle)" "Chassis Power Control: Cycle"
wait_for "pw0 to run again after the IPMI cycle" 30 sh -c "[ \"\$(cat '$LAB_DIR/pw0.pid')\" != '$before' ] && kill -0 \"\$(cat '$LAB_DIR/pw0.pid')\""
expect "ipmi off" "$(power off)" "Chassis Power Control: Down/Off"
wait_for "pw0 to stop after IPMI off" 30 off_now
say "ipmi (ipmitool against the pyghmi BMC stand-in): status off, bootdev pxe + on, status on, cycle, off"

# 4. Redfish over HTTPS: the key pinned on first use.
redfish_cert() {
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=bmc-pw0" \
    -keyout "$LAB_DIR/redfish-$1.key" -out "$LAB_DIR/redfish-$1.pem" 2>/dev/null
}
redfish_cert a
standin redfish redfish.py --listen "$LAB_ADDR" --port 9443 --cert "$LAB_DIR/redfish-a.pem" \
  --key "$LAB_DIR/redfish-a.key" --user admin --password-file "$LAB_DIR/bmc.pw"
wait_for "the Redfish BMC on port 9443" 20 lab_wait_port tcp 9443 1
ctl node set pw0 --power "driver=redfish,address=$LAB_ADDR:9443,user=admin,secret=bmc-pw0" >/dev/null
on="$(power on)"
expect "redfish on" "$on" "pinned https://$LAB_ADDR:9443's key sha256//.* on first use; next boot from the network \(Pxe once\), then On"
pin="$DATA/power/redfish-${LAB_ADDR}_9443.pin"
[ -s "$pin" ] || fail "no pin file $pin"
want="sha256//$(openssl x509 -in "$LAB_DIR/redfish-a.pem" -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64)"
[ "$(cat "$pin")" = "$want" ] || fail "pinned $(cat "$pin"), the BMC's key is $want"
wait_for "pw0 to run after Redfish On" 30 lab_vm_running pw0
[ "$(grep -c "pw0: boot once from the network" "$LAB_DIR/power.log")" -ge 2 ] || fail "the Redfish Pxe override did not reach the machine"
expect "redfish status" "$(power status)" "status \(on \(redfish: /redfish/v1/Systems/pw0 PowerState On\)\)"
before="$(vm_pid)"
expect "redfish cycle" "$(power cycle)" "Pxe once\), then PowerCycle"
wait_for "pw0 to run again after the Redfish cycle" 30 sh -c "[ \"\$(cat '$LAB_DIR/pw0.pid')\" != '$before' ] && kill -0 \"\$(cat '$LAB_DIR/pw0.pid')\""
expect "redfish off" "$(power off)" "redfish: ForceOff"
wait_for "pw0 to stop after Redfish ForceOff" 30 off_now
grep -q "PATCH" "$LAB_DIR/redfish-requests.log" || fail "the Redfish BMC saw no PATCH of its boot override"
# The same address with another key: refused before any credentials go.
kill "$(cat "$LAB_DIR/redfish.standin-pid")"
wait_for "the first Redfish BMC to stop" 20 sh -c "! kill -0 $(cat "$LAB_DIR/redfish.standin-pid")"
redfish_cert b
standin redfish redfish.py --listen "$LAB_ADDR" --port 9443 --cert "$LAB_DIR/redfish-b.pem" \
  --key "$LAB_DIR/redfish-b.key" --user admin --password-file "$LAB_DIR/bmc.pw"
wait_for "the second Redfish BMC on port 9443" 20 lab_wait_port tcp 9443 1
if out="$(ctl node power status pw0 2>&1)"; then fail "a BMC with another key was trusted: $out"; fi
expect "another key" "$out" "public key is not the one pinned"
say "redfish (Redfish BMC stand-in, HTTPS): key pinned on first use, Pxe once + On, status On, PowerCycle, ForceOff; another key at the same address refused"

# 5. No secret anywhere provisiond speaks.
ctl events --node pw0 --limit 100000 --json >"$LAB_DIR/events.json"
ctl node show pw0 --json >"$LAB_DIR/node.json"
ctl secret list >"$LAB_DIR/secrets.out" 2>&1 || true
grep -c '"kind":"power"' "$LAB_DIR/events.json" >/dev/null || fail "no power events"
for f in "$LAB_DIR/events.json" "$LAB_DIR/node.json" "$LAB_DIR/secrets.out" "$LAB_DIR/provisiond.log" \
  "$DATA"/*.log; do
  [ -e "$f" ] || continue
  ! grep -qF -e "$PLUG_PW" -e "$BMC_PW" "$f" || fail "a secret is in $f"
done
say "the plug's and the BMC's secrets are in no event, API answer or log ($(grep -o '"kind":"power"' "$LAB_DIR/events.json" | wc -l) power events)"
say "all power lab checks passed"
