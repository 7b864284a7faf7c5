#!/usr/bin/env python3
"""Where a machine's CPU time goes while a command runs, by program.

Usage: cpu-by-program.py OUT_FILE     (stops on SIGTERM or SIGINT)

Every 2 seconds it reads each process's user and system time from
/proc/PID/stat and adds what it used since the last reading to its program's
name (kernel worker threads as "kworker"). At the end it writes OUT_FILE: the
share of the time the machine's CPUs were busy, and the CPU seconds of each
program, largest first. A process that starts and ends between two readings is not seen:
the short-lived ones (a compiler's passes, `sh -c`) are counted short, and
the total below the machine's own is what they used.
"""
import os
import re
import signal
import sys
import time

HZ = os.sysconf("SC_CLK_TCK")
INTERVAL = 2.0


def read_processes():
    seen = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        # utime and stime are fields 14 and 15 of stat(5); starttime is 22.
        seen[(pid, fields[19])] = (name, int(fields[11]) + int(fields[12]))
    return seen


def program(name):
    name = re.sub(r"^kworker/.*", "kworker", name)
    return re.sub(r"/\d+$", "", name)  # ksoftirqd/0 -> ksoftirqd


def machine_busy_ticks():
    # user nice system idle iowait irq softirq steal: all but idle and iowait.
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return sum(v) - v[3] - v[4]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    before = read_processes()
    machine0 = machine_busy_ticks()
    start = time.monotonic()
    used = {}
    while True:
        if not stop:
            time.sleep(INTERVAL)
        now = read_processes()
        for key, (name, ticks) in now.items():
            # A process first seen now: what it used since it started.
            delta = ticks - before[key][1] if key in before else ticks
            if delta > 0:
                used[program(name)] = used.get(program(name), 0) + delta
        before = now
        if stop:
            break
    wall = time.monotonic() - start
    busy = (machine_busy_ticks() - machine0) / HZ
    total = sum(used.values()) / HZ
    cpus = os.cpu_count() or 1
    with open(sys.argv[1], "w") as out:
        out.write(f"{wall:.0f} s on {cpus} CPUs, busy {100 * busy / max(wall * cpus, 1):.0f}% of "
                  f"the time: {busy:.0f} CPU s, {total:.0f} s of it seen by program\n")
        for name, ticks in sorted(used.items(), key=lambda kv: -kv[1])[:25]:
            out.write(f"  {name:<24} {ticks / HZ:8.0f} s  {100 * ticks / HZ / max(busy, 1):5.1f}%\n")


if __name__ == "__main__":
    main()
