#!/usr/bin/env bash
# image_build_bench.sh: `provisionctl image build IMAGE` (provisiond on
# 127.0.0.1, a fresh image store each time, so it really builds) against plain
# mmdebstrap run with the arguments provisiond gives it (image_builder.cc) into
# a fresh directory. Both download every package from the image's mirror.
#
# Usage: tests/bench/image_build_bench.sh [--build-dir DIR] [--image NAME]
#          [--rounds N] [--dir DIR] [--json FILE]            (root)
# See tests/bench/README.md.
set -euo pipefail
bench=image_build_bench
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build_dir="$repo/build" image=lab rounds=2 json='' tmp_base="${TMPDIR:-/tmp}"
usage() { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; }
while (($#)); do
  case "$1" in
    --build-dir) build_dir="$2"; shift 2 ;;
    --image) image="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --dir) tmp_base="$2"; shift 2 ;;
    --json) json="$2"; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "$bench: --rounds: a positive integer" >&2; exit 2; }
build_dir="$(cd "$build_dir" && pwd)"
provisiond="$build_dir/provisiond/provisiond"
provisionctl="$build_dir/provisiond/provisionctl"
manifest="$repo/images/$image/image.yaml"
: "${json:=$build_dir/tests/bench/$bench.json}"

PROVISIOND=$provisiond PROVISIONCTL=$provisionctl WORK_BASE=$tmp_base WORK_NAME=$bench
# shellcheck source=tests/lib.sh
source "$repo/tests/lib.sh"
[ "$(id -u)" -eq 0 ] || die "run as root (mmdebstrap --mode=root, as provisiond runs it)"
for tool in jq curl mmdebstrap; do command -v "$tool" >/dev/null || die "missing $tool"; done
for f in "$provisiond" "$provisionctl" "$build_dir/provisiond/provision-facts" \
  "$build_dir/provisiond/provision-mount"; do
  [ -x "$f" ] || die "missing $f (ninja -C $build_dir provisiond provisionctl provision-facts provision-mount)"
done
[ -r "$manifest" ] || die "no $manifest"
mkdir -p "$(dirname "$json")"

now_ms() { local t="${EPOCHREALTIME//[!0-9]/}"; echo $((t / 1000)); }
median() {
  printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
    n = NR; printf "%.3f\n", (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }'
}
ms_to_s() { awk -v m="$1" 'BEGIN { printf "%.1f", m / 1000 }'; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
# CPU time of the whole machine so far (all CPUs, user + nice + system + irq + softirq +
# steal, in clock ticks), and ticks per second.
machine_busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
hz="$(getconf CLK_TCK)"

# --- the mmdebstrap command line provisiond runs (image_builder.cc), from the
# manifest: top-level scalars, and lists written as `key: [a, b]` or `  - a`.
yaml_scalar() { awk -v k="$1" '$0 ~ "^" k ":" { sub("^" k ":[ \t]*", ""); sub("[ \t]+#.*", ""); gsub(/^["'\'']|["'\'']$/, ""); print; exit }' "$manifest"; }
yaml_list() {
  awk -v k="$1" '
    $0 ~ "^" k ":" { rest = $0; sub("^" k ":[ \t]*", "", rest)
      if (rest ~ /^\[/) { gsub(/[][ \t"'\'']/, "", rest); n = split(rest, a, ","); for (i = 1; i <= n; i++) if (a[i] != "") print a[i]; exit }
      inlist = 1; next }
    inlist && /^[ \t]+-[ \t]/ { v = $0; sub(/^[ \t]+-[ \t]+/, "", v); sub(/[ \t]+#.*/, "", v); gsub(/["'\'']/, "", v); print v; next }
    inlist && /^[ \t]*(#.*)?$/ { next }
    inlist { exit }' "$manifest"
}
grep -q '^apt_sources:' "$manifest" && die "$manifest has apt_sources: not handled here"
suite="$(yaml_scalar suite)" mirror="$(yaml_scalar mirror)" kernel_package="$(yaml_scalar kernel_package)"
arch="$(yaml_scalar architecture)"
: "${arch:=amd64}"
mapfile -t components < <(yaml_list components)
((${#components[@]})) || components=(main)
mapfile -t packages < <(yaml_list packages)
{ [ -n "$suite" ] && [ -n "$mirror" ] && [ -n "$kernel_package" ] && ((${#packages[@]})); } ||
  die "could not read suite, mirror, kernel_package and packages from $manifest"
include="$kernel_package$(printf ',%s' "${packages[@]}")"
mm_args=(--mode=root --variant=minbase "--architectures=$arch" "--components=$(IFS=,; echo "${components[*]}")"
  "--include=$include" '--aptopt=Acquire::Languages "none"'
  '--dpkgopt=path-exclude=/usr/share/man/*' '--dpkgopt=path-exclude=/usr/share/doc/*'
  '--dpkgopt=path-include=/usr/share/doc/*/copyright' '--dpkgopt=path-exclude=/usr/share/locale/*')

mm_pid=''
# mmdebstrap in its own process group (run_mmdebstrap): the whole group.
stop_mmdebstrap() {
  if [ -n "$mm_pid" ] && kill -0 "$mm_pid" 2>/dev/null; then
    kill -TERM -- "-$mm_pid" 2>/dev/null || true
    wait "$mm_pid" 2>/dev/null || true
  fi
}
CLEANUP_HOOKS+=(stop_mmdebstrap)

# --- the two sides ------------------------------------------------------------------
# Each sets res_ms (wall time) and leaves its log in $WORK/run-N.log.
runs=0 res_ms=0 res_cpu=0

run_provisiond() {
  local dir="$WORK/p$runs" t0 t1 log="$WORK/run-$runs.log"
  FAILURE_LOGS+=("$log")
  mkdir -p "$dir/data" "$dir/store"
  chmod 700 "$dir/data"
  start_provisiond "p$runs" "images_dir: $repo/images" "pxe_dir: $repo/pxe" "image_store: $dir/store" \
    "tools_dir: $build_dir/provisiond"
  t0="$(now_ms)"
  "$provisionctl" image build "$image" >"$log" 2>&1 ||
    die "provisionctl image build $image failed"
  t1="$(now_ms)"
  res_ms=$((t1 - t0))
  # provisiond's CPU time with its waited-for children (mmdebstrap, apt, dpkg, the initrd script).
  local stat
  stat="$(cat "/proc/$PROVISIOND_PID/stat")"
  read -r -a stat <<<"${stat##*) }"  # fields from 3 on: utime, stime, cutime, cstime are 14-17
  res_cpu=$((stat[11] + stat[12] + stat[13] + stat[14]))
  # The build's events: their times split the build into its phases.
  curl -sSf --noproxy '*' -H "Authorization: Bearer $TOKEN" "$URL/api/v1/events?limit=100000" |
    jq -c '.events[] | select(.kind | startswith("image-build") or . == "image-built")' >"$WORK/run-$runs.events"
  jq -r --arg n "$image" '
    if (.detail | test(": mmdebstrap [a-z0-9-]+ with ")) then "\(.time) START"
    elif (.detail | startswith($n + ": mmdebstrap: ")) then "\(.time) \(.detail | sub("^[^:]*: mmdebstrap: "; ""))"
    else empty end' "$WORK/run-$runs.events" >"$WORK/run-$runs.mm"
  local v
  v="$(cat "$dir/store/$image/current")"
  cp "$dir/store/$image/$v/image.json" "$WORK/run-$runs.image.json"
  stat -c %s "$dir/store/$image/$v/initrd.img" >"$WORK/run-$runs.initrd-size"
  stop_pid "$PROVISIOND_PID" 10
  rm -rf "$dir"
  # Phases: the first event of each step (provisiond's own "say" lines).
  jq -s -r --argjson t0 "$t0" --argjson t1 "$t1" '
    def first(p): (map(select(.detail | test(p))) | .[0].time // null);
    [first(": started \\("), first(": checking mirror "), first(": mmdebstrap [a-z0-9-]+ with "),
     first(": mmdebstrap: I: success in "), first(": adding files and the phone-home agent$"),
     first(": building the netboot initrd$"), first(": hashing the root tree$"),
     (map(select(.kind == "image-built")) | .[0].time // null)]
    | [$t0] + . + [$t1] | map(tostring) | join(" ")' "$WORK/run-$runs.events" >"$WORK/run-$runs.phases"
}

# mmdebstrap's output through a pipe, as provisiond reads it, each line with
# the time in ms; its own process group (setsid), so a Ctrl-C stops apt too.
run_mmdebstrap() {
  local dir="$WORK/m$runs" t0 t1 log="$WORK/run-$runs.log"
  FAILURE_LOGS+=("$log")
  mkdir -p "$dir"
  t0="$(now_ms)"
  # shellcheck disable=SC2016 # expanded by the inner bash
  # (`times`, last: the CPU time of its waited-for children, mmdebstrap with apt and dpkg.)
  setsid bash -c 'set -o pipefail; INITRD=No "$@" 2>&1 | while IFS= read -r l; do
      t="${EPOCHREALTIME//[!0-9]/}"; printf "%s %s\n" "$((t / 1000))" "$l"; done; rc=$?
      times >&3; exit $rc' \
    _ mmdebstrap "${mm_args[@]}" "$suite" "$dir/root" "$mirror" >"$log" 3>"$WORK/run-$runs.times" &
  mm_pid=$!
  wait "$mm_pid" || { mm_pid=''; die "mmdebstrap failed"; }
  mm_pid=''
  t1="$(now_ms)"
  res_ms=$((t1 - t0))
  # "0m12.345s 0m4.567s" (user, system) on the second line, in ticks.
  res_cpu="$(awk -v hz="$hz" 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] }
    printf "%d", t * hz }' "$WORK/run-$runs.times")"
  { echo "$t0 START"; cat "$log"; } >"$WORK/run-$runs.mm"
  du -s --block-size=1M "$dir/root" | awk '{print "root " $1 " MiB"}' >"$WORK/run-$runs.info"
  rm -rf "$dir"
}

# mmdebstrap's steps from its "I:" lines (FILE: "MS TEXT" lines, START first):
# prints setup, apt update, essential download, extract, essential install,
# remaining (download and install), cleanup, in ms.
mm_steps() {
  awk '
    BEGIN { n = split("START|I: running apt-get update|I: downloading packages with apt|I: extracting archives|I: installing essential packages|I: installing remaining packages|I: cleaning package lists|I: success in", m, "|") }
    { t = $1; $1 = ""; sub(/^ /, "")
      for (i = 1; i <= n; i++) if (!(i in at) && index($0, m[i]) == 1) at[i] = t }
    END { out = ""
      for (i = 2; i <= n; i++) out = out (i > 2 ? " " : "") ((i in at) && ((i - 1) in at) ? at[i] - at[i - 1] : "-")
      print out }' "$1"
}

echo "$bench: $image ($suite from $mirror, $kernel_package + ${#packages[@]} packages), $rounds rounds" >&2
echo "$bench: mmdebstrap ${mm_args[*]} $suite DIR $mirror (INITRD=No)" >&2
load_start="$(load)"
declare -a p_ms=() m_ms=() ratio=() rows=()
for ((r = 1; r <= rounds; r++)); do
  if ((r % 2)); then order=(provisiond mmdebstrap); else order=(mmdebstrap provisiond); fi
  for side in "${order[@]}"; do
    runs=$((runs + 1))
    l0="$(load)"
    b0="$(machine_busy)"
    "run_$side"
    b1="$(machine_busy)"
    # CPU seconds: this side's own (with its children), and the rest of the machine's meanwhile.
    own="$(awk -v c="$res_cpu" -v hz="$hz" 'BEGIN { printf "%.1f", c / hz }')"
    others="$(awk -v b="$((b1 - b0))" -v c="$res_cpu" -v hz="$hz" 'BEGIN { printf "%.1f", (b - c) / hz }')"
    if [ "$side" = provisiond ]; then
      p_ms+=("$res_ms")
      info="$(jq -r --argjson i "$(cat "$WORK/run-$runs.initrd-size")" '"\(.files) files, \(.bytes / 1048576 | floor) MiB in the root, initrd \($i / 1048576 * 10 | round / 10) MiB, build_seconds \(.build_seconds * 10 | round / 10)"' "$WORK/run-$runs.image.json")"
      # The manifest as read here is the one provisiond built.
      jq -e --arg s "$suite" --arg m "$mirror" --arg p "$(printf '%s\n' "${packages[@]}")" \
        '.suite == $s and .mirror == $m and (.packages | join("\n")) == $p' "$WORK/run-$runs.image.json" >/dev/null ||
        die "provisiond built other suite, mirror or packages than read from $manifest"
    else
      m_ms+=("$res_ms")
      info="$(cat "$WORK/run-$runs.info")"
    fi
    mm_self="$(sed -n 's/.*I: success in \([0-9.]*\) seconds.*/\1/p' "$WORK/run-$runs.log" | tail -n 1)"
    rows+=("$r	$side	$res_ms	${mm_self:--}	$l0	$info	$(mm_steps "$WORK/run-$runs.mm")	$own	$others")
    echo "$bench: round $r $side: $(ms_to_s "$res_ms") s (mmdebstrap's own: ${mm_self:--} s; $info)" >&2
  done
  ratio+=("$(awk -v a="${p_ms[-1]}" -v b="${m_ms[-1]}" 'BEGIN { printf "%.3f", a / b }')")
done

# --- report ----------------------------------------------------------------------------
m_p="$(median "${p_ms[@]}")" m_m="$(median "${m_ms[@]}")"
m_ratio="$(awk -v a="$m_p" -v b="$m_m" 'BEGIN { printf "%.3f", a / b }')"
# provisiond's phases, medians over its runs (s): between two marks.
phase_med() {  # phase_med FROM_INDEX TO_INDEX (marks: 0 t0, 1 started, 2 checking mirror,
  # 3 mmdebstrap, 4 I: success, 5 adding files, 6 initrd, 7 hashing, 8 built, 9 t1)
  local f="$1" t="$2" vals=() file m
  for file in "$WORK"/run-*.phases; do
    read -r -a m <"$file"
    [ "${m[f]}" = null ] || [ "${m[t]}" = null ] && continue
    vals+=("$((m[t] - m[f]))")
  done
  ((${#vals[@]})) && ms_to_s "$(median "${vals[@]}")" || echo -
}
{
  echo "$bench: provisionctl image build $image vs mmdebstrap with the same arguments; $rounds rounds, alternating"
  echo "$suite from $mirror: $kernel_package + ${#packages[@]} packages; fresh image store / target each run, under $tmp_base"
  echo "$(nproc) CPUs, load average $load_start at start, $(mmdebstrap --version 2>/dev/null | head -n 1)"
  echo "CPU s: the side's own (with its children) / the rest of the machine's during the run"
  printf '%-5s %-11s %7s %12s %11s  %-15s %s\n' round side "wall s" "mmdebstrap s" "CPU s" "load before" result
  for row in "${rows[@]}"; do
    IFS=$'\t' read -r r side ms self l info _ own others <<<"$row"
    printf '%-5s %-11s %7s %12s %11s  %-15s %s\n' "$r" "$side" "$(ms_to_s "$ms")" "$self" "$own/$others" "$l" "$info"
  done
  echo "mmdebstrap's steps in each run (s, from its I: lines: provisiond's events, or our pipe):"
  printf '%-5s %-11s %7s %7s %9s %8s %9s %9s %8s\n' round side setup update essential extract ess.inst remaining cleanup
  for row in "${rows[@]}"; do
    IFS=$'\t' read -r r side ms self l info steps _ <<<"$row"
    read -r -a st <<<"$steps"
    for i in "${!st[@]}"; do [ "${st[i]}" = - ] || st[i]="$(ms_to_s "${st[i]}")"; done
    printf '%-5s %-11s %7s %7s %9s %8s %9s %9s %8s\n' "$r" "$side" "${st[@]}"
  done
  printf 'median provisiond: %s s; mmdebstrap: %s s\n' "$(ms_to_s "$m_p")" "$(ms_to_s "$m_m")"
  echo "ratio provisiond/mmdebstrap (medians): $m_ratio; within each round: ${ratio[*]}"
  echo "provisiond's build, from its progress events (medians, s):"
  printf '  request -> build started           %6s\n' "$(phase_med 0 1)"
  printf '  mirror check (HEAD Release)        %6s\n' "$(phase_med 2 3)"
  printf '  mmdebstrap (start -> I: success)   %6s\n' "$(phase_med 3 4)"
  printf '  mmdebstrap exit -> next step       %6s\n' "$(phase_med 4 5)"
  printf '  files, agent, kernel copy          %6s\n' "$(phase_med 5 6)"
  printf '  netboot initrd (build-initrd.sh)   %6s\n' "$(phase_med 6 7)"
  printf '  hash root tree, count, move        %6s\n' "$(phase_med 7 8)"
  printf '  built -> provisionctl exits        %6s\n' "$(phase_med 8 9)"
} | tee "$WORK/report.txt"

{
  for row in "${rows[@]}"; do echo "$row"; done
} | jq -R -s --arg bench "$bench" --arg image "$image" --argjson rounds "$rounds" \
  --argjson cpus "$(nproc)" --arg load_start "$load_start" --arg suite "$suite" --arg mirror "$mirror" \
  --argjson m_p "$m_p" --argjson m_m "$m_m" --argjson m_ratio "$m_ratio" \
  --argjson per_round "[$(IFS=,; echo "${ratio[*]}")]" \
  --argjson phases "$(cat "$WORK"/run-*.phases | jq -R -s 'split("\n") | map(select(length > 0) | split(" ") | map(if . == "null" then null else tonumber end))')" \
  --arg mm_args "${mm_args[*]}" '
  {bench: $bench, image: $image, suite: $suite, mirror: $mirror, rounds: $rounds, cpus: $cpus,
   load_start: $load_start, mmdebstrap_args: $mm_args,
   median_ms: {provisiond: $m_p, mmdebstrap: $m_m}, ratio_provisiond_mmdebstrap: $m_ratio,
   ratio_per_round: $per_round,
   provisiond_phase_marks_ms: {marks: ["request", "started", "checking mirror", "mmdebstrap",
     "mmdebstrap I: success", "adding files", "initrd", "hashing", "built", "provisionctl exit"],
     runs: $phases},
   runs: [split("\n")[] | select(length > 0) | split("\t") | {round: (.[0] | tonumber), side: .[1],
     wall_ms: (.[2] | tonumber), mmdebstrap_own_s: (if .[3] == "-" then null else (.[3] | tonumber) end),
     load: .[4], result: .[5], cpu_s_own: (.[7] | tonumber), cpu_s_others: (.[8] | tonumber),
     mmdebstrap_steps_ms: (.[6] | split(" ") | map(if . == "-" then null else tonumber end)
       | {setup: .[0], apt_update: .[1], essential_download: .[2], extract: .[3],
          essential_install: .[4], remaining_download_install: .[5], cleanup: .[6]})}]}' >"$json"
echo "$bench: results in $json" >&2
