#!/usr/bin/env bash
# Bad input against a real provisiond: hostile HTTP requests (path traversal,
# oversize bodies and headers, wrong methods, malformed and hostile JSON, slow
# clients), unknown and duplicate MACs, another node's token, broken YAML of
# several kinds, a node that vanishes mid-playbook, a full disk, and secrets
# that must never reach the log, the events, the API or the web page. Each
# gets a clear error (naming the field, file:line or node) and nothing is lost.
# The table in docs/reliability.md names each check.
# Usage: bad_input_test.sh PROVISIOND PROVISIONCTL
PROVISIOND="$(realpath "$1")"
PROVISIONCTL="$(realpath "$2")"
source "$(dirname "$0")/../lib.sh"
ctl() { "$PROVISIONCTL" "$@"; }


IPMI_PASSWORD="ipmi-S3cret-$RANDOM$RANDOM"
mkdir -p "$WORK/etc"
printf '10.0.0.9 admin %s\n' "$IPMI_PASSWORD" >"$WORK/etc/ipmi"
chmod 600 "$WORK/etc/ipmi"
# listen_backlog above what the kernel allows (net.core.somaxconn): provisiond
# starts and says the kernel caps it.
start_provisiond main "log_level: debug" "ipmi_credentials_file: $WORK/etc/ipmi" "listen_idle_timeout_s: 3" \
  "listen_backlog: 1000000"
DB="$DATA/data/provisiond.db"
grep -q "listen_backlog 1000000 is capped by the kernel at net.core.somaxconn = $(cat /proc/sys/net/core/somaxconn)" \
  "$WORK/provisiond-main.log" && pass "a listen_backlog over net.core.somaxconn is reported at start" ||
  fail "no warning that net.core.somaxconn caps listen_backlog: $(grep -i backlog "$WORK/provisiond-main.log")"

echo "== files: the data directory and its secrets are their owner's from their creation"
expect_eq "data directory 0711 (others pass through to netboot/, cannot list)" "$(stat -c %a "$DATA/data")" 711
expect_eq "database 0600" "$(stat -c %a "$DB")" 600
expect_eq "API tokens 0600" "$(stat -c %a "$DATA/data/tokens")" 600
expect_eq "control key 0600 in a 0700 directory" \
  "$(stat -c %a "$DATA/data/ssh/id_ed25519") $(stat -c %a "$DATA/data/ssh")" "600 700"
auth=("${AUTH[@]}")
# code ARGS...: the HTTP status of a curl request; the body is in $WORK/body.
code() { curl -s --path-as-is -o "$WORK/body" -w '%{http_code}' "$@" || true; }
body_has() {
  if grep -qF -- "$2" "$WORK/body"; then pass "$1"; else fail "$1: body lacks '$2': $(head -c 500 "$WORK/body")"; fi
}
ctl node add n1 --mac 52:54:00:ee:00:01 --ip 10.0.0.21 >/dev/null
ctl node add n2 --mac 52:54:00:ee:00:02 --ip 10.0.0.22 >/dev/null

echo "== path traversal"
for path in "/web/../../../../etc/passwd" "/web/..%2F..%2F..%2F..%2Fetc%2Fpasswd" \
  "/web/%2e%2e/%2e%2e/etc/passwd" "/../../../../etc/passwd" "/web/.htaccess" "/web/..%00/index.html" \
  "/boot/..%2F..%2F..%2Fetc%2Fpasswd.ipxe" "/boot/52-54-00-ee-00-01/..%2F..%2F..%2Fetc%2Fpasswd" \
  "/boot/52-54-00-ee-00-01/../../../../etc/passwd" "/api/v1/profiles/..%2F..%2F..%2Fetc" \
  "/api/v1/images/..%2F..%2Fetc/verify" "/api/v1/export/..%2F..%2Fetc%2Fpasswd"; do
  c="$(code "$URL$path")"
  if [[ "$c" =~ ^4 ]] && ! grep -q 'root:' "$WORK/body"; then pass "traversal $path -> $c"; else
    fail "traversal $path -> $c: $(head -c 300 "$WORK/body")"
  fi
done
c="$(code "$URL/web/app.js")"
expect_eq "a real web file is still served" "$c" 200

echo "== oversize bodies and headers (max_body_bytes: 1 MiB by default)"
head -c 2000000 /dev/zero | tr '\0' 'a' >"$WORK/big"
expect_eq "2 MB body with Content-Length -> 413" "$(code "${auth[@]}" -X POST "$URL/api/v1/nodes" --data-binary @"$WORK/big")" 413
body_has "the 413 says the limit" "larger than 1048576 bytes"
expect_eq "2 MB chunked body (no Content-Length) -> 413" \
  "$(code "${auth[@]}" -H 'Transfer-Encoding: chunked' -X POST "$URL/api/v1/nodes" --data-binary @"$WORK/big")" 413
expect_eq "2 MB body on a node's hello -> 413" \
  "$(code -X POST "$URL/api/v1/nodes/52:54:00:ee:00:01/hello" --data-binary @"$WORK/big")" 413
c="$(code "${auth[@]}" -H "X-Big: $(head -c 100000 /dev/zero | tr '\0' 'b')" "$URL/api/v1/status")"
[[ "$c" =~ ^4 ]] && pass "100 kB header -> $c" || fail "100 kB header -> $c"
c="$(code "${auth[@]}" "$URL/api/v1/nodes?hostlist=$(head -c 60000 /dev/zero | tr '\0' 'x')")"
[[ "$c" =~ ^4 ]] && pass "60 kB query string -> $c" || fail "60 kB query -> $c"

echo "== wrong methods -> 405 with Allow"
for m in "PUT /api/v1/status:GET, HEAD" "DELETE /boot/start.ipxe:GET, HEAD" "POST /web/app.js:GET, HEAD" \
  "PUT /api/v1/nodes:GET, HEAD, POST" "GET /api/v1/nodes/n1/hello:POST" "PATCH /api/v1/events:GET, HEAD"; do
  method="${m%% *}" rest="${m#* }"
  path="${rest%%:*}" allow="${rest#*:}"
  got="$(curl -s -o /dev/null -D - -X "$method" "$URL$path" | tr -d '\r')"
  if grep -q '^HTTP/1.1 405' <<<"$got" && grep -qx "Allow: $allow" <<<"$got"; then
    pass "$method $path -> 405, Allow: $allow"
  else fail "$method $path: $(head -c 300 <<<"$got")"; fi
done
c="$(curl -s -o /dev/null -w '%{http_code}' -X FROBNICATE "$URL/api/v1/status")"
[[ "$c" =~ ^(400|405|501)$ ]] && pass "an unknown method -> $c" || fail "unknown method -> $c"

echo "== malformed and hostile JSON -> 400 naming the problem"
post() { code "${auth[@]}" -X POST "$URL/api/v1/nodes" --data-binary "$1"; }
expect_eq "truncated JSON" "$(post '{"hostname":')" 400
body_has "says it is not JSON" "JSON"
expect_eq "an array, not an object" "$(post '[1,2]')" 400
expect_eq "a number for the hostname" "$(post '{"hostname":5,"mac":"52:54:00:ee:00:09"}')" 400
body_has "names the field" "hostname"
expect_eq "binary garbage" "$(head -c 4096 /dev/urandom | code "${auth[@]}" -X POST "$URL/api/v1/nodes" --data-binary @-)" 400
expect_eq "invalid UTF-8 in a string" "$(post $'{"hostname":"n\xff\xfe","mac":"52:54:00:ee:00:09"}')" 400
python3 -c "print('[' * 400000 + ']' * 400000, end='')" >"$WORK/deep"
expect_eq "400,000 nested arrays (deep recursion)" \
  "$(code "${auth[@]}" -X POST "$URL/api/v1/nodes" --data-binary @"$WORK/deep")" 400
expect_eq "a hostname of 100 kB" "$(post "{\"hostname\":\"$(head -c 100000 /dev/zero | tr '\0' a)\",\"mac\":\"52:54:00:ee:00:09\"}")" 400
expect_eq "a shell metacharacter hostname" "$(post '{"hostname":"a;rm -rf /","mac":"52:54:00:ee:00:09"}')" 400
expect_eq "query: a negative limit" "$(code "${auth[@]}" "$URL/api/v1/events?limit=-1")" 400
expect_eq "query: a huge number" "$(code "${auth[@]}" "$URL/api/v1/events?after=99999999999999999999999")" 400
kill -0 "$PROVISIOND_PID" && pass "provisiond is still running" || fail "provisiond died"
expect_eq "nothing was written by the bad requests" "$(sqlite3 "$DB" 'select count(*) from nodes')" 2

echo "== slow clients do not block others"
# 200 connections that send half a request line and then nothing (slowloris).
SLOW=()
port="${URL##*:}"
for i in $(seq 200); do
  exec {fd}<>"/dev/tcp/127.0.0.1/$port"
  printf 'GET /api/v1/status HTTP/1.1\r\nHost: x\r\n' >&$fd
  SLOW+=("$fd")
done
t0=$EPOCHREALTIME
# A bounded wait, not a timing: under the sanitizers on a busy machine a
# request can take seconds; one that waits on the slow clients never comes.
c="$(curl -s -m 60 -o /dev/null -w '%{http_code}' "${auth[@]}" "$URL/api/v1/status")" || true
ms="$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d", (b - a) * 1000 }')"
expect_eq "a request is answered while 200 slow clients hold connections (in $ms ms)" "$c" 200
# listen_idle_timeout_s (3 s here, 30 by default): provisiond closes them.
closed=0
for fd in "${SLOW[@]}"; do
  rc=0
  while IFS= read -r -t 60 -u "$fd" _; do :; done || rc=$?
  # 1: end of file (closed by provisiond); over 128: still open after 60 s.
  [ "$rc" -le 128 ] && closed=$((closed + 1))
done
expect_eq "provisiond closed the 200 stalled connections (listen_idle_timeout_s)" "$closed" 200
for fd in "${SLOW[@]}"; do exec {fd}>&-; done

echo "== unknown and duplicate MACs"
expect_eq "a boot script for an unknown MAC" "$(code "$URL/boot/52-54-00-ee-00-77.ipxe")" 200
body_has "tells it to wait (no install loop)" "#!ipxe"
expect_eq "the unknown MAC is recorded as discovered" \
  "$(sqlite3 "$DB" "select state from nodes where mac = '52:54:00:ee:00:77'")" discovered
expect_eq "a malformed MAC in a boot path -> 400" "$(code "$URL/boot/52-54-00-ee.ipxe")" 400
body_has "says what a MAC is" "MAC"
expect_eq "a hello from an unknown MAC -> 404" \
  "$(code -X POST -H 'Authorization: Bearer x' "$URL/api/v1/nodes/52:54:00:ee:00:99/hello" -d '{}')" 404
for form in 52:54:00:ee:00:01 52-54-00-EE-00-01 5254.00ee.0001 525400EE0001; do
  c="$(post "{\"hostname\":\"dup\",\"mac\":\"$form\"}")"
  if [ "$c" = 409 ] && grep -q '52:54:00:ee:00:01' "$WORK/body"; then pass "duplicate MAC as $form -> 409 naming it"
  elif [ "$c" = 400 ]; then pass "MAC form $form refused as malformed (400)"
  else fail "duplicate MAC $form -> $c: $(cat "$WORK/body")"; fi
done
expect_eq "a duplicate hostname -> 409" "$(post '{"hostname":"n1","mac":"52:54:00:ee:00:08"}')" 409
body_has "naming it" "n1"
expect_eq "enrolling the discovered MAC adopts it" "$(post '{"hostname":"n7","mac":"52:54:00:ee:00:77"}')" 201
expect_eq "one row for that MAC" "$(sqlite3 "$DB" "select count(*) from nodes where mac = '52:54:00:ee:00:77'")" 1
# A flood of made-up MACs (anyone on the boot network can send one) is bounded by
# discovery.max_pending (256 by default): answered, not all recorded.
for ((i = 0; i < 5000; i++)); do
  printf 'url = "%s/boot/02-00-00-00-%02x-%02x.ipxe"\noutput = /dev/null\n' "$URL" $((i >> 8)) $((i & 255))
done >"$WORK/flood.curl"
curl -s -K "$WORK/flood.curl" -w '%{http_code}\n' | sort | uniq -c >"$WORK/flood.codes"
expect_eq "5,000 unknown MACs: every script answered 200" "$(awk '{print $2 ":" $1}' "$WORK/flood.codes")" "200:5000"
expect_eq "256 discovered nodes kept, no more" \
  "$(sqlite3 "$DB" "select count(*) from nodes where state = 'discovered'")" 256
check "provisiond still answers" ctl status

echo "== writes without a token, and tokens of the wrong kind"
n1_token="$(sqlite3 "$DB" "select token from nodes where hostname = 'n1'")"
n2_token="$(sqlite3 "$DB" "select token from nodes where hostname = 'n2'")"
for w in "POST /api/v1/nodes" "PATCH /api/v1/nodes/n1" "DELETE /api/v1/nodes/n1" \
  "POST /api/v1/nodes/n1/power" "POST /api/v1/profiles/v0.1/apply" "POST /api/v1/images/lab/build" \
  "POST /api/v1/images/lab/import" "POST /api/v1/images/lab/verify" "DELETE /api/v1/images/lab" \
  "POST /api/v1/nodes/n1/configure" "POST /api/v1/cmd" "POST /api/v1/playbook-runs"; do
  expect_eq "$w without a token -> 401" "$(code -X "${w%% *}" "$URL${w#* }" -d '{}')" 401
  expect_eq "$w with a node's token -> 401" "$(code -H "Authorization: Bearer $n1_token" -X "${w%% *}" "$URL${w#* }" -d '{}')" 401
done
expect_eq "n1 is untouched" "$(sqlite3 "$DB" "select state from nodes where hostname = 'n1'")" enrolled
expect_eq "a hello with another node's token -> 403" \
  "$(code -X POST -H "Authorization: Bearer $n2_token" "$URL/api/v1/nodes/52:54:00:ee:00:01/hello" -d '{}')" 403
body_has "says it needs that node's own token" "needs that node's own token"
expect_eq "an overlay with another node's token -> 403" \
  "$(code "$URL/boot/52-54-00-ee-00-01/overlay.tar?token=$n2_token")" 403
expect_eq "a hello with the admin token -> 403" \
  "$(code -X POST "${auth[@]}" "$URL/api/v1/nodes/52:54:00:ee:00:01/hello" -d '{}')" 403
expect_eq "the refusals are events" "$(sqlite3 "$DB" "select count(*) from events where kind = 'refused' and node = 'n1'")" 3
expect_eq "n1 did not phone home" "$(sqlite3 "$DB" "select stage from nodes where hostname = 'n1'")" ""
# Node data that would add lines to dnsmasq's hosts file, /etc/hosts, known_hosts or the exports.
n1_row() { sqlite3 "$DB" "select coalesce(ip, '-') || '|' || coalesce(host_key, '-') || '|' || updated from nodes where hostname = 'n1'"; }
n1_before="$(n1_row)"
expect_eq "PATCH an IP with a newline -> 400" \
  "$(code -X PATCH "${auth[@]}" "$URL/api/v1/nodes/n1" -d '{"ip":"10.0.0.5\ndhcp-host=evil"}')" 400
body_has "it says what is wrong with the IP" "is not an IPv4 address"
expect_eq "PATCH a host key with a second line -> 400" \
  "$(code -X PATCH "${auth[@]}" "$URL/api/v1/nodes/n1" -d '{"host_key":"ssh-ed25519 AAAA x\n@cert-authority * ssh-ed25519 AAAA"}')" 400
body_has "it names the control character" "control character"
expect_eq "enroll with a junk IP -> 400" \
  "$(code -X POST "${auth[@]}" "$URL/api/v1/nodes" -d '{"hostname":"j1","mac":"52:54:00:ee:00:77","ip":"10.0.0.999"}')" 400
expect_eq "n1's row is as it was (IP, key, updated)" "$(n1_row)" "$n1_before"
expect_eq "no node j1" "$(sqlite3 "$DB" "select count(*) from nodes where hostname = 'j1'")" 0
# Routes that take a path of the control node read only what they are for.
expect_eq "import /etc/shadow (outside import_dir) -> 403" \
  "$(code -X POST "${auth[@]}" "$URL/api/v1/images/stolen/import" -d '{"kernel":"/etc/shadow","initrd":"/etc/shadow"}')" 403
body_has "it says imports read only import_dir" "is not under import_dir $WORK"
expect_eq "nor through .. out of it -> 403" \
  "$(code -X POST "${auth[@]}" "$URL/api/v1/images/stolen/import" -d '{"kernel":"../../../etc/shadow","initrd":"x"}')" 403
ln -sf /etc/shadow "$WORK/shadow-link"
expect_eq "nor through a link in it -> 403" \
  "$(code -X POST "${auth[@]}" "$URL/api/v1/images/stolen/import" -d '{"kernel":"shadow-link","initrd":"shadow-link"}')" 403
# Files inside import_dir (here the test's work dir, which holds provisiond's data) are taken
# only when they are a kernel and an initramfs.
for f in "$DATA/data/tokens" "$DB" "$DATA/data/ssh/id_ed25519"; do
  expect_eq "import $f as a kernel -> 400" \
    "$(code -X POST "${auth[@]}" "$URL/api/v1/images/stolen/import" -d "{\"kernel\":\"$f\",\"initrd\":\"$f\"}")" 400
  grep -qF -- "$(head -c 24 "$f" | tr -d '\0\n')" "$WORK/body" && fail "the refusal repeats $f"
done
body_has "it says what an import takes" "is not a Linux kernel"
expect_eq "nothing was imported" "$(ctl image list --json | grep -c stolen || true)" 0
expect_eq "a playbook run of /etc/hostname -> 403" \
  "$(code -X POST "${auth[@]}" "$URL/api/v1/playbook-runs" -d '{"playbook":"/etc/hostname","nodes":"n1"}')" 403
body_has "it says playbooks come from playbooks_dir" "playbooks_dir"
expect_eq "a playbook name that climbs out -> 403" \
  "$(code -X POST "${auth[@]}" "$URL/api/v1/playbook-runs" -d '{"playbook":"../../../../etc/hostname","nodes":"n1"}')" 403
python3 -c "print('{\"ssh_host_key\":' + '[' * 300000 + ']' * 300000 + '}', end='')" >"$WORK/deep2"
c="$(code -X POST -H "Authorization: Bearer $n2_token" "$URL/api/v1/nodes/52:54:00:ee:00:02/hello" --data-binary @"$WORK/deep2")"
# This one crashed provisiond (stack overflow writing the facts back) before
# bodies were checked for depth.
expect_eq "300,000-deep facts on a hello with its token -> 400" "$c" 400
body_has "naming the nesting" "nested deeper than 64 levels"
kill -0 "$PROVISIOND_PID" && pass "provisiond is still running" || fail "provisiond died on deep facts"

echo "== secrets never reach the log, the events, the API or the web page"
check "n1 gets IPMI power" ctl node set n1 --power ipmi,address=10.0.0.9
expect_exit 1 "power on fails (no BMC)" ctl node power on n1
expect_eq "a password on a node is refused" \
  "$(code "${auth[@]}" -X PATCH "$URL/api/v1/nodes/n2" -d "{\"power\":{\"driver\":\"ipmi\",\"address\":\"10.0.0.9\",\"password\":\"$IPMI_PASSWORD\"}}")" 400
body_has "naming the setting" "no setting 'password'"
# A bad token in a request, and a request with the token in the query.
code -H "Authorization: Bearer $TOKEN-wrong" -X POST "$URL/api/v1/nodes" -d '{}' >/dev/null
code "$URL/api/v1/nodes?token=$n1_token" >/dev/null
key_b64="$(sed -n 2p "$DATA/data/ssh/id_ed25519")"
mkdir -p "$WORK/seen"
curl -s "${auth[@]}" "$URL/api/v1/events?limit=100000" >"$WORK/seen/events.json"
curl -s "${auth[@]}" "$URL/api/v1/nodes" >"$WORK/seen/nodes.json"
for n in n1 n2 n7; do
  curl -s "${auth[@]}" "$URL/api/v1/nodes/$n" >"$WORK/seen/node-$n.json"
  curl -s "${auth[@]}" "$URL/api/v1/nodes/$n/why" >"$WORK/seen/why-$n.json"
done
curl -s "${auth[@]}" "$URL/api/v1/status" >"$WORK/seen/status.json"
curl -s "${auth[@]}" "$URL/api/v1/runs" >"$WORK/seen/runs.json"
curl -s "${auth[@]}" "$URL/metrics" >"$WORK/seen/metrics.txt"
curl -s "$URL/" >"$WORK/seen/index.html"
for f in app.js style.css; do curl -s "$URL/web/$f" >"$WORK/seen/$f"; done
cp "$WORK/provisiond-main.log" "$WORK/seen/provisiond.log"
for secret in "admin token:$TOKEN" "n1's token:$n1_token" "n2's token:$n2_token" \
  "IPMI password:$IPMI_PASSWORD" "control private key:$key_b64"; do
  what="${secret%%:*}" value="${secret#*:}"
  [ -n "$value" ] || { fail "no value for $what"; continue; }
  if grep -rlF -- "$value" "$WORK/seen" >"$WORK/leaks"; then
    fail "$what leaks into: $(tr '\n' ' ' <"$WORK/leaks")"
  else pass "$what is in none of the log, events, API answers, metrics, web page"; fi
done

echo "== broken YAML: --check and the daemon name file:line"
B="$WORK/broken"
mkdir -p "$B/profiles" "$B/playbooks"
mk() { mkdir -p "$B/profiles/$1"; printf '%b' "$2" >"$B/profiles/$1/profile.yaml"; }
mk tab      'version: tab\nnodes: {pattern: x*}\nimage:\n\tname: lab\n'
mk unclosed 'version: unclosed\nnodes: {pattern: x*}\ndescription: "no end\nimage: {name: lab}\n'
mk bracket  'version: bracket\nnodes: {pattern: x*}\nimage: {name: lab\n'
mk dupkey   'version: dupkey\nnodes: {pattern: x*}\nimage: {name: lab}\nimage: {name: other}\n'
mk badtype  'version: badtype\nnodes: {pattern: x*}\nimage: {name: lab}\nkernel_args: 5\n'
mk unknown  'version: unknown\nnodes: {pattern: x*}\nimage: {name: lab}\ncolour: red\n'
mk noimage  'version: noimage\nnodes: {pattern: x*}\ndescription: x\n'
mk empty    ''
mk binary   '\x00\x01\x02\xff\xfe'
mk badbook  'version: badbook\nnodes: {pattern: x*}\nimage: {name: lab}\nplaybooks:\n  - playbook: broken.yml\n'
printf -- '- hosts: all\n  tasks:\n    - name: x\n      command: [unclosed\n' >"$B/playbooks/broken.yml"
printf 'data_dir: %s\nprofiles_dir: %s\nplaybooks_dir: %s\n' "$B/data" "$B/profiles" "$B/playbooks" >"$B/config.yaml"
expect_exit 1 "--check refuses the broken profiles" "$PROVISIOND" --check --config "$B/config.yaml"
cp "$WORK/out" "$WORK/check.out"
for p in tab unclosed bracket dupkey badtype unknown noimage empty binary; do
  if grep -qE "profiles/$p/profile.yaml(:[0-9]+)?" "$WORK/check.out"; then
    line="$(grep -oE "profiles/$p/profile.yaml[:0-9]*[^\n]{0,60}" "$WORK/check.out" | head -1)"
    pass "$p: $line"
  else fail "$p: not named in --check: $(head -c 1500 "$WORK/check.out")"; fi
done
for p in tab unclosed bracket dupkey badtype unknown; do
  grep -qE "profiles/$p/profile.yaml:[0-9]+" "$WORK/check.out" && pass "$p has a line number" ||
    fail "$p without a line number"
done
grep -qE "broken.yml:[0-9]+" "$WORK/check.out" && pass "a broken playbook is named with file:line" ||
  fail "broken playbook: $(head -c 1500 "$WORK/check.out")"
printf 'listen: 127.0.0.1:0\ndata_dir: %s\nprofiles_dir: %s\nplaybooks_dir: %s\n' "$B/data" "$B/profiles" "$B/playbooks" >"$B/run.yaml"
"$PROVISIOND" --config "$B/run.yaml" >"$WORK/provisiond-broken.log" 2>&1 &
BPID=$!
PIDS+=("$BPID")
wait_for 20 "provisiond starts with broken profiles" test -s "$B/data/provisiond.url"
BURL="$(cat "$B/data/provisiond.url")"
grep -qE 'profile not loaded: .*tab/profile.yaml:[0-9]+' "$WORK/provisiond-broken.log" &&
  pass "the daemon logs each broken profile with file:line" || fail "daemon log: $(head -c 1000 "$WORK/provisiond-broken.log")"
c="$(code -X POST -H "Authorization: Bearer $(awk '!/^#/ && NF {print $1; exit}' "$B/data/tokens")" "$BURL/api/v1/profiles/dupkey/apply" -d '{}')"
[[ "$c" =~ ^4 ]] && grep -qE 'dupkey/profile.yaml:[0-9]+' "$WORK/body" && pass "applying a broken profile -> $c with file:line" ||
  fail "apply dupkey -> $c: $(cat "$WORK/body")"
kill "$BPID"; wait "$BPID" 2>/dev/null || true

echo "== a node that vanishes mid-playbook fails alone, named"
NODES="$WORK/nodes"
mkdir -p "$NODES" "$WORK/vn/data/ssh" "$WORK/vprofiles/vanish" "$WORK/vplaybooks"
ssh-keygen -q -t ed25519 -N '' -C provisiond-vanish -f "$WORK/vn/data/ssh/id_ed25519"
SSHD_START_TIMEOUT="${SSHD_START_TIMEOUT:-60}" start_sshd_targets 2 "$WORK/vn/data/ssh/id_ed25519.pub"
echo 60 >"$NODES/sleep-vn1"
echo 0 >"$NODES/sleep-vn2"
printf 'version: vanish\nimage: {name: lab}\nplaybooks:\n  - playbook: vanish.yml\n    vars: {base: %s}\nnodes:\n  pattern: vn*\n' \
  "$NODES" >"$WORK/vprofiles/vanish/profile.yaml"
mkdir -p "$WORK/vprofiles/vbase"
printf 'version: vbase\nimage: {name: lab}\nnodes: {pattern: vn*}\n' >"$WORK/vprofiles/vbase/profile.yaml"
cat >"$WORK/vplaybooks/vanish.yml" <<'EOF'
- hosts: all
  tasks:
    - name: started
      shell: echo up > {{ base }}/started-{{ inventory_hostname }}
    - name: long
      shell: sleep $(cat {{ base }}/sleep-{{ inventory_hostname }})
EOF
PROFILES_DIR="$WORK/vprofiles" PLAYBOOKS_DIR="$WORK/vplaybooks" \
  start_provisiond vn "ssh.port: $PORT" "configure.task_timeout: 120"
VDB="$DATA/data/provisiond.db"
# The nodes boot the lab image under a profile without playbooks first (a
# node phones home at the end of a boot), then vanish is applied.
fake_boot_files "$WORK" 4096 4096
ctl image import lab --kernel "$WORK/vmlinuz" --initrd "$WORK/initrd.img" >/dev/null
for i in 1 2; do
  ctl node add "vn$i" --mac "52:54:00:ef:00:0$i" --ip "$(addr_of "t$i")" --profile vbase >/dev/null
done
ctl profile apply vbase --yes >/dev/null
for i in 1 2; do
  node_hello "$URL" "52:54:00:ef:00:0$i" "{\"ssh_host_key\": \"$(key_of "t$i")\"}" >/dev/null ||
    fail "vn$i did not phone home"
done
check "vn1-2 ready under the base profile" ctl wait 'vn[1-2]' --timeout 120
expect_eq "apply vanish (through the API: provisionctl would follow the runs)" \
  "$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $TOKEN" "$URL/api/v1/profiles/vanish/apply" -d '{}')" 200
wait_for 60 "vn1 starts its long task" test -s "$NODES/started-vn1"
bash "$REPO/tests/sshd/sshd-targets.sh" crash "$TARGETS" t1
check "vn1 ends" bash -c "! '$PROVISIONCTL' wait vn1 --state ready --timeout 60"
expect_eq "vn1 failed" "$(sqlite3 "$VDB" "select state from nodes where hostname = 'vn1'")" failed
run1="$(sqlite3 "$VDB" "select status || ': ' || message from runs where node = 'vn1' order by id desc limit 1")"
[[ "$run1" =~ ^(unreachable|failed) ]] && pass "vn1's run: $run1" || fail "vn1's run: $run1"
check "the reason names the task" bash -c "sqlite3 '$VDB' \"select reason from nodes where hostname = 'vn1'\" | grep -q long"
check "vn2 is ready" ctl wait vn2 --state ready --timeout 60
check "the events name vn1" bash -c "'$PROVISIONCTL' events --node vn1 | grep -q 'run '"

echo "== a full disk: errors say so, nothing committed is lost, it works again once there is room"
FD="$WORK/full"
mkdir -p "$FD/mnt"
printf 'listen: 127.0.0.1:0\ndata_dir: %s\nprofiles_dir: %s\nplaybooks_dir: %s\nimages_dir: %s\ntools_dir: %s\nimport_dir: %s\n' \
  "$FD/mnt/data" "$REPO/profiles" "$REPO/playbooks" "$REPO/images" "$(dirname "$PROVISIOND")" "$WORK" >"$FD/config.yaml"
# provisiond in a private mount namespace whose data directory is an 8 MiB
# tmpfs (nothing is mounted on the host); files are read through nsenter.
unshare -m --propagation private sh -c "mount -t tmpfs -o size=8m tmpfs '$FD/mnt' && exec '$PROVISIOND' --config '$FD/config.yaml'" \
  >"$WORK/provisiond-full.log" 2>&1 &
FPID=$!
PIDS+=("$FPID")
in_ns() { nsenter -t "$FPID" -m "$@"; }
wait_for 20 "provisiond starts on the small disk" in_ns test -s "$FD/mnt/data/provisiond.url"
FURL="$(in_ns cat "$FD/mnt/data/provisiond.url")"
FTOK="$(in_ns awk '!/^#/ && NF {print $1; exit}' "$FD/mnt/data/tokens")"
fauth=(-H "Authorization: Bearer $FTOK")
for i in 1 2 3; do
  code "${fauth[@]}" -X POST "$FURL/api/v1/nodes" -d "{\"hostname\":\"f$i\",\"mac\":\"52:54:00:f0:00:0$i\"}" >/dev/null
done
in_ns sh -c "head -c 9000000 /dev/zero > '$FD/mnt/filler'" 2>/dev/null || true
head -c 1048576 /dev/urandom >"$WORK/k"
# A kernel by its header (the import checks) that is also gzip data by its first bytes.
printf 'HdrS' | dd of="$WORK/k" bs=1 seek=514 conv=notrunc status=none
printf '\037\213' | dd of="$WORK/k" bs=1 seek=0 conv=notrunc status=none
c="$(code "${fauth[@]}" -X POST "$FURL/api/v1/images/lab/import" -d "{\"kernel\":\"$WORK/k\",\"initrd\":\"$WORK/k\"}")"
[[ "$c" =~ ^5 ]] && grep -qiE 'space|full' "$WORK/body" && pass "image import on a full disk -> $c: $(head -c 200 "$WORK/body")" ||
  fail "image import on a full disk -> $c: $(head -c 300 "$WORK/body")"
n=0
for i in $(seq 4 60); do
  c="$(code "${fauth[@]}" -X POST "$FURL/api/v1/nodes" -d "{\"hostname\":\"f$i\",\"mac\":\"52:54:00:f0:00:$(printf %02x "$i")\"}")"
  [ "$c" = 201 ] && n=$((n + 1)) && continue
  break
done
[[ "$c" =~ ^5 ]] && grep -qiE 'full|space' "$WORK/body" && pass "enroll on a full disk (after $n more) -> $c: $(head -c 200 "$WORK/body")" ||
  fail "enroll on a full disk -> $c: $(head -c 300 "$WORK/body")"
kill -0 "$FPID" && pass "provisiond keeps running on a full disk" || fail "provisiond died on a full disk"
in_ns rm -f "$FD/mnt/filler"
expect_eq "with room again enrolls work" \
  "$(code "${fauth[@]}" -X POST "$FURL/api/v1/nodes" -d '{"hostname":"fz","mac":"52:54:00:f0:01:00"}')" 201
expect_eq "every node answered 201 is there" \
  "$(curl -s -H "Authorization: Bearer $FTOK" "$FURL/api/v1/nodes" | grep -o '"hostname":"f[0-9z]*"' | wc -l)" $((3 + n + 1))
expect_eq "no image version was left by the failed import" "$(curl -s -H "Authorization: Bearer $FTOK" "$FURL/api/v1/images" | grep -c '"ref"' || true)" 0

echo "== an image build that fills the disk (mmdebstrap into the 8 MiB store, from the mirror apt uses)"
rc=0
PROVISIOND_URL="$FURL" PROVISIOND_TOKEN="$FTOK" ctl image build lab >"$WORK/build-full.out" 2>&1 || rc=$?
if grep -q "cannot be reached" "$WORK/build-full.out"; then
  echo "SKIP: the mirror cannot be reached from here, so no build could fill the disk: $(tail -1 "$WORK/build-full.out")"
else
  [ "$rc" -ne 0 ] && grep -qiE 'no space left|disk full' "$WORK/build-full.out" &&
    pass "image build on a full disk fails and says why: $(grep -iE -m1 'no space left|disk full' "$WORK/build-full.out" | head -c 300)" ||
    fail "image build on a full disk (exit $rc): $(tail -5 "$WORK/build-full.out")"
  expect_eq "the failed build left no work directory" "$(in_ns find "$FD/mnt/data/images" -maxdepth 2 -name '.build-*' | wc -l)" 0
  expect_eq "the failed build left no image version" "$(curl -s -H "Authorization: Bearer $FTOK" "$FURL/api/v1/images" | grep -c '"ref"' || true)" 0
  expect_eq "after the failed build enrolls work" \
    "$(code "${fauth[@]}" -X POST "$FURL/api/v1/nodes" -d '{"hostname":"fy","mac":"52:54:00:f0:01:01"}')" 201
  kill -0 "$FPID" && pass "provisiond keeps running after the failed build" || fail "provisiond died in the build"
fi
expect_eq "the database passes integrity_check" "$(in_ns sqlite3 "$FD/mnt/data/provisiond.db" 'PRAGMA integrity_check')" ok

finish
