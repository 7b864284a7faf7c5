#!/usr/bin/env bash
# scale_bench.sh: does a node's work cost more as the inventory grows? The
# same work timed with 1,000 and with 10,000 nodes in provisiond's inventory
# (each size on a fresh data dir):
#   - per-node work, which should cost the same at both sizes (ratio near 1:
#     nothing a request does walks the inventory): 1,000 nodes boot and phone
#     home, 16 at a time (bench_node_sim --hello: start.ipxe, the node's
#     script, ticket.img, the overlay from a privileged port, the hello; each
#     hello also starts a configure run that fails at once, ssh.port 1), and
#     1,000 GET /api/v1/nodes/<name> on one connection;
#   - whole-inventory work, which should grow with the inventory and no
#     faster (ratio near the size ratio, 10; quadratic would be 100):
#     enrolling every node through the API (16 at a time), GET /api/v1/nodes
#     (the whole list, median of 5), and provisiond's resident memory after.
# Usage: tests/bench/scale_bench.sh [--sizes 1000,10000] [--work 1000]
#          [--build-dir build-bench] [--dir TMP] [--json FILE]
set -euo pipefail

bench=scale_bench
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build_dir=$repo/build-bench
sizes=1000,10000 work=1000 json_out='' tmp_base=${TMPDIR:-/tmp}
usage() {
  sed -n '/^# Usage:/,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
}
while (($#)); do
  case $1 in
    --sizes) sizes=${2:?}; shift 2 ;;
    --work) work=${2:?}; shift 2 ;;
    --build-dir) build_dir=${2:?}; shift 2 ;;
    --dir) tmp_base=${2:?}; shift 2 ;;
    --json) json_out=${2:?}; shift 2 ;;
    -h | --help) usage ;;
    *) echo "$bench: unknown argument '$1'" >&2; usage ;;
  esac
done
IFS=, read -r -a size_list <<<"$sizes"
((${#size_list[@]} == 2)) || { echo "--sizes takes two sizes, e.g. 1000,10000" >&2; exit 2; }
[[ $work =~ ^[1-9][0-9]*$ ]] || { echo "--work must be a number" >&2; exit 2; }
for n in "${size_list[@]}"; do
  [[ $n =~ ^[1-9][0-9]*$ && $n -ge $work && $n -le 60000 ]] ||
    { echo "each size must be $work..60000" >&2; exit 2; }
done
provisiond=$build_dir/provisiond/provisiond
provisionctl=$build_dir/provisiond/provisionctl
node_sim=$build_dir/tests/bench/bench_node_sim
json_out=${json_out:-$build_dir/tests/bench/scale_bench.json}
source "$repo/tests/bench/boot_bench_common.sh"
for f in "$provisiond" "$provisionctl" "$node_sim"; do
  [[ -x $f ]] || die "$f is not built (ninja -C $build_dir provisiond provisionctl bench_node_sim)"
done
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
wall() { sed -n 's/.*"wall_s":\([0-9.]*\).*/\1/p' "$1"; }

# One size, on a fresh data dir (removed after); sets result to
# "SIZE ENROLL_S BOOT_S GET_S LIST_MS RSS_KIB".
measure() {
  local n=$1 t i list_ms=()
  start_bench_provisiond "ssh.port: 1" "listen_connections: $((n + 1024))"
  setup_lab_image 1 4
  "$node_sim" --url "$URL" --token "$TOKEN" --nodes "$n" --prefix lab --enroll \
    --concurrency 16 >"$DATA/enroll.json" || die "enrolling $n nodes failed: $(cat "$DATA/enroll.json")"
  "$node_sim" --url "$URL" --nodes "$work" --prefix lab --hello --concurrency 16 \
    >"$DATA/boot.json" 2>"$DATA/boot.err" || die "booting $work of $n nodes failed: $(cat "$DATA/boot.json" "$DATA/boot.err")"
  for ((i = 0; i < work; i++)); do
    printf 'url = "%s/api/v1/nodes/lab%05d"\noutput = /dev/null\n' "$URL" $((i * (n / work)))
  done >"$DATA/get.curl"
  t=$(now)
  curl -sf --noproxy '*' -H "Authorization: Bearer $TOKEN" -K "$DATA/get.curl" || die "GET of one node failed"
  local get_s
  get_s=$(since "$t")
  for i in 1 2 3 4 5; do
    list_ms+=("$(curl -sf --noproxy '*' -H "Authorization: Bearer $TOKEN" -o "$DATA/list.json" \
      -w '%{time_total}' "$URL/api/v1/nodes" | awk '{ printf "%.2f", $1 * 1000 }')")
  done
  grep -q "\"count\":$n}" "$DATA/list.json" || die "the list does not hold $n nodes"
  result="$n $(wall "$DATA/enroll.json") $(wall "$DATA/boot.json") $get_s $(median "${list_ms[@]}") $(awk '/VmRSS/ {print $2}' "/proc/$PROVISIOND_PID/status")"
  stop_pid "$PROVISIOND_PID"
  rm -rf "$DATA"
}
results=()
for n in "${size_list[@]}"; do
  echo "$bench: $n nodes in the inventory..." >&2
  measure "$n"
  results+=("$result")
done
read -r n1 e1 b1 g1 l1 r1 <<<"${results[0]}"
read -r n2 e2 b2 g2 l2 r2 <<<"${results[1]}"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b / a }'; }
echo "$bench: the same work with $n1 and $n2 nodes in the inventory ($(nproc) CPUs); size ratio $(ratio "$n1" "$n2")"
printf '%-46s %12s %12s %8s\n' work "$n1 nodes" "$n2 nodes" ratio
printf '%-46s %12s %12s %8s\n' "$work nodes boot and phone home, 16 at a time (s)" "$b1" "$b2" "$(ratio "$b1" "$b2")"
printf '%-46s %12s %12s %8s\n' "$work GET /api/v1/nodes/<name>, one connection (s)" "$g1" "$g2" "$(ratio "$g1" "$g2")"
printf '%-46s %12s %12s %8s\n' "enroll every node, 16 at a time (s)" "$e1" "$e2" "$(ratio "$e1" "$e2")"
printf '%-46s %12s %12s %8s\n' "GET /api/v1/nodes, the whole list (ms, median of 5)" "$l1" "$l2" "$(ratio "$l1" "$l2")"
printf '%-46s %12s %12s %8s\n' "resident memory after (KiB)" "$r1" "$r2" "$(ratio "$r1" "$r2")"
mkdir -p "$(dirname "$json_out")"
cat >"$json_out" <<JSON
{
  "benchmark": "scale", "date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)", "cpus": $(nproc), "work": $work,
  "sizes": [$n1, $n2],
  "boot_and_hello_s": [$b1, $b2], "get_one_node_s": [$g1, $g2], "enroll_all_s": [$e1, $e2],
  "list_all_ms": [$l1, $l2], "rss_kib": [$r1, $r2]
}
JSON
echo "results: $json_out"
