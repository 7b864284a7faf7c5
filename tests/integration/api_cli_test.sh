#!/usr/bin/env bash
# Integration: a real provisiond on a temporary directory and a free loopback
# port, driven only through provisionctl and HTTP.
# Usage: api_cli_test.sh PROVISIOND PROVISIONCTL
PROVISIOND="$1"
PROVISIONCTL="$2"
source "$(dirname "$0")/../lib.sh"
ctl() { "$PROVISIONCTL" "$@"; }

start_provisiond main

echo "== status and profiles"
check "status answers" ctl status
expect_output "status names the version" "provisiond"
check "profile list" ctl profile list
for v in v0.1 v0.2 lab; do expect_output "profile $v is listed" "$v"; done

echo "== enroll"
for i in 0 1 2 3; do
  check "node add node$i" ctl node add "node$i" --mac "52:54:00:aa:00:0$i" --ip "10.99.0.1$i"
done
expect_exit 1 "a duplicate MAC is refused" ctl node add node9 --mac 52:54:00:aa:00:00
expect_output "the refusal names the MAC" "52:54:00:aa:00:00"
expect_exit 1 "a bad MAC is refused" ctl node add node9 --mac 52:54:00
expect_output "the refusal says what is wrong" "12 hex digits"
# Power drivers are provisiond's: provisionctl sends the spec and prints the
# daemon's refusal; a node whose spec is refused is not enrolled.
expect_exit 1 "an unknown power driver is refused" ctl node add node9 --mac 52:54:00:aa:00:09 --power plug
expect_output "by provisiond, naming its drivers" "unknown power driver 'plug' (wol, ssh, webhook, ipmi, redfish or command)"
expect_exit 1 "the refused node was not enrolled" ctl node show node9
expect_exit 1 "ipmi without a BMC address is refused" ctl node set node0 --power driver=ipmi
expect_output "naming the setting it needs" "node0: the ipmi power driver needs 'address'"
expect_exit 1 "a setting the driver has not is refused" ctl node set node0 --power wol,port=9
expect_output "naming the setting" "power driver 'wol' has no setting 'port'"
expect_exit 1 "an unknown UEFI loader is refused" ctl node set node0 --uefi-loader shim
expect_output "by provisiond, naming the loaders" "uefi_loader 'shim' must be grub"
check "node add with a power driver" ctl node add pw0 --mac 52:54:00:aa:00:08 --power command
expect_output "enrolled with it in one step" "enrolled pw0 (52:54:00:aa:00:08), power command"
check "node rm pw0" ctl node rm pw0
check "node list --json" ctl node list --json
expect_eq "four nodes" "$(ctl node list --json | grep -o '"hostname":"node[0-9]"' | wc -l)" 4
check "node list with a hostlist" ctl node list 'node[1-2]'
expect_output "node1 is listed" "node1"
if grep -q node3 "$WORK/out"; then fail "hostlist filter leaks node3"; else pass "hostlist filter"; fi

echo "== profiles: v0.1, again, v0.2, rollback to v0.1"
check "plan v0.1" ctl profile plan v0.1
expect_output "plan lists node0" "node0"
check "apply v0.1" ctl profile apply v0.1 --yes
expect_output "apply shows per-node progress" "node1"
expect_output "configure waits for the hello of nodes that are down" "configure: when it phones home"
expect_eq "node0 has v0.1" "$(curl -sf "${AUTH[@]}" "$URL/api/v1/nodes/node0" | grep -o '"profile":"[^"]*"')" '"profile":"v0.1"'
check "apply v0.1 again" ctl profile apply v0.1 --yes
expect_output "nothing changes" "nothing changes"
check "apply v0.2" ctl profile apply v0.2 --yes
expect_eq "all four on v0.2" "$(ctl node list --profile v0.2 --json | grep -o '"hostname":"node[0-9]"' | wc -l)" 4
check "apply v0.1 (rollback)" ctl profile apply v0.1 --yes
expect_eq "two back on v0.1" "$(ctl node list --profile v0.1 --json | grep -o '"hostname":"node[0-9]"' | wc -l)" 2
expect_eq "node3 released" "$(curl -sf "${AUTH[@]}" "$URL/api/v1/nodes/node3" | grep -o '"profile":"[^"]*"')" '"profile":""'
check "events" ctl events --json
expect_eq "three profile applications recorded" "$(grep -c '"kind":"profile-applied"' "$WORK/out")" 3
check "status after apply" ctl status --json
expect_output "status has the applied profile" '"version":"v0.1"'

echo "== states"
check "node set maintenance" ctl node set node1 --state maintenance --reason "fan swap"
expect_exit 1 "ready cannot be set by hand" ctl node set node1 --state ready
check "node rm retires" ctl node rm node2
expect_eq "node2 retired" "$(curl -sf "${AUTH[@]}" "$URL/api/v1/nodes/node2" | grep -o '"state":"[^"]*"')" '"state":"retired"'

echo "== tokens and roles"
PROVISIOND_TOKEN="" expect_exit 1 "a write without a token is refused" ctl node add x0 --mac 52:54:00:bb:00:01
expect_output "it says a token is needed" "token"
PROVISIOND_TOKEN="" expect_exit 1 "a read without a token is refused" ctl node list
expect_output "it says a token is needed" "needs a bearer token"
# Every API read, with no token (401), a wrong one (401) and a read token (2xx).
add_read_token
for path in /api/v1/status /api/v1/nodes /api/v1/nodes/node0 /api/v1/nodes/node0/why \
  /api/v1/profiles /api/v1/profiles/v0.1 /api/v1/profiles/v0.1/plan /api/v1/images \
  /api/v1/events /api/v1/runs /api/v1/export/hostfile /api/v1/export/ansible-inventory \
  /api/v1/sd/prometheus /metrics; do
  c0="$(curl -s -o /dev/null -w '%{http_code}' "$URL$path")"
  c1="$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer wrongwrongwrongwrong' "$URL$path")"
  c2="$(curl -s -o /dev/null -w '%{http_code}' "${READ_AUTH[@]}" "$URL$path")"
  expect_eq "GET $path: no token, a wrong token, a read token" "$c0 $c1 $c2" "401 401 200"
done
# Prometheus's http_sd_configs with a read token: node0, node1, node3 (node2 is retired).
expect_eq "service discovery: each node's node_exporter, labelled" \
  "$(curl -sf "${READ_AUTH[@]}" "$URL/api/v1/sd/prometheus" | python3 -c '
import json, sys
print(" ".join(g["targets"][0] + "/" + g["labels"]["hostname"] + "/" + g["labels"]["exporter"]
               for g in json.load(sys.stdin)))')" "10.99.0.10:9100/node0/node 10.99.0.11:9100/node1/node 10.99.0.13:9100/node3/node"
expect_eq "the web page's own files load without a token" \
  "$(for f in / /web/app.js /web/style.css; do curl -s -o /dev/null -w '%{http_code} ' "$URL$f"; done)" "200 200 200 "
PROVISIOND_TOKEN="$READ_TOKEN" check "a read token lists the nodes" ctl node list
expect_output "node0 is listed" "node0"
PROVISIOND_TOKEN="$READ_TOKEN" expect_exit 1 "a read token cannot enroll" ctl node add x0 --mac 52:54:00:bb:00:01
expect_output "the refusal names the role needed" "has the role 'read'; this request needs 'admin'"
for w in "POST /api/v1/nodes" "PATCH /api/v1/nodes/node0" "DELETE /api/v1/nodes/node0" \
  "POST /api/v1/nodes/node0/power" "POST /api/v1/profiles/v0.1/apply" "POST /api/v1/cmd" \
  "POST /api/v1/playbook-runs" "POST /api/v1/images/lab/import" "DELETE /api/v1/images/lab"; do
  expect_eq "a read token: $w -> 403" \
    "$(curl -s -o /dev/null -w '%{http_code}' "${READ_AUTH[@]}" -X "${w%% *}" "$URL${w#* }" -d '{}')" 403
done
expect_eq "node0 is unchanged" "$(curl -sf "${AUTH[@]}" "$URL/api/v1/nodes/node0" | grep -o '"state":"[^"]*"')" '"state":"enrolled"'
PROVISIOND_TOKEN="not-the-right-token-at-all" expect_exit 1 "a wrong token is refused" ctl node add x0 --mac 52:54:00:bb:00:01
expect_eq "no write without a token (HTTP 401)" \
  "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$URL/api/v1/nodes" -d '{"hostname":"x","mac":"52:54:00:bb:00:02"}')" 401
expect_eq "no write with a wrong token (HTTP 401)" \
  "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer wrongwrongwrongwrong' -X POST "$URL/api/v1/nodes" -d '{}')" 401
expect_eq "nothing was written" "$(curl -sf "${AUTH[@]}" "$URL/api/v1/nodes?hostlist=x,x0" | grep -o '"count":[0-9]*')" '"count":0'

echo "== HTTPS: the API's own listener, its certificate pinned on first use"
API_URL="$(cat "$DATA/data/provisiond.api-url")"
CERT="$DATA/data/tls/cert.pem"
FP="$(openssl x509 -in "$CERT" -noout -fingerprint -sha256 | cut -d= -f2)"
expect_eq "a self-signed certificate made at first start, its key 0600" \
  "$(stat -c %a "$DATA/data/tls/key.pem") $(openssl x509 -in "$CERT" -noout -subject | grep -c provisiond)" "600 1"
export PROVISIONCTL_KNOWN_SERVERS="$WORK/known_servers"
PROVISIOND_URL="$API_URL" check "provisionctl over https, first use" ctl node list
expect_output "it says what it pinned, and where" "certificate SHA-256 $FP pinned in $WORK/known_servers"
expect_eq "the pin is the certificate's fingerprint" "$(cat "$WORK/known_servers")" "$API_URL $FP"
PROVISIOND_URL="$API_URL" check "again, with the pin" ctl status --json
expect_output "status shows the HTTPS listener's fingerprint" "\"sha256\":\"$FP\""
if grep -q "pinned in" "$WORK/out"; then fail "a second use pins again"; else pass "a second use does not pin again"; fi
WRONG="$(sed 's/[0-9A-F]/0/g' <<<"$FP")"
echo "$API_URL $WRONG" >"$WORK/known_servers"
PROVISIOND_URL="$API_URL" expect_exit 1 "a certificate other than the pinned one is refused" ctl node list
expect_output "saying both and that nothing was sent" "is not the one pinned: pinned $WRONG, offered $FP"
PROVISIOND_URL="$API_URL" PROVISIOND_FINGERPRINT="$WRONG" expect_exit 1 "a wrong --fingerprint is refused" ctl status
PROVISIOND_URL="$API_URL" check "the right --fingerprint works" ctl --fingerprint "$FP" status
PROVISIOND_URL="$API_URL" check "or the certificate as a CA file" ctl --ca-file "$CERT" status
expect_eq "curl with the certificate as CA reads the API over https" \
  "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$CERT" "${AUTH[@]}" "$API_URL/api/v1/nodes")" 200
expect_eq "and the web page" "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$CERT" "$API_URL/")" 200
expect_eq "reads still need a token over https" \
  "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$CERT" "$API_URL/api/v1/nodes")" 401
unset PROVISIONCTL_KNOWN_SERVERS

echo "== malformed requests"
auth=("${AUTH[@]}")
code() { curl -s -o "$WORK/body" -w '%{http_code}' "$@"; }
expect_eq "malformed JSON -> 400" "$(code "${auth[@]}" -X POST "$URL/api/v1/nodes" -d '{"hostname":')" 400
expect_eq "unknown field -> 400" "$(code "${auth[@]}" -X POST "$URL/api/v1/nodes" -d '{"hostname":"a","mac":"52:54:00:bb:00:03","color":"red"}')" 400
grep -q "unknown field 'color'" "$WORK/body" && pass "the 400 names the field" || fail "400 body: $(cat "$WORK/body")"
head -c 2000000 /dev/zero | tr '\0' 'a' >"$WORK/big"
expect_eq "oversize body -> 413" "$(code "${auth[@]}" -X POST "$URL/api/v1/nodes" --data-binary @"$WORK/big")" 413
expect_eq "wrong method -> 405" "$(code -X PUT "$URL/api/v1/status")" 405
expect_eq "an unknown run status -> 400" "$(code "${auth[@]}" "$URL/api/v1/runs?status=bogus")" 400
grep -q "status 'bogus' must be running, ok, failed" "$WORK/body" && pass "the 400 names the statuses" || fail "400 body: $(cat "$WORK/body")"
expect_eq "unknown path -> 404" "$(code "$URL/api/v1/../../etc/passwd")" 404
expect_eq "metrics answer" "$(code "${auth[@]}" "$URL/metrics")" 200
grep -q 'provisiond_nodes{state="enrolled"}' "$WORK/body" && pass "metrics count nodes by state" || fail "metrics: $(head -5 "$WORK/body")"
kill -0 "$PROVISIOND_PID" && pass "provisiond is still running" || fail "provisiond died"

echo "== 8 concurrent clients enroll 500 nodes each"
before=$(curl -sf "${AUTH[@]}" "$URL/api/v1/nodes" | grep -o '"count":[0-9]*' | cut -d: -f2)
enrolled_before=$(curl -sf "${AUTH[@]}" "$URL/api/v1/events?limit=100000" | grep -o '"kind":"enrolled"' | wc -l)
for c in $(seq 0 7); do
  cfg="$WORK/client$c.curl"
  : >"$cfg"
  for i in $(seq 0 499); do
    # One curl process per client sends its 500 requests over one connection;
    # "next" separates requests (none after the last).
    [ "$i" -eq 0 ] || echo next >>"$cfg"
    printf 'url = "%s/api/v1/nodes"\nheader = "Authorization: Bearer %s"\ndata = "{\\"hostname\\":\\"c%d-n%d\\",\\"mac\\":\\"02:00:00:%02x:%02x:%02x\\"}"\nwrite-out = "%%{http_code}\\n"\noutput = "/dev/null"\n' \
      "$URL" "$TOKEN" "$c" "$i" "$c" $((i / 256)) $((i % 256)) >>"$cfg"
  done
  curl -s -K "$cfg" >"$WORK/client$c.codes" &
  CLIENTS+=($!)
done
for pid in "${CLIENTS[@]}"; do wait "$pid"; done
created=$(cat "$WORK"/client*.codes | grep -c '^201$' || true)
others=$(cat "$WORK"/client*.codes | grep -vc '^201$' || true)
expect_eq "4000 enrolls answered 201" "$created" 4000
expect_eq "no errors" "$others" 0
after=$(curl -sf "${AUTH[@]}" "$URL/api/v1/nodes" | grep -o '"count":[0-9]*' | cut -d: -f2)
expect_eq "no row lost" "$after" $((before + 4000))
expect_eq "every enroll has its event" \
  "$(curl -sf "${AUTH[@]}" "$URL/api/v1/events?limit=100000" | grep -o '"kind":"enrolled"' | wc -l)" $((enrolled_before + 4000))

echo "== provisiond --check"
check "--check accepts the shipped profiles" "$PROVISIOND" --check --config "$DATA/provisiond.yaml"
mkdir -p "$WORK/badprofiles/v9"
printf 'version: v9\nimage: {name: lab}\nnodes:\n  hostlist: node[3-1]\nplaybooks:\n  - playbook: missing.yml\n' >"$WORK/badprofiles/v9/profile.yaml"
printf 'data_dir: %s\nprofiles_dir: %s\nplaybooks_dir: %s\n' "$WORK/x" "$WORK/badprofiles" "$REPO/playbooks" >"$WORK/bad.yaml"
expect_exit 1 "--check refuses a broken profile" "$PROVISIOND" --check --config "$WORK/bad.yaml"
expect_output "names the hostlist error with file:line:col" "v9/profile.yaml:4:13: hostlist 'node[3-1]'"
expect_output "and the missing playbook" "v9/profile.yaml:6:15: playbook 'missing.yml' not found"
printf 'listen: nowhere\nbogus: 1\n' >"$WORK/badconf.yaml"
expect_exit 1 "--check refuses a broken config" "$PROVISIOND" --check --config "$WORK/badconf.yaml"
expect_output "bad value with position" "badconf.yaml:1:9"
expect_output "unknown key with position" "badconf.yaml:2:1: unknown key 'bogus'"

echo "== usage"
expect_exit 2 "unknown verb is a usage error" ctl frobnicate
expect_exit 2 "missing argument is a usage error" ctl node add
check "doc describes every command" ctl doc
for verb in "status" "node list" "node show" "node add" "node set" "node rm" "profile list" \
  "profile show" "profile plan" "profile apply" "events"; do
  expect_output "doc has '$verb'" "$verb"
done

echo "== image build with a mirror that cannot be reached"
mkdir -p "$WORK/images/unreachable"
cp -r "$REPO/images/agent" "$REPO/images/initramfs" "$WORK/images/"
printf 'name: unreachable\ndistribution: debian\nsuite: bookworm\nmirror: http://127.0.0.1:9/debian\nkernel_package: linux-image-amd64\n' \
  >"$WORK/images/unreachable/image.yaml"
start_provisiond builder "images_dir: $WORK/images" "tools_dir: $(dirname "$(realpath "$PROVISIOND")")"
expect_exit 1 "the build fails" ctl image build unreachable
expect_output "and says why" "mirror http://127.0.0.1:9/debian cannot be reached"
expect_exit 1 "a missing manifest is refused" ctl image build nosuch
expect_output "naming what it looked for" "no image manifest 'nosuch'"
check "no version was left behind" ctl image list
if grep -q unreachable "$WORK/out"; then fail "a failed build left an image"; else pass "no image from the failed build"; fi

finish
