#!/usr/bin/env bash
# failover_bench.sh: how long a cluster of two control nodes takes to recover
# when the active one dies (seed 004: under 30 s; the aim is 10), beside the
# time PostgreSQL's own failover takes, in one run.
#
# provisiond: tests/lab/ha_test.sh with HA_ROUNDS=N: two control nodes in
# network namespaces on the lab bridge, each with its pg_auto_failover data
# node (the monitor on a third machine), a QEMU node reading its NFS root in a
# loop; each round kills every process of the active control node (SIGKILL,
# link down; the database's primary with it) and times, from the kill, the
# other data node taking writes, the first boot script served at the cluster
# address and the reading node's next good read; the dead one comes back as a
# standby (its data node as the secondary) and the next round kills the other.
# The peer: tests/integration/pg_failover_test.sh, pg_auto_failover losing its
# primary alone (SIGKILL) under provisiond, run N times: PostgreSQL's own time
# to take writes again.
#
# Usage: sudo tests/bench/failover_bench.sh [--build-dir DIR] [--rounds N]
#   --build-dir DIR   where provisiond and provisionctl were built (default:
#                     <repo>/build-asan, the test command's build)
#   --rounds N        takeovers, and PostgreSQL failovers (default 3)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build_dir=$repo/build-asan rounds=3
while (($#)); do
  case $1 in
    --build-dir) build_dir=${2:?}; shift 2 ;;
    --rounds) rounds=${2:?}; shift 2 ;;
    *) sed -n '/^# Usage:/,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "failover_bench: run as root (namespaces, QEMU, PostgreSQL)" >&2; exit 1; }
bin=$build_dir/provisiond
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "== provisiond: $rounds takeover(s) in the lab (tests/lab/ha_test.sh)"
HA_ROUNDS=$rounds bash "$repo/tests/lab/ha_test.sh" "$bin/provisiond" "$bin/provisionctl" 2>&1 |
  tee "$out/lab.log" | grep -a "round [0-9]*:\|PASS\|FAIL" || true
grep -a -q "PASS:" "$out/lab.log" || { tail -40 "$out/lab.log"; echo "failover_bench: the lab run failed" >&2; exit 1; }

echo "== PostgreSQL (pg_auto_failover): $rounds failover(s) (tests/integration/pg_failover_test.sh)"
for i in $(seq 1 "$rounds"); do
  bash "$repo/tests/integration/pg_failover_test.sh" "$bin/provisiond" >"$out/pg$i.log" 2>&1 ||
    { tail -30 "$out/pg$i.log"; echo "failover_bench: pg_failover run $i failed" >&2; exit 1; }
  grep -a "PostgreSQL took writes again" "$out/pg$i.log" | sed 's/^.*failover: //'
done

python3 - "$out" "$rounds" <<'PY'
import glob, re, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
lab = open(f"{out}/lab.log", errors="replace").read()
boot = [int(x) for x in re.findall(r"served a boot script (\d+) ms later", lab)]
read = [int(x) for x in re.findall(r"next read (\d+) ms later", lab)]
lab_pg = [int(x) for x in re.findall(r"took writes (\d+) ms later", lab)]
pg, prov = [], []
for f in sorted(glob.glob(f"{out}/pg*.log")):
    m = re.search(r"PostgreSQL took writes again (\d+) ms .*provisiond (\d+) ms", open(f, errors="replace").read())
    if m:
        pg.append(int(m.group(1))); prov.append(int(m.group(2)))
def row(name, xs):
    if not xs:
        return f"| {name} | - | - | - |"
    return f"| {name} | {min(xs)} | {statistics.median(xs):.0f} | {max(xs)} |"
print()
print(f"| from the kill to ... (ms, {rounds} rounds) | min | median | max |")
print("| --- | ---: | ---: | ---: |")
print(row("control node killed: its database's other node takes writes", lab_pg))
print(row("control node killed: the new active's first boot script", boot))
print(row("control node killed: the reading node's next good read", read))
print(row("PostgreSQL primary killed: PostgreSQL takes writes again", pg))
print(row("PostgreSQL primary killed: provisiond acknowledges writes again", prov))
if boot and pg:
    print(f"\nratio, median boot script after a control node's death / median PostgreSQL failover: "
          f"{statistics.median(boot) / statistics.median(pg):.2f}")
PY
