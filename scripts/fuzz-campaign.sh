#!/usr/bin/env bash
# Long libFuzzer runs, one target after another on one core (docs/fuzzing.md):
# each target runs for SECONDS in a scratch corpus seeded from
# tests/fuzz/corpus/<target>, in fork mode so that a crash is saved and
# fuzzing goes on; a summary line per target (executions, exec/s, crashes,
# timeouts, OOMs) goes to OUT/summary.txt as each target ends. Merge what
# was found back with `-merge=1 -use_counters=0` (docs/fuzzing.md).
# A target's own settings, if any, are the lines of
# provisiond/fuzz/<target>.options: libFuzzer flags (-name=value) and
# environment settings (NAME=value; playbook_yaml: a length bound and
# ASAN_OPTIONS).
# Usage: fuzz-campaign.sh BUILD_FUZZ_DIR OUT SECONDS [TARGET...]
#   (default targets: all eleven; the build: cmake -DPROVISION_FUZZ=ON, ninja fuzz_all)
set -uo pipefail
build="$(realpath "${1:?usage: fuzz-campaign.sh BUILD_FUZZ_DIR OUT SECONDS [TARGET...]}")"
out="$(realpath -m "${2:?}")"
seconds="${3:?}"
shift 3
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=(http_router json_bodies jinja profile_yaml config_yaml
  image_manifest_yaml hostlist mac dnsmasq_log playbook_yaml tar_archive)
mkdir -p "$out"
for t in "${targets[@]}"; do
  bin="$build/provisiond/fuzz/fuzz_$t"
  [ -x "$bin" ] || { echo "$t: no $bin (ninja -C $build fuzz_all)" >>"$out/summary.txt"; continue; }
  mkdir -p "$out/$t/corpus" "$out/$t/artifacts"
  flags=() envs=()
  if [ -f "$repo/provisiond/fuzz/$t.options" ]; then
    while read -r f; do
      case "$f" in ""|\#*) ;; -*) flags+=("$f") ;; *=*) envs+=("$f") ;; esac
    done <"$repo/provisiond/fuzz/$t.options"
  fi
  started="$(date -u +%FT%TZ)"
  # Crashes land in artifacts/ (crash-*, timeout-*, oom-*), named by input hash.
  (cd "$out/$t/artifacts" &&
    env "${envs[@]}" nice -n 19 "$bin" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
      -rss_limit_mb=2048 -timeout=10 -max_total_time="$seconds" -print_final_stats=1 "${flags[@]}" \
      "$out/$t/corpus" "$repo/tests/fuzz/corpus/$t" >"$out/$t/log" 2>&1)
  rc=$?
  # Fork mode's progress lines: "#N: cov: C ft: F corp: ... exec/s: R oom/timeout/crash: O/T/C time: Ss ..."
  last="$(grep -a -E '^#[0-9]+: cov:' "$out/$t/log" | tail -1)"
  execs="$(sed -E 's/^#([0-9]+):.*/\1/' <<<"$last")"
  rate="$(sed -E 's/.*exec\/s:? ([0-9]+).*/\1/' <<<"$last")"
  otc="$(sed -E 's/.*oom\/timeout\/crash: ([0-9]+\/[0-9]+\/[0-9]+).*/\1/' <<<"$last")"
  secs="$(sed -E 's/.* time: ([0-9]+)s.*/\1/' <<<"$last")"
  printf '%s target=%s started=%s seconds=%s executions=%s exec/s=%s oom/timeout/crash=%s artifacts=%s exit=%s\n' \
    "$(date -u +%FT%TZ)" "$t" "$started" "${secs:-?}" "${execs:-?}" "${rate:-?}" "${otc:-?}" \
    "$(find "$out/$t/artifacts" -type f | wc -l)" "$rc" >>"$out/summary.txt"
done
