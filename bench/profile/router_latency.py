#!/usr/bin/env python3
"""Where a request's time goes outside the worker, from the router's own histograms: the mean
time from accepting a request to answering it (ember_router_request_duration_seconds) and from
sending it to a worker to the worker's reply (ember_router_dispatch_duration_seconds), for one
model, between two snapshots of the router's /metrics (its `metrics-listen`).

A closed loop serves in-flight / latency requests per second; with the client's mean latency
(ember-loadgen's latency_ms.mean) and the worker's mean stay (bench/gpu/batch_trace.py) these
split it into: client and its sockets | the router (queue, main thread, its I/O) | the way to the
worker and back | the worker.

  router_latency.py snap URL OUT.txt                     # take a snapshot of URL (/metrics)
  router_latency.py report A.txt B.txt MODEL [--json OUT]  # B - A: means in ms, counts

Standard library only.
"""
import json
import re
import sys
import urllib.request

FAMILIES = {"router_ms": "ember_router_request_duration_seconds",
            "dispatch_ms": "ember_router_dispatch_duration_seconds"}


def sums(text, model):
    """{family: (sum_seconds, count)} for `model` in a Prometheus text exposition."""
    out = {}
    for key, family in FAMILIES.items():
        values = {}
        for part in ("sum", "count"):
            m = re.search(rf'^{family}_{part}{{[^}}]*model="{re.escape(model)}"[^}}]*}} (\S+)$',
                          text, re.M)
            values[part] = float(m.group(1)) if m else 0.0
        out[key] = (values["sum"], values["count"])
    return out


def report(a, b, model):
    before, after = sums(a, model), sums(b, model)
    out = {"model": model}
    for key in FAMILIES:
        s = after[key][0] - before[key][0]
        n = after[key][1] - before[key][1]
        out[key] = 1000 * s / n if n > 0 else None
        out[key.replace("_ms", "_count")] = int(n)
    return out


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "snap":
        with urllib.request.urlopen(sys.argv[2], timeout=5) as r:
            text = r.read().decode()
        with open(sys.argv[3], "w") as f:
            f.write(text)
    elif len(sys.argv) in (5, 7) and sys.argv[1] == "report":
        a, b = (open(p).read() for p in sys.argv[2:4])
        r = report(a, b, sys.argv[4])
        print(json.dumps(r))
        if len(sys.argv) == 7 and sys.argv[5] == "--json":
            with open(sys.argv[6], "w") as f:
                json.dump(r, f, indent=2)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
