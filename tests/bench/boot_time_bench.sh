#!/usr/bin/env bash
# boot_time_bench.sh: lab time from power-on to `booted` (the node's phone-home)
# of a QEMU machine that netboots through provisiond (SeaBIOS, QEMU's iPXE ROM,
# DHCP, per-node iPXE script, kernel and initrd over HTTP), against the same
# machine booting the same kernel, initrd and command line directly from QEMU
# (-kernel/-initrd/-append). Both mount the same NFS root, fetch the same
# overlay and phone home to the same provisiond, in one lab namespace.
# --firmware uefi-sb netboots a UEFI machine with Secure Boot enforced through
# the signed chain instead (shim, grub, its config, kernel and initrd by
# TFTP): run it beside the default to compare the two loaders' paths against
# the same direct boot.
#
# Usage: tests/bench/boot_time_bench.sh [--build-dir DIR] [--rounds N]
#          [--warmup N] [--timeout S] [--firmware bios|uefi-sb] [--json FILE]   (root)
# See tests/bench/README.md.
set -euo pipefail
bench=boot_time_bench
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build_dir="$repo/build" rounds=3 warmup=1 timeout=300 json=''
usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; }
firmware=bios
while (($#)); do
  case "$1" in
    --build-dir) build_dir="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --timeout) timeout="$2"; shift 2 ;;
    --json) json="$2"; shift 2 ;;
    --firmware) firmware="$2"; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done
[[ $rounds =~ ^[1-9][0-9]*$ && $warmup =~ ^[0-9]+$ && $timeout =~ ^[1-9][0-9]*$ ]] ||
  { echo "$bench: --rounds, --timeout: positive integers; --warmup: 0 or more" >&2; exit 2; }
[[ $firmware == bios || $firmware == uefi-sb ]] || { echo "$bench: --firmware bios or uefi-sb" >&2; exit 2; }
build_dir="$(cd "$build_dir" && pwd)"
provisiond="$build_dir/provisiond/provisiond"
provisionctl="$build_dir/provisiond/provisionctl"
suffix=""
[ "$firmware" = bios ] || suffix="-$firmware"
: "${json:=$build_dir/tests/bench/$bench$suffix.json}"

PROVISIOND=$provisiond PROVISIONCTL=$provisionctl WORK_NAME=$bench
# shellcheck source=tests/lib.sh
source "$repo/tests/lib.sh"
# lib's die, with the end of the lab's logs (lab_cleanup removes them before
# lib's cleanup runs).
die() {
  fail "$*"
  if [ -n "${LAB_DIR:-}" ] && [ -d "$LAB_DIR" ]; then
    for f in "$LAB_DIR/provisiond.log" "$LAB_DIR/data/nfs/ganesha.log" "$LAB_DIR/power.log" \
      "$LAB_DIR"/*.serial "$LAB_DIR"/*.qemu.log; do
      [ -s "$f" ] && { echo "--- last 25 lines of $f"; tail -n 25 "$f" | tr -cd '\11\12\40-\176'; }
    done >&2
  fi
  exit 1
}
[ "$(id -u)" -eq 0 ] || die "run as root (network namespaces, taps)"
for tool in jq curl qemu-system-x86_64 mmdebstrap dnsmasq ganesha.nfsd; do
  command -v "$tool" >/dev/null || die "missing $tool (tests/lab/packages.txt; jq: apt-get install jq)"
done
for f in "$provisiond" "$provisionctl" "$build_dir/provisiond/provision-facts" \
  "$build_dir/provisiond/provision-mount"; do
  [ -x "$f" ] || die "missing $f (ninja -C $build_dir provisiond provisionctl provision-facts provision-mount)"
done
mkdir -p "$(dirname "$json")"

now_ms() { local t="${EPOCHREALTIME//[!0-9]/}"; echo $((t / 1000)); }
median() {
  printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
    n = NR; printf "%.3f\n", (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }'
}
ms_to_s() { awk -v m="$1" -v d="${2:-3}" 'BEGIN { printf "%.*f", d, m / 1000 }'; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
# CPU time (clock ticks) of the whole machine so far, and of what runs in the
# lab's namespace (QEMU, provisiond with dnsmasq and nfs-ganesha; with the
# children they waited for).
machine_busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
lab_ticks() {
  local total=0 p f
  for p in $(ip netns pids "$LAB_NS" 2>/dev/null); do
    f="$(cat "/proc/$p/stat" 2>/dev/null)" || continue
    read -r -a f <<<"${f##*) }"  # fields from 3 on: utime, stime, cutime, cstime are 14-17
    total=$((total + f[11] + f[12] + f[13] + f[14]))
  done
  echo "$total"
}
hz="$(getconf CLK_TCK)"

# --- the lab image, built on this machine's loopback when it is not cached -------
source "$repo/tests/lab/lab-image.sh"
load_start="$(load)"
t="$(now_ms)"
STORE="$(lab_image_store "$provisiond" "$provisionctl" "$repo/profiles")" || die "the lab image was not built"
version="$(cat "$STORE/lab/current")"
image_note="lab@$version in $STORE"
(($(now_ms) - t > 5000)) && image_note+=" (built now, $(ms_to_s $(($(now_ms) - t))) s)"
echo "$bench: image $image_note" >&2

# --- the lab: provisiond with dnsmasq and nfs-ganesha, configured as in image_boot_test.sh
source "$repo/tests/lab/lab.sh"
lab_init boottime || die "lab_init failed"
DATA="$LAB_DIR/data"
cp -r "$repo/profiles" "$LAB_DIR/profiles"
cat >"$LAB_DIR/provisiond.yaml" <<CONF
listen: 0.0.0.0:8080
data_dir: $DATA
profiles_dir: $LAB_DIR/profiles
playbooks_dir: $repo/playbooks
images_dir: $repo/images
pxe_dir: $repo/pxe
image_store: $STORE
tools_dir: $build_dir/provisiond
interface: $LAB_BRIDGE
dhcp:
  range: 10.99.0.100-10.99.0.199
power:
  command: $repo/tests/lab/power.sh
CONF
lab_spawn provisiond "$provisiond" --config "$LAB_DIR/provisiond.yaml"
wait_for 30 "provisiond wrote its URL file" test -s "$DATA/provisiond.url" || die "provisiond did not start"
# provisionctl runs in the lab's namespace: the API over plain HTTP answers loopback only.
export PROVISIOND_URL="http://127.0.0.1:8080"
PROVISIOND_TOKEN="$(awk '!/^#/ && NF {print $1; exit}' "$DATA/tokens")"
export PROVISIOND_TOKEN
lab_wait_port udp 67 20 || die "no dnsmasq"
lab_wait_port tcp 2049 20 || die "no NFS server"
ctl() { lab_exec "$provisionctl" "$@"; }
api() { lab_exec curl -sSf --noproxy '*' -H "Authorization: Bearer $PROVISIOND_TOKEN" "$PROVISIOND_URL$1"; }

ctl image verify lab >"$LAB_DIR/verify.out" || { cat "$LAB_DIR/verify.out" >&2; die "image verify failed"; }
ctl profile apply lab --yes >/dev/null || die "profile apply lab failed"
node=lab0 mac=52:54:00:97:00:20
# The lab's power driver starts the node with this firmware (tests/lab/power.sh).
echo "$node $firmware" >"$LAB_DIR/firmware"
ctl node add "$node" --mac "$mac" --power command >/dev/null || die "node add failed"

# The kernel command line the boot script gives this node (the token is per
# node and stays), and the image version it names.
api "/boot/${mac//:/-}.ipxe" >"$LAB_DIR/node.ipxe" || die "GET /boot/${mac//:/-}.ipxe failed"
kernel_line="$(grep -m1 '^kernel ' "$LAB_DIR/node.ipxe")" || die "no kernel line in the boot script"
boot_version="$(sed -n 's/^kernel [^ ]*vmlinuz?v=\([0-9a-f]*\) .*/\1/p' <<<"$kernel_line")"
cmdline="$(sed -e 's/^kernel [^ ]* //' -e 's/ && goto initrd ||$//' -e 's/\(^\| \)initrd=initrd.img\( \|$\)/\1/' <<<"$kernel_line")"
[ "$boot_version" = "$version" ] || die "the script boots version '$boot_version', the store's current is $version"
kernel="$STORE/lab/$version/vmlinuz" initrd="$STORE/lab/$version/initrd.img"
{ [ -s "$kernel" ] && [ -s "$initrd" ]; } || die "no $kernel or no $initrd"
grep -q 'provision.nfs=' <<<"$cmdline" || die "no provision.nfs= in the command line: $cmdline"

last_event() { api /api/v1/status | jq -r .last_event; }

# wait_hello CURSOR OUT: follows the node's events after CURSOR (long polls)
# into OUT (one JSON object a line) until its hello; fails on `failed`, when the
# VM exits, or after --timeout seconds.
wait_hello() {
  local cursor="$1" out="$2" deadline r
  deadline=$(($(now_ms) + timeout * 1000))
  : >"$out"
  while :; do
    r="$(api "/api/v1/events?node=$node&after=$cursor&limit=1000&wait=5")" || die "GET /api/v1/events failed"
    jq -c '.events[]' <<<"$r" >>"$out"
    cursor="$(jq -r .next <<<"$r")"
    [ "$(jq -s 'any(.[]; .kind == "boot" and (.detail | startswith("hello:")))' "$out")" = true ] && return 0
    # A boot that fails (booting -> failed) ends it; a configure run of the previous boot that
    # fails when that boot is powered off (configuring -> failed) does not concern this one.
    if [ "$(jq -s 'any(.[]; .kind == "state" and (.detail | test("^booting -> failed")))' "$out")" = true ]; then
      die "$node failed: $(jq -r 'select(.kind == "state") | .detail' "$out" | tail -n 1)"
    fi
    lab_vm_running "$node" || die "$node's QEMU exited before its hello"
    (($(now_ms) < deadline)) || die "no hello from $node ${timeout}s after it started"
  done
}

power_off() {
  ctl node power off "$node" >/dev/null || die "power off failed"
  ! lab_vm_running "$node" || die "$node still runs after power off"
}

# One boot; sets res_cmd (ms from the command that powers it on) and res_qemu
# (ms from QEMU's start) to its hello, res_cpu ("LAB/OTHERS": CPU seconds used
# in the lab's namespace and by the rest of the machine until the hello), and leaves its events in
# $LAB_DIR/run-N.events. netboot: `provisionctl node power on` (provisiond runs
# the lab's power driver, which starts QEMU netbooting). direct: QEMU started
# here by lab_vm_start (same options, NIC and MAC) with -kernel/-initrd/-append.
runs=0 res_cmd=0 res_qemu=0 res_cpu=''
boot_once() {
  local side="$1" cursor t0 qemu_t0 hello out lab0 lab1 busy0 busy1
  runs=$((runs + 1))
  out="$LAB_DIR/run-$runs.events"
  cursor="$(last_event)"
  lab0="$(lab_ticks)" busy0="$(machine_busy)"
  t0="$(now_ms)"
  if [ "$side" = netboot ]; then
    ctl node power on "$node" >/dev/null || die "power on failed"
  else
    LAB_VM_EXTRA_ARGS=(-kernel "$kernel" -initrd "$initrd" -append "$cmdline")
    lab_vm_start "$node" "$mac" bios 2>>"$LAB_DIR/power.log" || die "QEMU -kernel did not start"
    LAB_VM_EXTRA_ARGS=()
  fi
  qemu_t0=$(($(cat "$LAB_DIR/$node.t0") / 1000))
  wait_hello "$cursor" "$out"
  hello="$(jq -s -r 'map(select(.kind == "boot" and (.detail | startswith("hello:")))) | .[0].time' "$out")"
  lab1="$(lab_ticks)" busy1="$(machine_busy)"
  res_cpu="$(awk -v l=$((lab1 - lab0)) -v b=$((busy1 - busy0)) -v hz="$hz" 'BEGIN { printf "%.1f/%.1f", l / hz, (b - l) / hz }')"
  power_off
  echo "$qemu_t0" >"$out.t0"
  res_cmd=$((hello - t0)) res_qemu=$((hello - qemu_t0))
}

# Boot stages from the events, in ms after QEMU started: dhcp (first ACK:
# iPXE's for a netboot), script, kernel, initrd (each at the start of its
# request), dhcp2 (the initrd's ACK: provisiond records it as the `network`
# stage of a boot that fetched an initrd, as plain `dhcp` in a direct boot),
# overlay, hello.
stages() {
  local out="$1" t0
  t0="$(cat "$out.t0")"
  jq -s -r --argjson t0 "$t0" '
    def at(p): (map(select(.kind == "boot" and (.detail | startswith(p)))) | .[0].time // null);
    def after(p; t): (map(select(.kind == "boot" and (.detail | startswith(p)) and .time >= t)) | .[0].time // null);
    (at("initrd:")) as $initrd
    | [at("dhcp:"), at("script:"), at("kernel:"), $initrd,
       (at("network:") // (if $initrd then after("dhcp:"; $initrd) else at("dhcp:") end)),
       at("overlay:"), at("hello:")]
    | map(if . then . - $t0 else "-" end) | @tsv' "$out"
}

echo "$bench: $node ($mac, netboot $firmware, direct bios), VM ${LAB_VM_MEM} MiB TCG; direct: -kernel/-initrd/-append of lab@$version" >&2
echo "$bench: command line (no credential on it): $cmdline" >&2
for ((w = 0; w < warmup; w++)); do
  boot_once netboot
  echo "$bench: warm-up netboot: booted $(ms_to_s "$res_cmd") s after power on (not measured)" >&2
done

declare -a net_cmd=() net_qemu=() dir_qemu=() ratio=() rows=()
for ((r = 1; r <= rounds; r++)); do
  if ((r % 2)); then order=(netboot direct); else order=(direct netboot); fi
  for side in "${order[@]}"; do
    boot_once "$side"
    a=$res_cmd b=$res_qemu
    st="$(stages "$LAB_DIR/run-$runs.events")"
    errors="$(jq -s '[.[] | select(.kind == "boot-error" or .kind == "report")] | length' "$LAB_DIR/run-$runs.events")"
    if [ "$side" = netboot ]; then
      net_cmd+=("$a") net_qemu+=("$b")
    else
      dir_qemu+=("$b")
    fi
    rows+=("$r	$side	$a	$b	$st	$errors	$res_cpu	$(load)")
    echo "$bench: round $r $side: $(ms_to_s "$a") s (QEMU start to hello $(ms_to_s "$b") s)" >&2
    sleep 2  # QEMU's exit settles
  done
  ratio+=("$(awk -v n="${net_cmd[-1]}" -v d="${dir_qemu[-1]}" 'BEGIN { printf "%.3f", n / d }')")
done

# --- report ----------------------------------------------------------------------
m_net="$(median "${net_cmd[@]}")" m_netq="$(median "${net_qemu[@]}")" m_dir="$(median "${dir_qemu[@]}")"
m_ratio="$(awk -v n="$m_net" -v d="$m_dir" 'BEGIN { printf "%.3f", n / d }')"
m_ratioq="$(awk -v n="$m_netq" -v d="$m_dir" 'BEGIN { printf "%.3f", n / d }')"
qemu_version="$(qemu-system-x86_64 --version | head -n 1)"
{
  echo "$bench: power-on to booted (phone-home), $rounds rounds after $warmup warm-up netboot(s), alternating"
  if [ "$firmware" = bios ]; then
    echo "node $node netboot: bios (SeaBIOS + QEMU's iPXE ROM); direct: bios; ${LAB_VM_MEM} MiB, -smp 1, TCG; image lab@$version, NFS root (nfs-ganesha)"
  else
    echo "node $node netboot: uefi-sb (OVMF, Secure Boot enforced: shim, grub, kernel, initrd by TFTP); direct: bios; ${LAB_VM_MEM} MiB, -smp 1, TCG; image lab@$version, NFS root (nfs-ganesha)"
  fi
  echo "$(nproc) CPUs, load average $load_start at start, $qemu_version"
  echo "times in s; stages in s after QEMU started (from provisiond's events): dhcp = first DHCP ACK,"
  echo "script/kernel/initrd = request start, dhcp2 = the initrd's DHCP ACK, overlay, hello"
  echo "CPU s: used in the lab's namespace (QEMU, provisiond, dnsmasq, nfs-ganesha) / by the rest of the machine"
  printf '%-5s %-8s %7s %7s %6s %6s %6s %6s %6s %7s %6s %4s %11s  %s\n' round side total qemu-to dhcp script kernel \
    initrd dhcp2 overlay hello errs "CPU s" "load after"
  for row in "${rows[@]}"; do
    IFS=$'\t' read -r r side a b s1 s2 s3 s4 s5 s6 s7 e cpu l <<<"$row"
    f() { if [ "$1" = - ]; then echo -; else ms_to_s "$1" 2; fi; }
    printf '%-5s %-8s %7s %7s %6s %6s %6s %6s %6s %7s %6s %4s %11s  %s\n' "$r" "$side" "$(ms_to_s "$a" 1)" \
      "$(ms_to_s "$b" 1)" "$(f "$s1")" "$(f "$s2")" "$(f "$s3")" "$(f "$s4")" "$(f "$s5")" "$(f "$s6")" \
      "$(f "$s7")" "$e" "$cpu" "$l"
  done
  printf 'median netboot: %.3f s from power on (%.3f s from QEMU start); direct: %.3f s from QEMU start\n' \
    "$(ms_to_s "$m_net")" "$(ms_to_s "$m_netq")" "$(ms_to_s "$m_dir")"
  echo "ratio netboot/direct (medians): $m_ratio (goal <= 1.3); from QEMU start on both sides: $m_ratioq"
  echo "ratio within each round: ${ratio[*]}; median $(median "${ratio[@]}")"
} | tee "$LAB_DIR/report.txt"
# Where the difference goes: medians of each segment per side.
# seg SIDE FROM TO: median of TO - FROM over SIDE's runs; FROM and TO are stage
# numbers (1 dhcp .. 7 hello), 0 for QEMU's start, cmd for the power-on command.
seg() {
  local side="$1" from="$2" to="$3" vals=() row c x y
  for row in "${rows[@]}"; do
    IFS=$'\t' read -r -a c <<<"$row"
    [ "${c[1]}" = "$side" ] || continue
    case "$from" in 0) x=0 ;; cmd) x=$((c[3] - c[2])) ;; *) x="${c[from + 3]}" ;; esac
    case "$to" in 0) y=0 ;; *) y="${c[to + 3]}" ;; esac
    [ "$x" = - ] || [ "$y" = - ] && continue
    vals+=("$((y - x))")
  done
  ((${#vals[@]})) && ms_to_s "$(median "${vals[@]}")" || echo -
}
{
  echo "segments (medians, s):             netboot   direct"
  printf '  QEMU start -> first DHCP ACK      %7s        -\n' "$(seg netboot 0 1)"
  printf '  iPXE DHCP ACK -> script          %7s        -\n' "$(seg netboot 1 2)"
  printf '  script -> kernel request         %7s        -\n' "$(seg netboot 2 3)"
  printf '  first DHCP ACK -> kernel         %7s        -\n' "$(seg netboot 1 3)"
  printf '  kernel request -> initrd request %7s        -\n' "$(seg netboot 3 4)"
  printf '  initrd request -> initrd DHCP    %7s        -\n' "$(seg netboot 4 5)"
  printf '  QEMU start -> initrd DHCP        %7s  %7s\n' "$(seg netboot 0 5)" "$(seg direct 0 5)"
  printf '  initrd DHCP -> overlay           %7s  %7s\n' "$(seg netboot 5 6)" "$(seg direct 5 6)"
  printf '  overlay -> hello                 %7s  %7s\n' "$(seg netboot 6 7)" "$(seg direct 6 7)"
  printf '  power on command -> QEMU start   %7s        -\n' "$(seg netboot cmd 0)"
  # What netboot itself adds is before the initrd's DHCP; after it both run the
  # same initrd and systemd, whose time moves with the machine's load.
  pre_net="$(seg netboot cmd 5)" pre_dir="$(seg direct 0 5)"
  added="$(awk -v a="$pre_net" -v b="$pre_dir" 'BEGIN { printf "%.3f", a - b }')"
  added_ratio="$(awk -v x="$added" -v d="$m_dir" 'BEGIN { printf "%.3f", (d / 1000 + x) / (d / 1000) }')"
  echo "netboot adds $added s before the initrd's DHCP (power on -> initrd DHCP $pre_net s vs $pre_dir s);"
  echo "  direct median + that: ratio $added_ratio (the rest, initrd DHCP -> hello, is the same boot on both sides)"
} | tee -a "$LAB_DIR/report.txt"
pre_net="$(seg netboot cmd 5)" pre_dir="$(seg direct 0 5)"
added="$(awk -v a="$pre_net" -v b="$pre_dir" 'BEGIN { printf "%.3f", a - b }')"
added_ratio="$(awk -v x="$added" -v d="$m_dir" 'BEGIN { printf "%.3f", (d / 1000 + x) / (d / 1000) }')"

# JSON: the medians, ratios and every run with its stages (ms after QEMU start).
printf '%s\n' "${rows[@]}" | jq -R -s \
  --arg bench "$bench" --arg firmware "$firmware" --argjson rounds "$rounds" --argjson warmup "$warmup" \
  --argjson cpus "$(nproc)" --arg load_start "$load_start" --arg qemu "$qemu_version" \
  --arg image "lab@$version" --argjson vm_mib "$LAB_VM_MEM" \
  --argjson m_net "$m_net" --argjson m_netq "$m_netq" --argjson m_dir "$m_dir" \
  --argjson m_ratio "$m_ratio" --argjson m_ratioq "$m_ratioq" \
  --argjson per_round "[$(IFS=,; echo "${ratio[*]}")]" \
  --argjson added "$added" --argjson added_ratio "$added_ratio" '
  def num: if . == "-" then null else tonumber end;
  {bench: $bench, firmware: $firmware, rounds: $rounds, warmup: $warmup, cpus: $cpus, load_start: $load_start,
   qemu: $qemu, image: $image, vm_mib: $vm_mib,
   median_ms: {netboot_from_power_on: $m_net, netboot_from_qemu_start: $m_netq,
               direct_from_qemu_start: $m_dir},
   ratio_netboot_direct: $m_ratio, ratio_from_qemu_start: $m_ratioq, ratio_per_round: $per_round,
   netboot_adds_s_before_initrd_dhcp: $added, ratio_direct_plus_added: $added_ratio,
   runs: [split("\n")[] | select(length > 0) | split("\t") | {
     round: (.[0] | tonumber), side: .[1], ms_from_command: (.[2] | tonumber),
     ms_from_qemu_start: (.[3] | tonumber),
     stages_ms_after_qemu_start: {dhcp: (.[4] | num), script: (.[5] | num), kernel: (.[6] | num),
       initrd: (.[7] | num), initrd_dhcp: (.[8] | num), overlay: (.[9] | num), hello: (.[10] | num)},
     boot_errors: (.[11] | tonumber),
     cpu_s_lab: (.[12] | split("/")[0] | tonumber), cpu_s_others: (.[12] | split("/")[1] | tonumber),
     load_after: .[13]}]}' >"$json"
echo "$bench: results in $json" >&2
