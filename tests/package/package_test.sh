#!/usr/bin/env bash
# The Debian package, as an operator installs it: built from the checkout
# (scripts/package.sh), lintian clean of errors, installed with apt into a
# fresh Debian 12 root (mmdebstrap, with systemd), where:
#   - provisiond uses the installed paths and its default config passes --check;
#   - systemd-analyze verify accepts the unit;
#   - provisiond started from the installed files answers its API, the
#     packaged provisionctl talks to it, and a second provisiond on the same
#     data folder is refused;
#   - a backup taken while it runs restores (same nodes, same token);
#   - booted with systemd as PID 1 (systemd-nspawn: these machines have no
#     systemd of their own), the service starts at boot and again after a
#     reboot, `systemctl restart` keeps the inventory, a kill -9 is restarted
#     by systemd, reload rereads the tokens, stop stops it with dnsmasq and
#     nfs-ganesha;
#   - a newer package installed over it backs up first (preinst) and keeps
#     the inventory; an older one that would meet a newer schema is refused
#     before any file is replaced;
#   - a purge removes the state and keeps the backups.
# Everything in the root runs in a network namespace of its own (loopback only).
# Usage: package_test.sh [DEB]   (root; DEB: an already built package, else
# scripts/package.sh builds one)
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
DEB="${1:-}"
[ -z "$DEB" ] || DEB="$(realpath "$DEB")"
NS="provpkg$$"
SERVER_PID=""
CLEANUP_HOOKS+=("ip netns del $NS 2>/dev/null")

ROOT="$WORK/root"
# CMD... run inside the installed root, in the test's network namespace, with
# /proc and /dev. exec_in_root replaces the shell: the PID of `exec_in_root ... &`
# is the command's own.
in_root() {
  exec_in_root "$@" &
  wait $!
}
exec_in_root() {
  exec ip netns exec "$NS" unshare --mount sh -c \
    'mount -t proc proc "$0/proc" && mount --bind /dev "$0/dev" && exec chroot "$0" "$@"' "$ROOT" "$@"
}

echo "== the package"
if [ -z "$DEB" ]; then
  "$REPO/scripts/package.sh" >"$WORK/package.log" 2>&1 || { tail -n 40 "$WORK/package.log"; exit 1; }
  DEB="$(tail -n 1 "$WORK/package.log")"
fi
version="$(dpkg-deb -f "$DEB" Version)"
echo "$DEB ($version)"
lintian --fail-on error "$DEB" >"$WORK/lintian" 2>&1 && pass "lintian: no errors" ||
  fail "lintian found errors: $(grep '^E:' "$WORK/lintian" | head -n 20)"
if grep -E "no-manual-page|groff-message|manpage-has" "$WORK/lintian"; then
  fail "lintian has something to say about the man pages"
else
  pass "lintian: the man pages are there, nothing said about them"
fi
dpkg-deb -c "$DEB" >"$WORK/contents"
for f in ./usr/share/man/man8/provisiond.8.gz ./usr/share/man/man1/provisionctl.1.gz \
  ./usr/share/bash-completion/completions/provisionctl; do
  grep -q " $f\$" "$WORK/contents" || fail "the package has no $f"
done
pass "the package holds provisiond(8), provisionctl(1) and provisionctl's bash completion"

echo "== installed with apt into a fresh Debian 12 root"
mmdebstrap --variant=minbase --hook-dir=/usr/share/mmdebstrap/hooks/file-mirror-automount \
  --include="systemd,systemd-sysv,dbus,$DEB" bookworm "$ROOT" http://deb.debian.org/debian >"$WORK/mmdebstrap.log" 2>&1 ||
  { tail -n 30 "$WORK/mmdebstrap.log"; exit 1; }
pass "apt installed $(basename "$DEB") and its dependencies"
ip netns add "$NS"
ip netns exec "$NS" ip link set lo up

check "provisiond --version" in_root provisiond --version
expect_output "the installed provisiond uses the installed data" "data /usr/share/provisiond, node tools /usr/lib/provisiond"
check "the default config passes provisiond --check" in_root provisiond --check
check "systemd-analyze verify provisiond.service" in_root systemd-analyze verify /lib/systemd/system/provisiond.service
[ -s "$WORK/out" ] && fail "systemd-analyze verify printed: $(cat "$WORK/out")"
check "the service is enabled" test -L "$ROOT/etc/systemd/system/multi-user.target.wants/provisiond.service"
check "provisionctl --help lists the commands" in_root provisionctl --help
expect_output "provisionctl --help" "provisionctl node list"

start_server() {
  rm -f "$ROOT/var/lib/provisiond/provisiond.url"
  exec_in_root /usr/sbin/provisiond --config /etc/provisiond/provisiond.yaml >>"$WORK/provisiond.log" 2>&1 &
  SERVER_PID=$!  # provisiond's own: every step before it execs
  PIDS+=("$SERVER_PID")
  for _ in $(seq 1 200); do
    [ -s "$ROOT/var/lib/provisiond/provisiond.url" ] && return 0
    kill -0 "$SERVER_PID" 2>/dev/null || { fail "provisiond exited: $(tail -n 5 "$WORK/provisiond.log")"; return 1; }
    sleep 0.05
  done
  fail "provisiond did not write its URL in 10 s"
  return 1
}
stop_server() {
  kill -TERM "$SERVER_PID" && wait "$SERVER_PID" || true
  SERVER_PID=""
}
ctl() { in_root provisionctl --token-file /var/lib/provisiond/tokens "$@"; }

echo "== provisiond from the installed files"
start_server
pass "provisiond started with /etc/provisiond/provisiond.yaml"
check "provisionctl status" ctl status
check "provisionctl node add" ctl node add pkg0 --mac 52:54:00:a0:00:01
check "provisionctl node add" ctl node add pkg1 --mac 52:54:00:a0:00:02
check "provisionctl node list" ctl node list
expect_output "node list shows the node" "pkg1"
# The installed bash completion: verbs from the table, node names from
# provisiond (a token in the environment).
check "bash completion of 'provisionctl node show pkg'" in_root bash -c \
  'PROVISIOND_TOKEN="$(awk "!/^#/ && NF {print \$1; exit}" /var/lib/provisiond/tokens)" &&
   export PROVISIOND_TOKEN && source /usr/share/bash-completion/completions/provisionctl &&
   COMP_WORDS=(provisionctl node show pkg) COMP_CWORD=3 && _provisionctl &&
   echo "names: ${COMPREPLY[*]}" &&
   COMP_WORDS=(provisionctl image b) COMP_CWORD=2 && _provisionctl && echo "verbs: ${COMPREPLY[*]}"'
expect_output "the completion offers the nodes" "names: pkg0 pkg1"
expect_output "the completion offers the verbs" "verbs: build"
check "provisiond(8) lists the settings" in_root sh -c 'zcat /usr/share/man/man8/provisiond.8.gz | grep -c "^\.TP"'
in_root provisiond --config /etc/provisiond/provisiond.yaml >"$WORK/out" 2>&1 &&
  fail "a second provisiond on the same data folder started" || true
expect_output "a second provisiond on the data folder is refused" "another provisiond (or a restore) is using /var/lib/provisiond"
check "provisiond backup while it runs" in_root provisiond backup /root/running.tar
expect_output "the backup counts the nodes" "inventory of 2 node(s)"
in_root provisiond restore /root/running.tar >"$WORK/out" 2>&1 && fail "a restore ran while provisiond runs" || true
expect_output "a restore while provisiond runs is refused" "stop it first"
ctl node add pkg2 --mac 52:54:00:a0:00:03 >/dev/null
token_before="$(cat "$ROOT/var/lib/provisiond/tokens")"
stop_server

check "provisiond restore" in_root provisiond restore /root/running.tar
expect_output "restore says where the replaced state went" "what was there before is in /var/lib/provisiond/before-restore-"
start_server
check "node list after the restore" ctl node list
expect_output "the restored inventory has the backed-up nodes" "pkg1"
grep -q pkg2 "$WORK/out" && fail "pkg2, added after the backup, is in the restored inventory" ||
  pass "the restored inventory is the one backed up"
[ "$(cat "$ROOT/var/lib/provisiond/tokens")" = "$token_before" ] && pass "the tokens came back" ||
  fail "the tokens differ after the restore"
stop_server

echo "== the service under systemd (the root booted as a container, systemd as its PID 1)"
# A cluster interface in the namespace, and init's config for it: the
# service runs dnsmasq and nfs-ganesha as its children.
ip link add pkgc0 netns "$NS" type veth peer name pkgs0 netns "$NS"
ip -n "$NS" addr add 10.88.0.1/24 dev pkgc0
ip -n "$NS" link set pkgc0 up
ip -n "$NS" link set pkgs0 up
check "provisiond init from the package" in_root provisiond init --interface pkgc0 --dhcp-mode full
expect_output "init replaced the package's default config" "kept the old config as /etc/provisiond/provisiond.yaml.before-init"
CONTAINER_PID=""
in_box() { nsenter -t "$CONTAINER_PID" -a "$@"; }
# service_up: provisiond is active under systemd and answers its API.
service_up() {
  [ "$(in_box systemctl is-active provisiond 2>/dev/null)" = active ] &&
    in_box provisionctl --token-file /var/lib/provisiond/tokens status >/dev/null 2>&1
}
main_pid() { in_box systemctl show -p MainPID --value provisiond; }
# boot_box: the root booted with systemd as PID 1; returns once systemd has
# started provisiond (enabled: at boot) and it answers.
boot_box() {
  systemd-nspawn --quiet -D "$ROOT" --boot --register=no --keep-unit --console=passive \
    --capability=CAP_NET_ADMIN \
    --network-namespace-path="/run/netns/$NS" --machine="provpkg$$" </dev/null >>"$WORK/container.log" 2>&1 &
  NSPAWN_PID=$!
  PIDS+=("$NSPAWN_PID")
  CONTAINER_PID=""
  for _ in $(seq 1 100); do
    # nspawn's child is a short-lived helper until it becomes the container's systemd.
    CONTAINER_PID="$(ps -o pid=,comm= --ppid "$NSPAWN_PID" | awk '$2 == "systemd" {print $1; exit}' || true)"
    [ -n "$CONTAINER_PID" ] && break
    sleep 0.1
  done
  [ -n "$CONTAINER_PID" ] || { fail "the container did not start: $(tail -n 20 "$WORK/container.log")"; exit 1; }
  # The container's PID 1 killed takes its whole PID namespace with it.
  CLEANUP_HOOKS+=("kill -9 $CONTAINER_PID 2>/dev/null")
  wait_for 120 "systemd started provisiond at boot" service_up || {
    tail -n 20 "$WORK/container.log"
    in_box journalctl -u provisiond --no-pager | tail -n 30
    exit 1
  }
}
poweroff_box() {
  in_box systemctl poweroff >/dev/null 2>&1 || true
  wait_for 60 "the container powered off" sh -c "! kill -0 $NSPAWN_PID 2>/dev/null"
}
boot_box
check "the restored inventory, served by the service" in_box provisionctl --token-file /var/lib/provisiond/tokens node list
expect_output "node list under systemd" "pkg1"
[ "$(in_box systemctl is-active nfs-ganesha 2>/dev/null || true)" != active ] &&
  pass "the system's nfs-ganesha service is stopped (Conflicts=)" || fail "nfs-ganesha.service runs beside provisiond"
check "node add under systemd" in_box provisionctl --token-file /var/lib/provisiond/tokens node add sd0 --mac 52:54:00:a0:00:10
first_pid="$(main_pid)"
check "systemctl restart provisiond" in_box systemctl restart provisiond
wait_for 60 "provisiond answers after the restart" service_up
check "node list after the restart" in_box provisionctl --token-file /var/lib/provisiond/tokens node list
expect_output "systemctl restart keeps the inventory" "sd0"
[ "$(main_pid)" != "$first_pid" ] && pass "the restart started a new process" || fail "MainPID did not change"
killed="$(main_pid)"
in_box kill -9 "$killed"
restarted() { local p; p="$(main_pid)"; [ -n "$p" ] && [ "$p" != 0 ] && [ "$p" != "$killed" ] && service_up; }
wait_for 60 "systemd restarts provisiond after a kill -9" restarted
expect_eq "systemd counted the restart" "$(in_box systemctl show -p NRestarts --value provisiond)" 1
check "node list after the kill -9" in_box provisionctl --token-file /var/lib/provisiond/tokens node list
expect_output "the kill -9 lost nothing" "sd0"
token_loads() { in_box journalctl -u provisiond --no-pager | grep -c 'loaded 1 API token' || true; }
loads_before="$(token_loads)"
check "systemctl reload (SIGHUP: the tokens)" in_box systemctl reload provisiond
reloaded() { [ "$(token_loads)" -gt "$loads_before" ]; }
wait_for 30 "the reload reread the tokens" reloaded
children() { in_box systemd-cgls --no-pager -u provisiond.service; }
check "the service's control group" children
grep -q dnsmasq "$WORK/out" || in_box journalctl -u provisiond --no-pager | tail -n 30
expect_output "dnsmasq runs in the service's control group" "dnsmasq"
expect_output "nfs-ganesha runs in the service's control group" "ganesha.nfsd"
check "systemctl stop provisiond" in_box systemctl stop provisiond
in_box pgrep -x dnsmasq >"$WORK/out" 2>&1 && fail "dnsmasq outlived the service: $(cat "$WORK/out")" ||
  pass "stopping the service stopped dnsmasq"
in_box pgrep -x ganesha.nfsd >"$WORK/out" 2>&1 && fail "ganesha outlived the service" ||
  pass "stopping the service stopped nfs-ganesha"
[ "$(in_box systemctl is-active provisiond || true)" = inactive ] && pass "stopped" || fail "provisiond still active"
poweroff_box
boot_box
pass "after a reboot systemd starts provisiond again"
check "node list after the reboot" in_box provisionctl --token-file /var/lib/provisiond/tokens node list
expect_output "the reboot kept the inventory" "sd0"
poweroff_box

echo "== upgrade and downgrade"
newer="$WORK/provisiond_9.9.9_amd64.deb"
dpkg-deb -R "$DEB" "$WORK/repack"
sed -i 's/^Version: .*/Version: 9.9.9/' "$WORK/repack/DEBIAN/control"
sed -i 's/^SCHEMA=.*/SCHEMA=999/; s/^VERSION=.*/VERSION=9.9.9/' "$WORK/repack/DEBIAN/preinst"
dpkg-deb --root-owner-group -Zxz -b "$WORK/repack" "$newer" >/dev/null
cp "$newer" "$DEB" "$ROOT/root/"
check "the newer package installs over the older one" in_root dpkg -i "/root/$(basename "$newer")"
check "the upgrade made a backup first" sh -c "ls '$ROOT'/var/backups/provisiond/provisiond-$version-*.tar"
check "the upgrade's backup verifies" in_root sh -c "provisiond restore --verify /var/backups/provisiond/provisiond-$version-*.tar"
expect_output "the upgrade's backup holds the inventory (pkg0, pkg1, sd0)" "3 node(s)"
# The inventory as a newer provisiond would leave it.
sqlite3 "$ROOT/var/lib/provisiond/provisiond.db" "PRAGMA user_version = 500"
in_root dpkg -i "/root/$(basename "$DEB")" >"$WORK/out" 2>&1 && fail "the downgrade was installed" ||
  pass "the downgrade over a newer schema is refused"
expect_output "the refusal names the schema" "has schema version 500"
[ "$(in_root dpkg-query -W -f '${Version}' provisiond)" = 9.9.9 ] && pass "the newer version stays installed" ||
  fail "the installed version changed"

echo "== purge"
check "dpkg --purge" in_root dpkg --purge provisiond
[ ! -e "$ROOT/var/lib/provisiond" ] && [ ! -e "$ROOT/etc/provisiond" ] && pass "purge removed the state and the config" ||
  fail "purge left /var/lib/provisiond or /etc/provisiond"
ls "$ROOT"/var/backups/provisiond/*.tar >/dev/null 2>&1 && pass "purge kept the backups" || fail "purge removed the backups"

finish
