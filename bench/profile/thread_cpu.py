#!/usr/bin/env python3
"""Where a process's CPU goes, per thread role: CPU time of each thread between two snapshots
of /proc/PID/task/*/stat, grouped by thread name (ember names its threads: ember-schedule,
ember-infer, ember-reply, ember-tokenize; the socket thread is the process's own name), as
share of a core and microseconds per text served.

  thread_cpu.py snap PID OUT.json          # take a snapshot
  thread_cpu.py report A.json B.json TEXTS [--json OUT]   # B - A, per role, per text

Linux only; no dependencies beyond the standard library.
"""
import json
import os
import sys
import time


def snap(pid):
    ticks = os.sysconf("SC_CLK_TCK")
    threads = {}
    task_dir = f"/proc/{pid}/task"
    for tid in os.listdir(task_dir):
        try:
            with open(f"{task_dir}/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # the thread ended meanwhile
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        # fields[11], fields[12]: utime, stime (stat fields 14 and 15)
        cpu = (int(fields[11]) + int(fields[12])) / ticks
        threads[tid] = {"name": name, "cpu_s": cpu}
    return {"pid": pid, "time": time.monotonic(), "threads": threads}


def report(a, b, texts):
    wall = b["time"] - a["time"]
    roles = {}
    for tid, t in b["threads"].items():
        before = a["threads"].get(tid, {"cpu_s": 0.0})["cpu_s"]
        role = roles.setdefault(t["name"], {"threads": 0, "cpu_s": 0.0})
        role["threads"] += 1
        role["cpu_s"] += t["cpu_s"] - before
    rows = []
    for name, r in sorted(roles.items(), key=lambda kv: -kv[1]["cpu_s"]):
        rows.append(
            {
                "role": name,
                "threads": r["threads"],
                "cpu_s": round(r["cpu_s"], 3),
                "cores": round(r["cpu_s"] / wall, 3) if wall > 0 else 0,
                "us_per_text": round(1e6 * r["cpu_s"] / texts, 3) if texts else None,
            }
        )
    total = sum(r["cpu_s"] for r in roles.values())
    return {
        "wall_s": round(wall, 3),
        "texts": texts,
        "cpu_s": round(total, 3),
        "us_per_text": round(1e6 * total / texts, 3) if texts else None,
        "roles": rows,
    }


def main(argv):
    if len(argv) >= 3 and argv[0] == "snap":
        with open(argv[2], "w") as f:
            json.dump(snap(int(argv[1])), f)
        return 0
    if len(argv) >= 4 and argv[0] == "report":
        with open(argv[1]) as f:
            a = json.load(f)
        with open(argv[2]) as f:
            b = json.load(f)
        r = report(a, b, int(float(argv[3])))
        if len(argv) >= 6 and argv[4] == "--json":
            with open(argv[5], "w") as f:
                json.dump(r, f, indent=2)
        print(f"{'thread role':<18} {'threads':>7} {'cpu s':>8} {'cores':>6} {'us/text':>9}")
        for row in r["roles"]:
            us = "" if row["us_per_text"] is None else f"{row['us_per_text']:.2f}"
            print(f"{row['role']:<18} {row['threads']:>7} {row['cpu_s']:>8.2f} {row['cores']:>6.2f} {us:>9}")
        us = "" if r["us_per_text"] is None else f"{r['us_per_text']:.2f}"
        print(f"{'all':<18} {'':>7} {r['cpu_s']:>8.2f} {r['cpu_s'] / r['wall_s']:>6.2f} {us:>9}")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
