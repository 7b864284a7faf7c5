# shellcheck shell=bash
# tests/lab/lab.sh: a private netboot lab (network namespace + bridge + QEMU VMs on taps).
#
# Source it from a bash script:   source tests/lab/lab.sh; lab_init mytest
#
# Nothing here touches the host's interfaces: the bridge, its addresses and every tap live in a
# network namespace created by lab_init and deleted by lab_cleanup (run from the EXIT/INT/TERM/HUP
# traps that lab_init installs). Every process the lab starts runs inside that namespace; cleanup
# kills them by PID (registered PIDs first, then any PID still in the namespace) and never by name.
#
# Functions (all return non-zero on failure; none calls exit except the signal traps):
#   lab_init NAME                       namespace pvlab-NAME-<pid>, lo up, bridge br0 10.99.0.1/24
#                                       (+ fd00:99::1/64 when IPv6 is available), work dir, traps.
#                                       Exports LAB_NS LAB_DIR LAB_BRIDGE LAB_ADDR LAB_PREFIX
#                                       LAB_ADDR6 (empty without IPv6).
#   lab_exec CMD...                     run CMD in the namespace (foreground).
#   lab_spawn LOGNAME CMD...            run CMD in the namespace in the background, stdout+stderr to
#                                       $LAB_DIR/LOGNAME.log; registers its PID (killed at cleanup);
#                                       sets LAB_LAST_PID. Call it directly, not inside $(...).
#   lab_register_pid PID                have cleanup kill PID too (only if it runs in the namespace).
#   lab_kill_hard PID                   SIGKILL PID (a crash) and return once it has exited, so its
#                                       files and locks are closed (a process with many threads and
#                                       a large address space takes a moment): what restarts it next
#                                       finds the data folder free. Fails after 30 s.
#   lab_wait_port PROTO PORT TIMEOUT_S  wait until something listens on PORT (tcp|udp) in the ns.
#   lab_start_repo [DIR] [PORT]         serve the lab's apt repository (DIR, default: lab_repo_dir from
#                                       tests/lab/lab-repo.sh, built or taken from the cache) over HTTP
#                                       on $LAB_ADDR:PORT (default 8081) in the namespace, for
#                                       profiles/lab's lab_apt_repo http://10.99.0.1:8081/debian-lab.
#                                       python3 -m http.server, PID registered (killed at cleanup) and
#                                       in LAB_REPO_PID; returns once it listens. Log: $LAB_DIR/repo.log.
#   lab_vm_start NAME MAC [bios|uefi|uefi-pxe|uefi-sb|uefi-http|disk]
#                                       power a VM on (again): tap in the namespace on br0, QEMU
#                                       (TCG) netbooting from a NIC with MAC (LAB_VM_NIC, default
#                                       virtio-net-pci). uefi-sb: OVMF's Secure Boot build with
#                                       Microsoft's keys enrolled (Secure Boot enforced), its own
#                                       PXE. uefi-http: OVMF with its PXE off, so it boots by UEFI
#                                       HTTP boot. disk: an installed machine, no netboot: it boots
#                                       its own OS from $LAB_DIR/NAME.root.img (a virtio disk,
#                                       serial "root") with QEMU's direct kernel boot of
#                                       NAME.vmlinuz + NAME.initrd, root=UUID=<the image's>, as
#                                       tests/lab/installed-disk.sh makes them; a guest reboot boots
#                                       the disk again the same way. Machine pc, NIC without a ROM.
#                                       LAB_VM_OTHER_NIC="MODEL MAC": a second NIC on the same
#                                       bridge, ahead of the boot NIC and not booted from. Files:
#                                       $LAB_DIR/NAME.serial (serial console), NAME.mon (HMP monitor
#                                       socket), NAME.pid, NAME.qemu.log, NAME.fw.log (firmware
#                                       debug port), NAME.vars.fd (UEFI NVRAM, kept across restarts).
#                                       Extra QEMU arguments: array LAB_VM_EXTRA_ARGS.
#   lab_vm_monitor NAME CMD             send one HMP command to the VM's monitor, print its reply.
#   lab_vm_stop NAME [TIMEOUT_S]        power off (hard, "quit"), wait for QEMU to exit.
#   lab_vm_reset NAME                   hard reset ("system_reset"); later lab_wait_serial calls
#                                       look only at serial output after the reset.
#   lab_vm_running NAME                 true while the VM's QEMU process is alive.
#   lab_vm_wait_exit NAME TIMEOUT_S     wait until the VM's QEMU has exited (e.g. guest poweroff).
#   lab_wait_serial NAME PATTERN TIMEOUT_S
#                                       wait until the serial log (since the last start/reset) has a
#                                       line matching the extended regex PATTERN. On timeout, or if
#                                       the VM exits without it, print the last 30 lines and
#                                       return 1.
#   lab_vm_elapsed NAME                 seconds since the VM's last start/reset (e.g. "4.82").
#   lab_hello_to_ready PROVISIONCTL NODE  seconds from NODE's last phone-home (an installed
#                                       machine: its adoption, or its reboot as its heartbeat
#                                       saw it) to the ready after it, from its
#                                       events (PROVISIOND_URL/TOKEN set); "?" if none.
#   lab_gc                              delete pvlab-*-PID namespaces and work dirs whose PID is
#                                       gone (runs killed with SIGKILL), killing what still runs
#                                       in those namespaces. Opt-in, never called implicitly.
#   lab_cleanup                         stop everything, delete the namespace and the work dir
#                                       (idempotent; kept if LAB_KEEP=1, for debugging).
#
# Settings (environment, read by lab_init / lab_vm_start):
#   LAB_KEEP=1            keep $LAB_DIR after cleanup (the namespace and processes always go).
#   LAB_TMPDIR            where the work dir is made (default ${TMPDIR:-/tmp}).
#   LAB_VM_MEM            MiB per VM (default 512).
#   LAB_OVMF_CODE / LAB_OVMF_VARS   UEFI firmware (default /usr/share/OVMF/OVMF_{CODE,VARS}_4M.fd).
#   LAB_OVMF_SB_CODE / LAB_OVMF_SB_VARS   the same for uefi-sb (OVMF_CODE_4M.secboot.fd,
#                         OVMF_VARS_4M.ms.fd: Secure Boot on, Microsoft's keys).
#   LAB_VM_NIC            the boot NIC's QEMU model (virtio-net-pci, e1000e, rtl8139, ...).
#   LAB_VM_OTHER_NIC      "MODEL MAC": a second NIC the VM does not boot from (empty: none).
#   LAB_IPXE_ROM          NIC option ROM for bios/uefi. Default: QEMU's own default for
#                         virtio-net-pci, efi-virtio.rom from ipxe-qemu (iPXE, legacy + EFI
#                         driver). Leave it unset: QEMU patches the PCI IDs only of its default
#                         ROM, and SeaBIOS silently skips the same file given explicitly (IDs
#                         differ), so the VM would not netboot.
#
# Notes (see /work/shared/LAB-NOTES.md): KVM hangs guests on these machines, so QEMU always runs
# with TCG. The bridge has a veth port so it has carrier (and its IPv6 link-local address) before
# any VM exists, which makes dnsmasq's router advertisements start deterministically.

LAB_PREFIX=24
LAB_ADDR=10.99.0.1
LAB_BRIDGE=br0
LAB_ADDR6_DEFAULT=fd00:99::1
: "${LAB_VM_MEM:=512}"
: "${LAB_OVMF_CODE:=/usr/share/OVMF/OVMF_CODE_4M.fd}"
: "${LAB_OVMF_VARS:=/usr/share/OVMF/OVMF_VARS_4M.fd}"
: "${LAB_IPXE_ROM:=}"
: "${LAB_OVMF_SB_CODE:=/usr/share/OVMF/OVMF_CODE_4M.secboot.fd}"
: "${LAB_OVMF_SB_VARS:=/usr/share/OVMF/OVMF_VARS_4M.ms.fd}"

_lab_log() { echo "lab: $*" >&2; }
# Microseconds since the epoch (EPOCHREALTIME's decimal separator follows the locale).
_lab_now_us() { echo "${EPOCHREALTIME//[!0-9]/}"; }

# ---------------------------------------------------------------- process helpers

# True if PID exists and is not a zombie.
_lab_alive() {
  local pid="$1" s
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  s="$(cat "/proc/$pid/stat" 2>/dev/null)" || return 1
  [ -n "$s" ] || return 1
  s="${s##*) }"
  [ "${s%% *}" != Z ]
}

# Inode of the lab namespace, and whether PID runs in it.
_lab_ns_ino() { stat -L -c %i "/run/netns/$LAB_NS" 2>/dev/null; }
_lab_pid_in_ns() {
  local pid="$1" ino
  ino="$(_lab_ns_ino)" || return 1
  [ -n "$ino" ] && [ "$(stat -L -c %i "/proc/$pid/ns/net" 2>/dev/null)" = "$ino" ]
}

# _lab_wait_gone TIMEOUT_S PID...: wait until none of the PIDs is alive.
_lab_wait_gone() {
  local timeout="$1"
  shift
  local deadline=$(($(_lab_now_us) + timeout * 1000000)) pid any
  while :; do
    any=0
    for pid in "$@"; do _lab_alive "$pid" && any=1 && break; done
    [ $any -eq 0 ] && return 0
    [ "$(_lab_now_us)" -ge "$deadline" ] && return 1
    sleep 0.05
  done
}

lab_register_pid() {
  [ -n "${LAB_DIR:-}" ] || { _lab_log "lab_register_pid: lab_init first"; return 1; }
  echo "$1" >>"$LAB_DIR/pids"
}

# ---------------------------------------------------------------- init / cleanup

lab_init() {
  local name="${1:-}"
  if [ -z "$name" ] || ! [[ "$name" =~ ^[A-Za-z0-9_.-]{1,32}$ ]]; then
    _lab_log "usage: lab_init NAME (letters, digits, _ . -; at most 32)"
    return 2
  fi
  if [ -n "${LAB_NS:-}" ] && [ -z "${_LAB_CLEANED:-}" ]; then
    _lab_log "lab_init: a lab ($LAB_NS) is already active in this shell"
    return 1
  fi
  if [ "$(id -u)" -ne 0 ]; then
    _lab_log "lab_init: needs root (network namespaces, taps)"
    return 1
  fi
  local tool
  for tool in ip qemu-system-x86_64 socat; do
    command -v "$tool" >/dev/null || { _lab_log "missing $tool (see tests/lab/packages.txt)"; return 1; }
  done

  LAB_NS="pvlab-$name-$$"
  _LAB_CLEANED=
  # The PID in the name lets lab_gc find the work dir of a lab whose shell was SIGKILLed.
  LAB_DIR="$(mktemp -d "${LAB_TMPDIR:-${TMPDIR:-/tmp}}/pvlab-$name-$$.XXXXXX")" || return 1
  # Readable by the unprivileged users that daemons (dnsmasq: nobody) drop to.
  chmod 0755 "$LAB_DIR"
  : >"$LAB_DIR/pids"
  echo 0 >"$LAB_DIR/tapcount"
  export LAB_NS LAB_DIR LAB_BRIDGE LAB_ADDR LAB_PREFIX
  _lab_install_traps

  if [ -e "/run/netns/$LAB_NS" ]; then
    _lab_log "lab_init: namespace $LAB_NS exists already (stale from an earlier run of pid $$?)"
    LAB_NS_OWNED=
    return 1
  fi
  ip netns add "$LAB_NS" || { _lab_log "lab_init: ip netns add $LAB_NS failed"; return 1; }
  LAB_NS_OWNED=1
  export LAB_NS_OWNED
  {
    # IPv6: no duplicate address detection wait for anything created in the namespace.
    # shellcheck disable=SC2016 # expanded by the inner sh
    ip netns exec "$LAB_NS" sh -c '
      for f in /proc/sys/net/ipv6/conf/all/accept_dad /proc/sys/net/ipv6/conf/default/accept_dad; do
        [ -w "$f" ] && echo 0 >"$f"; done; true' &&
      ip -n "$LAB_NS" link set lo up &&
      ip -n "$LAB_NS" link add "$LAB_BRIDGE" type bridge stp_state 0 forward_delay 0 mcast_snooping 0 &&
      ip -n "$LAB_NS" addr add "$LAB_ADDR/$LAB_PREFIX" dev "$LAB_BRIDGE" &&
      ip -n "$LAB_NS" link set "$LAB_BRIDGE" up
  } || { _lab_log "lab_init: setting up the bridge in $LAB_NS failed"; return 1; }
  # A veth pair with one end on the bridge gives br0 carrier (so its IPv6 link-local address and
  # dnsmasq's router advertisements) before any VM's tap exists. (No "dummy" driver here.)
  if ! { ip -n "$LAB_NS" link add name lab-carrier type veth peer name lab-carrier-p &&
    ip -n "$LAB_NS" link set lab-carrier master "$LAB_BRIDGE" up &&
    ip -n "$LAB_NS" link set lab-carrier-p up; }; then
    _lab_log "lab_init: no veth; br0 gets carrier with the first VM"
  fi
  LAB_ADDR6=
  if [ -d /proc/sys/net/ipv6 ] &&
    ip -n "$LAB_NS" addr add "$LAB_ADDR6_DEFAULT/64" dev "$LAB_BRIDGE" nodad 2>/dev/null; then
    LAB_ADDR6="$LAB_ADDR6_DEFAULT"
  else
    _lab_log "lab_init: no IPv6 in this kernel; iPXE will wait ~13 s for IPv6 configuration"
  fi
  export LAB_ADDR6
  _lab_log "namespace $LAB_NS, bridge $LAB_BRIDGE $LAB_ADDR/$LAB_PREFIX${LAB_ADDR6:+ $LAB_ADDR6/64}, dir $LAB_DIR"
}

# Installs lab_cleanup on EXIT (chained before any EXIT trap already set) and on INT/TERM/HUP
# (cleanup, then exit 130/143/129, which also runs the EXIT trap). A trap set by the caller
# after lab_init replaces these: call lab_cleanup from it.
_lab_install_traps() {
  local prev cmd='' words=()
  prev="$(trap -p EXIT)" # e.g.: trap -- 'cleanup' EXIT
  if [ -n "$prev" ]; then
    eval "words=($prev)"
    cmd="${words[2]:-}"
  fi
  # Ours from an earlier lab_init in this shell: chain the handler that was there before it.
  case "$cmd" in
    *lab_cleanup*) cmd="${_LAB_PREV_EXIT_TRAP:-}" ;;
    *) _LAB_PREV_EXIT_TRAP="$cmd" ;;
  esac
  # Without errexit in the handlers: under "set -e" a non-zero status would end the handler
  # before the chained one runs (lab_cleanup restores errexit: off again). The chained handler
  # sees the original exit status in $?.
  # shellcheck disable=SC2064,SC2154
  trap "_lab_rc=\$?; set +e; lab_cleanup; set +e; _lab_return \$_lab_rc; ${cmd:-:}" EXIT
  trap 'set +e; lab_cleanup; exit 130' INT
  trap 'set +e; lab_cleanup; exit 143' TERM
  trap 'set +e; lab_cleanup; exit 129' HUP
}
_lab_return() { return "$1"; }

lab_cleanup() {
  local rc=$?
  [ -n "${LAB_NS:-}" ] || return $rc
  [ -z "${_LAB_CLEANED:-}" ] || return $rc
  _LAB_CLEANED=1
  # Runs from traps: no errexit here, whatever the caller's options.
  local had_e=0
  [[ $- == *e* ]] && had_e=1
  set +e
  local pids=() pid
  # Registered PIDs (only while they still run in our namespace: never a recycled PID), then
  # anything else left in the namespace (children of what we started).
  if [ -n "${LAB_NS_OWNED:-}" ] && [ -e "/run/netns/$LAB_NS" ]; then
    if [ -f "${LAB_DIR:-}/pids" ]; then
      while read -r pid; do
        _lab_alive "$pid" && _lab_pid_in_ns "$pid" && pids+=("$pid")
      done <"$LAB_DIR/pids"
    fi
    for pid in $(ip netns pids "$LAB_NS" 2>/dev/null); do
      [[ " ${pids[*]} " == *" $pid "* ]] || pids+=("$pid")
    done
    if [ ${#pids[@]} -gt 0 ]; then
      kill -TERM "${pids[@]}" 2>/dev/null
      if ! _lab_wait_gone 5 "${pids[@]}"; then
        for pid in "${pids[@]}"; do _lab_alive "$pid" && kill -KILL "$pid" 2>/dev/null; done
        _lab_wait_gone 5 "${pids[@]}" || _lab_log "cleanup: processes did not exit: ${pids[*]}"
      fi
    fi
    ip netns del "$LAB_NS" 2>/dev/null || _lab_log "cleanup: ip netns del $LAB_NS failed"
  fi
  if [ -n "${LAB_DIR:-}" ] && [ -d "$LAB_DIR" ]; then
    if [ "${LAB_KEEP:-0}" = 1 ]; then
      _lab_log "cleanup: kept $LAB_DIR"
    else
      rm -rf "$LAB_DIR"
    fi
  fi
  [ $had_e -eq 1 ] && set -e
  return $rc
}

# Labs whose shell died without cleanup (SIGKILL): their namespace is named pvlab-NAME-PID and PID
# no longer exists. Kills what runs in them, by PID, and deletes them. Never called implicitly.
lab_gc() {
  local f ns owner pids
  for f in /run/netns/pvlab-*; do
    [ -e "$f" ] || continue
    ns="${f##*/}"
    owner="${ns##*-}"
    [[ "$owner" =~ ^[0-9]+$ ]] || continue
    [ "$ns" != "${LAB_NS:-}" ] || continue
    [ ! -d "/proc/$owner" ] || continue
    pids="$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')"
    _lab_log "lab_gc: stale $ns (pid $owner is gone)${pids:+; killing $pids}"
    if [ -n "${pids// /}" ]; then
      # shellcheck disable=SC2086
      kill -KILL $pids 2>/dev/null || true
      # shellcheck disable=SC2086
      _lab_wait_gone 5 $pids || _lab_log "lab_gc: still running: $pids"
    fi
    ip netns del "$ns" || _lab_log "lab_gc: ip netns del $ns failed"
  done
  local d
  for d in "${LAB_TMPDIR:-${TMPDIR:-/tmp}}"/pvlab-*-[0-9]*.??????; do
    [ -d "$d" ] || continue
    owner="${d%.*}"
    owner="${owner##*-}"
    [[ "$owner" =~ ^[0-9]+$ ]] || continue
    [ "$d" != "${LAB_DIR:-}" ] || continue
    [ ! -d "/proc/$owner" ] || continue
    _lab_log "lab_gc: removing stale work dir $d"
    rm -rf "$d"
  done
}

# ---------------------------------------------------------------- running things in the namespace

lab_exec() {
  [ -n "${LAB_NS:-}" ] || { _lab_log "lab_exec: lab_init first"; return 1; }
  ip netns exec "$LAB_NS" "$@"
}

lab_spawn() {
  local logname="$1"
  shift
  [ -n "${LAB_NS:-}" ] || { _lab_log "lab_spawn: lab_init first"; return 1; }
  ip netns exec "$LAB_NS" "$@" </dev/null >>"$LAB_DIR/$logname.log" 2>&1 &
  LAB_LAST_PID=$!
  disown "$LAB_LAST_PID" 2>/dev/null || true
  lab_register_pid "$LAB_LAST_PID"
}

lab_kill_hard() {
  local pid="$1"
  kill -KILL "$pid" 2>/dev/null || true
  _lab_wait_gone 30 "$pid" || { _lab_log "lab_kill_hard: $pid still runs 30 s after SIGKILL"; return 1; }
}

# lab_wait_port tcp|udp PORT TIMEOUT_S
lab_wait_port() {
  local proto="$1" port="$2" timeout="$3" flag
  case "$proto" in tcp) flag=-ltn ;; udp) flag=-lun ;; *) _lab_log "lab_wait_port: tcp|udp"; return 2 ;; esac
  local deadline=$(($(_lab_now_us) + timeout * 1000000))
  while :; do
    [ -n "$(ip netns exec "$LAB_NS" ss -H "$flag" "sport = :$port" 2>/dev/null)" ] && return 0
    if [ "$(_lab_now_us)" -ge "$deadline" ]; then
      _lab_log "lab_wait_port: nothing listens on $proto port $port after ${timeout}s"
      return 1
    fi
    sleep 0.05
  done
}

lab_start_repo() {
  local dir="${1:-}" port="${2:-8081}"
  [ -n "${LAB_NS:-}" ] || { _lab_log "lab_start_repo: lab_init first"; return 1; }
  command -v python3 >/dev/null || { _lab_log "lab_start_repo: missing python3"; return 1; }
  if [ -z "$dir" ]; then
    # shellcheck source=tests/lab/lab-repo.sh
    source "$(dirname "${BASH_SOURCE[0]}")/lab-repo.sh" || return 1
    dir="$(lab_repo_dir)" || { _lab_log "lab_start_repo: no lab apt repository"; return 1; }
  fi
  [ -s "$dir/debian-lab/Packages" ] || {
    _lab_log "lab_start_repo: $dir has no debian-lab/Packages"
    return 1
  }
  lab_spawn repo python3 -m http.server --bind "$LAB_ADDR" --directory "$dir" "$port" || return 1
  LAB_REPO_PID="$LAB_LAST_PID"
  export LAB_REPO_PID
  if ! lab_wait_port tcp "$port" 10; then
    _lab_log "lab_start_repo: the repository server did not start:"
    tail -n 20 "$LAB_DIR/repo.log" >&2
    return 1
  fi
  _lab_log "apt repository $dir served on http://$LAB_ADDR:$port/debian-lab (pid $LAB_REPO_PID)"
}

# ---------------------------------------------------------------- VMs

_lab_vm_pid() { cat "$LAB_DIR/$1.pid" 2>/dev/null; }

lab_vm_running() {
  local pid
  pid="$(_lab_vm_pid "$1")" && _lab_alive "$pid" && _lab_pid_in_ns "$pid"
}

# Marks the current end of the serial log: lab_wait_serial looks only after it.
_lab_serial_mark() {
  local f="$LAB_DIR/$1.serial"
  stat -c %s "$f" 2>/dev/null >"$LAB_DIR/$1.serial.mark" || echo 0 >"$LAB_DIR/$1.serial.mark"
  _lab_now_us >"$LAB_DIR/$1.t0"
}

# _lab_vm_tap KEY: the tap for KEY (a VM name, or NAME.2 for its second NIC), made in the
# namespace and enslaved to the bridge the first time.
_lab_vm_tap() {
  local key="$1" d="$LAB_DIR" n tap
  if [ -s "$d/$key.tap" ]; then
    cat "$d/$key.tap"
    return 0
  fi
  n="$(cat "$d/tapcount")"
  echo $((n + 1)) >"$d/tapcount"
  tap="tap$n"
  if ! { ip -n "$LAB_NS" tuntap add dev "$tap" mode tap &&
    ip -n "$LAB_NS" link set "$tap" master "$LAB_BRIDGE" &&
    ip -n "$LAB_NS" link set "$tap" up; }; then
    _lab_log "lab_vm_start: tap $tap failed"
    return 1
  fi
  echo "$tap" >"$d/$key.tap"
  echo "$tap"
}

lab_vm_start() {
  local name="${1:-}" mac="${2:-}" mode="${3:-bios}"
  [ -n "${LAB_NS:-}" ] || { _lab_log "lab_vm_start: lab_init first"; return 1; }
  if ! [[ "$name" =~ ^[A-Za-z0-9_.-]{1,32}$ ]] ||
    ! [[ "$mac" =~ ^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$ ]]; then
    _lab_log "usage: lab_vm_start NAME MAC [bios|uefi|uefi-pxe|uefi-sb|uefi-http|disk]"
    return 2
  fi
  if lab_vm_running "$name"; then
    _lab_log "lab_vm_start: $name is running already"
    return 1
  fi
  local d="$LAB_DIR" tap tap2="" fw=() nic romopt model="${LAB_VM_NIC:-virtio-net-pci}" other=()
  # shellcheck disable=SC2054 # commas belong to QEMU's option syntax
  local boot=(-boot order=n,strict=on) bootindex=",bootindex=1" accel=tcg,thread=multi
  # One tap per VM name (and per second NIC), kept across power cycles.
  tap="$(_lab_vm_tap "$name")" || return 1
  if [ -n "${LAB_VM_OTHER_NIC:-}" ]; then
    tap2="$(_lab_vm_tap "$name.2")" || return 1
    # shellcheck disable=SC2054 # commas belong to QEMU's option syntax
    other=(-netdev "tap,id=n1,ifname=$tap2,script=no,downscript=no"
      -device "${LAB_VM_OTHER_NIC% *},netdev=n1,mac=${LAB_VM_OTHER_NIC#* }")
  fi
  case "$mode" in
    bios)
      # SeaBIOS's serial console (etc/sercon-port = 0x3f8): the iPXE ROM's messages reach the
      # serial log too, not only a screen nobody sees. (QEMU warns about the "opt/"-less name.)
      [ -s "$d/sercon-port.bin" ] || printf '\xf8\x03' >"$d/sercon-port.bin"
      fw=(-machine pc -fw_cfg "name=etc/sercon-port,file=$d/sercon-port.bin")
      romopt="${LAB_IPXE_ROM:+romfile=$LAB_IPXE_ROM}"
      ;;
    uefi | uefi-pxe | uefi-sb | uefi-http)
      local f code="$LAB_OVMF_CODE" vars="$LAB_OVMF_VARS" machine=q35
      if [ "$mode" = uefi-sb ]; then
        # Secure Boot needs SMM, and the firmware's flash writable only from SMM.
        code="$LAB_OVMF_SB_CODE" vars="$LAB_OVMF_SB_VARS" machine=q35,smm=on
      fi
      for f in "$code" "$vars"; do
        [ -r "$f" ] || { _lab_log "lab_vm_start: missing $f (package ovmf)"; return 1; }
      done
      # Per-VM NVRAM, kept across power cycles like a real machine's.
      [ -f "$d/$name.vars.fd" ] || cp "$vars" "$d/$name.vars.fd" || return 1
      fw=(-machine "$machine"
        -drive "if=pflash,format=raw,unit=0,readonly=on,file=$code"
        -drive "if=pflash,format=raw,unit=1,file=$d/$name.vars.fd")
      [ "$mode" = uefi-sb ] && fw+=(-global driver=cfi.pflash01,property=secure,value=on)
      # UEFI HTTP boot only: OVMF's PXE (IPv4 and IPv6) turned off, so its boot
      # option for the NIC is the HTTP one (it asks DHCP as "HTTPClient").
      [ "$mode" = uefi-http ] && fw+=(-fw_cfg name=opt/org.tianocore/IPv4PXESupport,string=no
        -fw_cfg name=opt/org.tianocore/IPv6PXESupport,string=no)
      if [ "$mode" = uefi ]; then
        romopt="${LAB_IPXE_ROM:+romfile=$LAB_IPXE_ROM}"
      else
        romopt="romfile=" # no option ROM: OVMF's own virtio-net driver and PXE
      fi
      ;;
    disk)
      # An installed machine (tests/lab/installed-disk.sh): its kernel and initrd given to QEMU
      # (direct kernel boot, which QEMU repeats at each guest reboot), the root by its UUID.
      local f uuid
      for f in root.img vmlinuz initrd; do
        [ -r "$d/$name.$f" ] || {
          _lab_log "lab_vm_start: missing $d/$name.$f (tests/lab/installed-disk.sh)"
          return 1
        }
      done
      uuid="$(blkid -p -o value -s UUID "$d/$name.root.img" 2>/dev/null)" || uuid=""
      [ -n "$uuid" ] || { _lab_log "lab_vm_start: $d/$name.root.img has no file system"; return 1; }
      # shellcheck disable=SC2054 # commas belong to QEMU's option syntax
      fw=(-machine pc -kernel "$d/$name.vmlinuz" -initrd "$d/$name.initrd"
        -append "root=UUID=$uuid ro console=ttyS0,115200"
        -drive "file=$d/$name.root.img,format=raw,if=none,id=root,cache=unsafe"
        -device virtio-blk-pci,drive=root,serial=root)
      romopt="romfile=" # no PXE: it does not netboot
      boot=() bootindex=""
      # A guest reboot resets the machine in the same QEMU process, whose translated code from
      # the boot before stays cached (up to 1 GiB by default) and made the next boot's kernel
      # and initramfs 2-6 times slower (reboot to SSH 32-49 s against a cold boot's 20 s). A
      # 256 MiB cache: reboots as fast as cold boots, PyTorch no slower (lab, 2026-11-28).
      accel=tcg,thread=multi,tb-size=256
      ;;
    *)
      _lab_log "lab_vm_start: mode must be bios, uefi, uefi-pxe, uefi-sb, uefi-http or disk, not '$mode'"
      return 2
      ;;
  esac
  if [ -n "$LAB_IPXE_ROM" ] && [ ! -r "$LAB_IPXE_ROM" ]; then
    _lab_log "lab_vm_start: missing $LAB_IPXE_ROM"
    return 1
  fi
  nic="$model,netdev=n0,mac=$mac${romopt:+,$romopt}$bootindex"
  echo "$mac $mode" >"$d/$name.conf"
  rm -f "$d/$name.pid" "$d/$name.mon"
  # Keep the previous boot's console output; the new one starts empty.
  [ -s "$d/$name.serial" ] && mv -f "$d/$name.serial" "$d/$name.serial.prev"
  : >"$d/$name.serial"
  _lab_serial_mark "$name"
  # shellcheck disable=SC2054 # commas belong to QEMU's option syntax
  local args=(
    -name "$name" -nodefaults -no-user-config
    -accel "$accel" -cpu max -smp 1 -m "$LAB_VM_MEM"
    "${fw[@]}"
    -display none -vga none
    -chardev "file,id=ser0,path=$d/$name.serial,append=on" -serial chardev:ser0
    -chardev "file,id=dbg0,path=$d/$name.fw.log" -device isa-debugcon,iobase=0x402,chardev=dbg0
    -monitor "unix:$d/$name.mon,server=on,wait=off"
    "${other[@]}"
    -netdev "tap,id=n0,ifname=$tap,script=no,downscript=no"
    -device "$nic"
    "${boot[@]}"
    -pidfile "$d/$name.qemu.pid"
    "${LAB_VM_EXTRA_ARGS[@]}"
  )
  echo "qemu-system-x86_64 ${args[*]}" >>"$d/$name.qemu.log"
  ip netns exec "$LAB_NS" qemu-system-x86_64 "${args[@]}" </dev/null >>"$d/$name.qemu.log" 2>&1 &
  local pid=$!
  disown "$pid" 2>/dev/null || true
  lab_register_pid "$pid"
  # ip netns exec execs QEMU in place: $! is QEMU's PID. Wait for the monitor socket (QEMU is
  # up), bounded; fail early if QEMU exits.
  local deadline=$(($(_lab_now_us) + 10 * 1000000))
  while [ ! -S "$d/$name.mon" ]; do
    if ! _lab_alive "$pid"; then
      _lab_log "lab_vm_start: QEMU for $name exited at once:"
      tail -n 20 "$d/$name.qemu.log" >&2
      return 1
    fi
    if [ "$(_lab_now_us)" -ge "$deadline" ]; then
      _lab_log "lab_vm_start: QEMU for $name has no monitor socket after 10s"
      return 1
    fi
    sleep 0.02
  done
  echo "$pid" >"$d/$name.pid"
  _lab_log "vm $name ($mode, $mac, $tap) started, pid $pid"
}

lab_vm_monitor() {
  local name="$1" cmd="$2" sock="$LAB_DIR/$1.mon"
  [ -S "$sock" ] || { _lab_log "lab_vm_monitor: $name has no monitor socket"; return 1; }
  # -t: after sending, wait at most 2s for the reply; QEMU closes the connection on EOF.
  printf '%s\n' "$cmd" | timeout 10 socat -t 2 - "UNIX-CONNECT:$sock" 2>/dev/null |
    tr -d '\r' | sed -e 's/\x1b\[[0-9;]*[A-Za-z]//g' -e '/^QEMU .* monitor/d' -e '/^(qemu)/d'
}

lab_vm_stop() {
  local name="$1" timeout="${2:-10}" pid
  pid="$(_lab_vm_pid "$name")" || { _lab_log "lab_vm_stop: no VM $name"; return 1; }
  if lab_vm_running "$name"; then
    lab_vm_monitor "$name" quit >/dev/null || true
    if ! _lab_wait_gone "$timeout" "$pid"; then
      _lab_log "lab_vm_stop: $name ignores quit; killing pid $pid"
      kill -TERM "$pid" 2>/dev/null || true
      _lab_wait_gone 5 "$pid" || { kill -KILL "$pid" 2>/dev/null || true; _lab_wait_gone 5 "$pid" || true; }
    fi
  fi
  rm -f "$LAB_DIR/$name.mon"
  ! _lab_alive "$pid"
}

lab_vm_reset() {
  local name="$1"
  lab_vm_running "$name" || { _lab_log "lab_vm_reset: $name is not running"; return 1; }
  _lab_serial_mark "$name"
  lab_vm_monitor "$name" system_reset >/dev/null
}

lab_vm_wait_exit() {
  local name="$1" timeout="$2" pid
  pid="$(_lab_vm_pid "$name")" || return 0
  _lab_wait_gone "$timeout" "$pid" && return 0
  _lab_log "lab_vm_wait_exit: $name still running after ${timeout}s"
  return 1
}

lab_hello_to_ready() {
  local out="$LAB_DIR/events-$2.jsonl"
  lab_exec "$1" events --node "$2" --limit 100000 --json >"$out" || { echo "?"; return 0; }
  python3 - "$out" <<'PY'
import json, re, sys
hello = ready = None
for line in open(sys.argv[1]):
    e = json.loads(line)
    # A netbooted node's phone-home, or an installed machine's adoption or reboot.
    if (e["detail"].startswith("hello: from") or e["kind"] == "adopted"
            or "seen by its heartbeat" in e["detail"]):
        hello, ready = e["time"], None
    elif hello is not None and ready is None and e["kind"] == "state" and re.search(r"-> ready(:|$)", e["detail"]):
        ready = e["time"]
print("?" if hello is None or ready is None else "%.1f" % ((ready - hello) / 1000))
PY
}

lab_vm_elapsed() {
  local t0 d
  t0="$(cat "$LAB_DIR/$1.t0" 2>/dev/null)" || return 1
  d=$((($(_lab_now_us) - t0) / 10000))
  printf '%d.%02d\n' $((d / 100)) $((d % 100))
}

_lab_serial_tail() {
  local name="$1" f="$LAB_DIR/$1.serial"
  echo "--- last 30 lines of $f" >&2
  tail -c "+$(($(cat "$LAB_DIR/$name.serial.mark" 2>/dev/null || echo 0) + 1))" "$f" 2>/dev/null |
    tr -d '\r' | sed -e 's/\x1b\[[0-9;?=]*[A-Za-z]//g' -e 's/\x1b[()][A-Z0-9]//g' -e 's/\x1b[a-zA-Z]//g' |
    tr -cd '\11\12\40-\176' | tail -n 30 >&2
  echo "---" >&2
}

lab_wait_serial() {
  local name="$1" pattern="$2" timeout="$3"
  local f="$LAB_DIR/$name.serial" off deadline exited=0 n
  [ -e "$f" ] || { _lab_log "lab_wait_serial: no VM $name"; return 1; }
  off="$(cat "$LAB_DIR/$name.serial.mark" 2>/dev/null || echo 0)"
  deadline=$(($(_lab_now_us) + timeout * 1000000))
  while :; do
    # Read the file before checking the process: output written just before QEMU exits counts.
    lab_vm_running "$name" || exited=1
    # grep -c reads all its input (grep -q would stop early, and under pipefail the SIGPIPE
    # of the writer would read as "no match").
    n="$(tail -c "+$((off + 1))" "$f" 2>/dev/null | tr -d '\r' | grep -caE -- "$pattern")" || true
    [ "${n:-0}" -gt 0 ] && return 0
    if [ $exited -eq 1 ]; then
      _lab_log "lab_wait_serial: $name exited without printing /$pattern/"
      _lab_serial_tail "$name"
      return 1
    fi
    if [ "$(_lab_now_us)" -ge "$deadline" ]; then
      _lab_log "lab_wait_serial: no /$pattern/ on $name's serial console after ${timeout}s"
      _lab_serial_tail "$name"
      return 1
    fi
    sleep 0.1
  done
}
