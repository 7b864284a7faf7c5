#!/usr/bin/env bash
# Real OpenSSH servers on loopback as SSH targets for integration tests and
# benchmarks: each its own sshd (/usr/sbin/sshd -D), port, ed25519 host key
# and log, all sharing one authorized key.
#
#   sshd-targets.sh start N DIR [PUBKEY_FILE]
#       Starts targets t1..tN. PUBKEY_FILE is the public key allowed to log
#       in (as any user, root included); without it a key pair is made at
#       DIR/id_ed25519{,.pub}. Target i listens on 127.0.0.1 on its own
#       free port; with SSHD_TARGETS_SHARED_PORT=1 all listen on one free port,
#       target i on its own address 127.0.X.Y (127.0.1.1 for t1, 127.0.1.2 for
#       t2, ...; 254 per X), as nodes with one sshd port each. Writes
#         DIR/targets  one line per target:
#                      NAME PORT HOSTKEY_TYPE HOSTKEY_BASE64 ADDRESS
#         DIR/pids     one line per target: NAME PID (the listening sshd)
#       and prints DIR/targets. Fails (and stops what it started) when a
#       target is not listening within SSHD_START_TIMEOUT seconds (60:
#       the test command runs a lab test beside on two CPUs).
#       SSHD_TARGETS_KEX sets sshd's KexAlgorithms (default
#       curve25519-sha256,curve25519-sha256@libssh.org) and
#       SSHD_TARGETS_MAX_STARTUPS its MaxStartups (default 200), for
#       benchmarks that pin the key exchange or open many connections at once.
#   sshd-targets.sh crash DIR NAME
#       SIGKILLs that target's sshd and every sshd process serving one of its
#       connections, as when the node loses power.
#   sshd-targets.sh stop DIR
#       Stops the sshd processes listed in DIR/pids and their connection
#       processes, and removes the sessions' TMPDIR (a directory outside
#       DIR named in DIR/tmpdir); leaves DIR (the caller owns it).
#
# Needs root (sshd's privilege separation) and openssh-server. Targets are
# started in parallel; 64 start in well under a second.
set -euo pipefail

SSHD=/usr/sbin/sshd
die() {
  echo "sshd-targets: $*" >&2
  exit 1
}

# Listening TCP endpoints as ADDR:PORT (IPv4, 0.0.0.0 for any) and :PORT
# (IPv6, any address), from /proc/net/tcp* (state 0A).
listening() {
  local _sl addr _rem st _rest h
  while read -r _sl addr _rem st _rest; do
    [ "$st" = "0A" ] || continue
    h="${addr%%:*}"
    printf '%d.%d.%d.%d:%d\n' "0x${h:6:2}" "0x${h:4:2}" "0x${h:2:2}" "0x${h:0:2}" "$((16#${addr##*:}))"
  done </proc/net/tcp
  while read -r _sl addr _rem st _rest; do
    [ "$st" = "0A" ] && echo ":$((16#${addr##*:}))"
  done </proc/net/tcp6
  return 0
}

# The pids of every process below $1 (its connection processes), from /proc.
descendants() {
  local -A children=()
  local stat rest pid ppid
  for stat in /proc/[0-9]*/stat; do
    { read -r rest <"$stat"; } 2>/dev/null || continue
    pid="${rest%% *}"
    rest="${rest##*) }" # after "(comm) ": state ppid ...
    ppid="${rest#* }"
    ppid="${ppid%% *}"
    children[$ppid]+=" $pid"
  done
  local -a queue=("$1")
  while [ ${#queue[@]} -gt 0 ]; do
    pid="${queue[0]}"
    queue=("${queue[@]:1}")
    for rest in ${children[$pid]:-}; do
      echo "$rest"
      queue+=("$rest")
    done
  done
}

# True while $1 exists and is not a zombie (an orphaned sshd may wait for a
# reaper that never comes in a container).
running() {
  local st
  st="$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" || return 1
  [ -n "$st" ] && [ "$st" != Z ]
}

# SIGTERM (or $2) to a listener and everything below it, then a bounded wait.
kill_tree() {
  local pid="$1" sig="${2:-TERM}" all
  [[ "$pid" =~ ^[0-9]+$ ]] || return 0
  # Only sshd processes: a pid file left from an earlier run may name a pid
  # that now belongs to someone else.
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "sshd" ] || return 0
  all="$pid $(descendants "$pid")"
  kill -s "$sig" $all 2>/dev/null || true
  for _ in $(seq 100); do
    running "$pid" || return 0
    sleep 0.05
  done
  kill -s KILL $all 2>/dev/null || true
}

write_config() {
  local dir="$1" i="$2" port="$3"
  cat >"$dir/sshd_config.$i" <<EOF
# Port and ListenAddress come from the command line (-p, -o).
HostKey $dir/t$i/ssh_host_ed25519_key
PidFile $dir/t$i/sshd.pid
AuthorizedKeysFile $dir/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
KexAlgorithms ${SSHD_TARGETS_KEX:-curve25519-sha256,curve25519-sha256@libssh.org}
MaxStartups ${SSHD_TARGETS_MAX_STARTUPS:-200}
MaxSessions 50
PerSourceMaxStartups none
PerSourceNetBlockSize 32:128
PrintMotd no
PrintLastLog no
UseDNS no
LogLevel INFO
# Temporary files of the sessions (provisiond's shell workers) go to a
# directory that stop removes, also those a crash leaves behind.
SetEnv TMPDIR=$(cat "$dir/tmpdir")
EOF
}

# Launches target i on ADDRESS:PORT; sets LAUNCHED_PID (no subshell: the sshd must be
# our child so that a failed start can be waited for).
launch() {
  local dir="$1" i="$2" port="$3" address="$4"
  write_config "$dir" "$i" "$port"
  # -D: stay in the foreground so $! is the listener; no fd of ours stays
  # open in it (ctest waits for its pipes to close).
  : >"$dir/t$i/sshd.log"
  # The targets stand in for nodes, whose root has Debian's own .bashrc:
  # bash reads ~/.bashrc in every SSH session (sshd runs the login shell),
  # and this machine's root's may start programs (pyenv's setup took 125 ms
  # a session here; tests/bench/README.md). In a mount namespace of their own (private:
  # nothing leaks out), root's .bashrc is Debian's default. unshare and sh
  # exec: $! is the sshd.
  local home_rc=/dev/null
  [ -r /usr/share/base-files/dot.bashrc ] && home_rc=/usr/share/base-files/dot.bashrc
  unshare --mount --propagation private sh -c \
    'if [ -f /root/.bashrc ]; then mount --bind "$1" /root/.bashrc || exit 1; fi; shift; exec "$@"' \
    sh "$home_rc" "$SSHD" -D -f "$dir/sshd_config.$i" -p "$port" -o ListenAddress="$address" \
    -E "$dir/t$i/sshd.log" </dev/null >>"$dir/t$i/sshd.log" 2>&1 &
  LAUNCHED_PID=$!
}

# A random port in 20000-59999 that nothing listened on at start and that we
# have not handed out yet; sets PICKED_PORT.
declare -A BUSY=()
pick_port() {
  local p
  while :; do
    p=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
    if [ -z "${BUSY[$p]:-}" ]; then
      BUSY[$p]=1
      PICKED_PORT=$p
      return
    fi
  done
}

cmd_start() {
  local n="$1" dir="$2" pubkey="${3:-}"
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] || die "start: N must be a positive number, not '$n'"
  [ -x "$SSHD" ] || die "$SSHD is missing: install openssh-server (scripts/install-deps.sh)"
  [ "$(id -u)" -eq 0 ] || die "start needs root (sshd privilege separation)"
  mkdir -p "$dir" || die "cannot create $dir"
  dir="$(cd "$dir" && pwd)"
  # The privilege separation directory sshd chroots into.
  [ -d /run/sshd ] || install -d -m 0755 /run/sshd || die "cannot create /run/sshd"

  if [ -z "$pubkey" ]; then
    [ -f "$dir/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C sshd-targets -f "$dir/id_ed25519" ||
      die "cannot make $dir/id_ed25519"
    pubkey="$dir/id_ed25519.pub"
  fi
  [ -r "$pubkey" ] || die "start: cannot read the public key $pubkey"
  cp "$pubkey" "$dir/authorized_keys"
  # World-writable like /tmp (sessions may run as other users), outside DIR
  # (which may be private to its owner). In RAM as a node's /tmp is (the
  # overlay's upper layer): on /dev/shm where it is a tmpfs with 1 GiB free,
  # else under $TMPDIR or /tmp. (A shell worker makes three files per task;
  # on this machine's ext4 that was a third of a kept session's command.)
  if [ ! -s "$dir/tmpdir" ] || [ ! -d "$(cat "$dir/tmpdir")" ]; then
    local base=${TMPDIR:-/tmp}
    if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] &&
      [ "$(df -Pk /dev/shm | awk 'NR == 2 { print $4 }')" -ge 1048576 ]; then
      base=/dev/shm
    fi
    mktemp -d "$base/sshd-targets.XXXXXX" >"$dir/tmpdir" || die "cannot make a temporary directory"
    chmod 1777 "$(cat "$dir/tmpdir")"
  fi

  # Host keys, in parallel (each ssh-keygen is a few milliseconds).
  local i
  for i in $(seq "$n"); do
    mkdir -p "$dir/t$i"
    rm -f "$dir/t$i/ssh_host_ed25519_key" "$dir/t$i/ssh_host_ed25519_key.pub" "$dir/t$i/sshd.log"
    ssh-keygen -q -t ed25519 -N '' -C "t$i" -f "$dir/t$i/ssh_host_ed25519_key" &
  done
  wait || die "ssh-keygen failed"

  # Ports: random ones in 20000-59999 that nothing listens on now; a target
  # that loses a race for its port exits, and is relaunched on another.
  local p
  for p in $(listening); do BUSY[${p##*:}]=1; done
  local -a port pid addr
  : >"$dir/pids"
  [ -z "${SSHD_TARGETS_SHARED_PORT:-}" ] || pick_port
  for i in $(seq "$n"); do
    if [ -n "${SSHD_TARGETS_SHARED_PORT:-}" ]; then
      addr[$i]="127.0.$((1 + (i - 1) / 254)).$(((i - 1) % 254 + 1))"
    else
      addr[$i]=127.0.0.1
      pick_port
    fi
    port[$i]=$PICKED_PORT
    launch "$dir" "$i" "${port[$i]}" "${addr[$i]}"
    pid[$i]=$LAUNCHED_PID
    echo "t$i ${pid[$i]}" >>"$dir/pids"
  done

  local deadline=$((SECONDS + ${SSHD_START_TIMEOUT:-60})) pending=1 retries=0
  while [ "$pending" -ne 0 ]; do
    pending=0
    declare -A up=()
    for p in $(listening); do up[$p]=1; done
    for i in $(seq "$n"); do
      [ -n "${up[${addr[$i]}:${port[$i]}]:-}" ] && running "${pid[$i]}" && continue
      if ! running "${pid[$i]}"; then
        wait "${pid[$i]}" 2>/dev/null || true
        if grep -q "Cannot bind any address" "$dir/t$i/sshd.log" 2>/dev/null &&
          [ -z "${SSHD_TARGETS_SHARED_PORT:-}" ] && [ $retries -lt 20 ]; then
          retries=$((retries + 1))
          pick_port
          port[$i]=$PICKED_PORT
          launch "$dir" "$i" "${port[$i]}" "${addr[$i]}"
          pid[$i]=$LAUNCHED_PID
          sed -i "s/^t$i .*/t$i ${pid[$i]}/" "$dir/pids"
        else
          local log
          log="$(tail -n 5 "$dir/t$i/sshd.log" 2>/dev/null)"
          cmd_stop "$dir"
          die "target t$i (port ${port[$i]}) exited at start: $log"
        fi
      fi
      pending=$((pending + 1))
    done
    unset up
    [ "$pending" -eq 0 ] && break
    if [ $SECONDS -ge "$deadline" ]; then
      cmd_stop "$dir"
      die "$pending of $n targets not listening after ${SSHD_START_TIMEOUT:-60}s (logs: $dir/t*/sshd.log)"
    fi
    sleep 0.02
  done

  : >"$dir/targets.tmp"
  for i in $(seq "$n"); do
    read -r ktype kb64 _ <"$dir/t$i/ssh_host_ed25519_key.pub"
    echo "t$i ${port[$i]} $ktype $kb64 ${addr[$i]}" >>"$dir/targets.tmp"
  done
  mv "$dir/targets.tmp" "$dir/targets"
  cat "$dir/targets"
}

cmd_crash() {
  local dir="$1" name="$2" n p found=0
  [ -f "$dir/pids" ] || die "crash: no $dir/pids"
  while read -r n p; do
    [ "$n" = "$name" ] || continue
    found=1
    kill_tree "$p" KILL
  done <"$dir/pids"
  [ "$found" -eq 1 ] || die "crash: no target $name in $dir/pids"
}

cmd_stop() {
  local dir="$1" n p
  [ -f "$dir/pids" ] || return 0
  local -a listeners=()
  while read -r n p; do listeners+=("$p"); done <"$dir/pids"
  for p in "${listeners[@]}"; do kill_tree "$p" TERM & done
  wait
  rm -f "$dir/pids"
  if [ -s "$dir/tmpdir" ]; then
    case "$(cat "$dir/tmpdir")" in */sshd-targets.*) rm -rf "$(cat "$dir/tmpdir")" ;; esac
    rm -f "$dir/tmpdir"
  fi
}

case "${1:-}" in
  start)
    [ $# -ge 3 ] || die "usage: $0 start N DIR [PUBKEY_FILE]"
    cmd_start "$2" "$3" "${4:-}"
    ;;
  crash)
    [ $# -eq 3 ] || die "usage: $0 crash DIR NAME"
    cmd_crash "$2" "$3"
    ;;
  stop)
    [ $# -eq 2 ] || die "usage: $0 stop DIR"
    cmd_stop "$2"
    ;;
  *) die "usage: $0 start N DIR [PUBKEY_FILE] | crash DIR NAME | stop DIR" ;;
esac
