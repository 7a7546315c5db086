#!/usr/bin/env python3
"""The table at the end of scripts/gpu-bench.sh: ember served (ZeroMQ and HTTP) against the HF
forward and sentence-transformers encode on the same passages, GPU busy %, latency, the
issue-24 goals, and where the worker's CPU goes per thread role.

  serve_summary.py OUT_DIR --seconds S [--json summary.json]
"""
import argparse
import glob
import json
import os

from summarize import load


def gpu_busy(path):
    """Mean of nvidia-smi utilization samples (one per 200 ms) taken over the measured window."""
    try:
        with open(path) as f:
            samples = [float(x) for x in f.read().split() if x.strip().replace(".", "").isdigit()]
    except OSError:
        return None
    return sum(samples) / len(samples) if samples else None


def mean_batch(run):
    sizes = run.get("batch_sizes") or {}
    n = sum(sizes.values())
    return sum(int(k) * v for k, v in sizes.items()) / n if n else None


def fmt(x, spec="{:,.0f}"):
    return "-" if x is None else spec.format(x)


def minus(a, b):
    return None if a is None or b is None else a - b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--json")
    args = ap.parse_args()
    d = args.out
    gpu = open(os.path.join(d, "gpu.txt")).read().strip() if os.path.exists(os.path.join(d, "gpu.txt")) else ""
    peers = {}
    for kind in ("hf", "st"):
        for p in glob.glob(os.path.join(d, f"{kind}-*.json")):
            r = load(p)
            if r:
                peers[(kind, os.path.basename(p)[len(kind) + 1 : -5])] = r["texts_per_s"]
    rows = []
    for p in sorted(glob.glob(os.path.join(d, "*-*-*.json"))):
        name = os.path.basename(p)[:-5]
        if "-cpu-" in name or name.endswith(("-batches", "-router")) or name.startswith(("hf-", "st-", "peer-", "passages")):
            continue
        r = load(p)
        if not r or "texts_per_s" not in r:
            continue
        transport, dtype, per = name.split("-")
        rows.append({
            "run": name, "transport": transport, "dtype": dtype, "texts_per_request": int(per),
            "texts_per_s": r["texts_per_s"], "offered_qps": r.get("offered_qps"),
            "p50_ms": r["latency_ms"]["p50"], "p99_ms": r["latency_ms"]["p99"],
            "errors": r["error_total"], "missing": r["missing"],
            "mean_batch": mean_batch(r), "gpu_busy_pct": gpu_busy(os.path.join(d, name + ".gpu")),
            "vs_hf": r["texts_per_s"] / peers[("hf", dtype)] if ("hf", dtype) in peers else None,
            "vs_st": r["texts_per_s"] / peers[("st", dtype)] if ("st", dtype) in peers else None,
            "batches": load(os.path.join(d, name + "-batches.json")),
            "router": load(os.path.join(d, name + "-router.json")),
            "mean_ms": r["latency_ms"].get("mean"),
        })
    by = {row["run"]: row for row in rows}
    print()
    print(f"gpu-bench: {gpu}")
    print("MiniLM-L6 (random weights), 4096 seeded English passages (~54 tokens); one router, one worker,")
    print(f"the gateway and the load generator on this machine; {args.seconds:g} s per run after a warm-up")
    print()
    head = f"{'run':<18} {'texts/s':>10} {'p50 ms':>8} {'p99 ms':>8} {'batch':>7} {'GPU %':>6} {'vs HF':>6} {'vs ST':>6} {'errors':>7}"
    print(head)
    print("-" * len(head))
    for row in rows:
        print(f"{row['run']:<18} {fmt(row['texts_per_s']):>10} {fmt(row['p50_ms'], '{:.1f}'):>8} "
              f"{fmt(row['p99_ms'], '{:.1f}'):>8} {fmt(row['mean_batch'], '{:.0f}'):>7} "
              f"{fmt(row['gpu_busy_pct'], '{:.0f}'):>6} {fmt(row['vs_hf'], '{:.2f}x'):>6} "
              f"{fmt(row['vs_st'], '{:.1f}x'):>6} {row['errors'] + row['missing']:>7}")
    for (kind, dtype), rate in sorted(peers.items()):
        label = {"hf": "HF forward", "st": "ST encode"}[kind]
        print(f"{label + ' ' + dtype:<18} {fmt(rate):>10}")
    # The issue-24 goals, where their runs exist.
    goals = []
    main = "fp16" if "zmq-fp16-1" in by else (rows[0]["dtype"] if rows else None)
    def goal(what, value, target, ok):
        goals.append({"goal": what, "value": value, "target": target, "met": ok})
    if f"zmq-{main}-1" in by:
        v = by[f"zmq-{main}-1"]["texts_per_s"]
        goal(f"ZeroMQ {main}, 1 text/request", v, ">= 150,000 texts/s", v >= 150_000)
    if f"zmq-{main}-32" in by:
        v = by[f"zmq-{main}-32"]["texts_per_s"]
        goal(f"ZeroMQ {main}, 32 texts/request", v, ">= 250,000 texts/s", v >= 250_000)
    if f"open80-{main}-1" in by:
        v = by[f"open80-{main}-1"]["p99_ms"]
        goal("p99 at 80% of the 1-text peak", v, "<= 50 ms", v <= 50)
    for per in (1, 32):
        h, z = by.get(f"http-{main}-{per}"), by.get(f"zmq-{main}-{per}")
        if h and z and z["texts_per_s"]:
            v = h["texts_per_s"] / z["texts_per_s"]
            goal(f"HTTP / ZeroMQ, {per} text(s)/request", v, ">= 0.60", v >= 0.60)
    if goals:
        print()
        for g in goals:
            v = f"{g['value']:,.0f}" if g["value"] >= 10 else f"{g['value']:.2f}"
            print(f"goal {g['goal']:<34} {v:>10}  {g['target']:<20} {'met' if g['met'] else 'NOT met'}")
    traced = [row for row in rows if row["batches"]]
    if traced:  # bench/gpu/batch_trace.py: the worker's own account of each run's batches
        print()
        print("Where a batch's time goes (worker trace; medians in us; occupancy: batches inside the")
        print("backend call at once, 2.00 = both slots always computing):")
        head = (f"  {'run':<18} {'batches/s':>9} {'texts':>6} {'occupancy':>9} {'queued':>7} "
                f"{'slot wait':>9} {'pack':>6} {'embed':>7} {'unpack':>7} {'stay':>7}")
        print("  (stay: mean arrival-to-answer time in the worker of the requests completed)")
        print(head)
        for row in traced:
            b = row["batches"]; p = b["p50_us"]
            print(f"  {row['run']:<18} {b['batches_per_s']:>9.0f} {b['mean_texts']:>6.0f} "
                  f"{b['embed_occupancy']:>9.2f} {p['queued_oldest']:>7.0f} {p['slot_wait']:>9.0f} "
                  f"{p['pack']:>6.0f} {p['embed']:>7.0f} {p['unpack']:>7.0f} {b['mean_stay_us'] or 0:>7.0f}")
        print("  (queued: the oldest text's wait; stay: mean arrival-to-answer time in the worker)")
    split = [row for row in rows if row["router"] and row["router"].get("router_ms") is not None]
    if split:  # bench/profile/router_latency.py: the first router's histograms over the run
        print()
        print("Where a request's time goes, means in ms (client: the load generator's latency; router:")
        print("accepted to answered; dispatch: sent to the worker to its reply; worker: its mean stay):")
        head = (f"  {'run':<18} {'client':>7} {'router':>7} {'dispatch':>8} {'worker':>7} "
                f"{'client-router':>13} {'router-dispatch':>15} {'dispatch-worker':>15}")
        print(head)
        for row in split:
            r, b = row["router"], row["batches"] or {}
            stay = b.get("mean_stay_us")
            stay = stay / 1000 if stay is not None else None
            print(f"  {row['run']:<18} {fmt(row['mean_ms'], '{:.2f}'):>7} {fmt(r['router_ms'], '{:.2f}'):>7} "
                  f"{fmt(r['dispatch_ms'], '{:.2f}'):>8} {fmt(stay, '{:.2f}'):>7} "
                  f"{fmt(minus(row['mean_ms'], r['router_ms']), '{:.2f}'):>13} "
                  f"{fmt(minus(r['router_ms'], r['dispatch_ms']), '{:.2f}'):>15} "
                  f"{fmt(minus(r['dispatch_ms'], stay), '{:.2f}'):>15}")
    profiles = {}
    for p in sorted(glob.glob(os.path.join(d, "*-cpu-*.json"))):
        name = os.path.basename(p)[:-5]
        r = load(p)
        if not r:
            continue
        profiles[name] = r
        print()
        print(f"CPU per thread role, {name} ({r['texts']:,} texts in {r['wall_s']:.1f} s):")
        print(f"  {'thread role':<18} {'threads':>7} {'cores':>6} {'us/text':>8}")
        for row in r["roles"]:
            if row["cpu_s"] < 0.01:
                continue
            print(f"  {row['role']:<18} {row['threads']:>7} {row['cores']:>6.2f} {fmt(row['us_per_text'], '{:.2f}'):>8}")
        print(f"  {'all':<18} {'':>7} {r['cpu_s'] / r['wall_s']:>6.2f} {fmt(r['us_per_text'], '{:.2f}'):>8}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": gpu, "seconds": args.seconds, "runs": rows,
                       "peers": {f"{k}-{t}": v for (k, t), v in peers.items()},
                       "goals": goals, "cpu_profiles": profiles}, f, indent=2)


if __name__ == "__main__":
    main()
