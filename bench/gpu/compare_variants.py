#!/usr/bin/env python3
"""Several scripts/gpu-bench.sh runs side by side (scripts/gpu-session.sh): per run of the
load (zmq-fp16-1, http-fp16-1, ...) each variant's texts/s, and for the one-text runs the mean
time in the client, the router and the worker, and the worker's CPU per text.

  compare_variants.py NAME=OUT_DIR [NAME=OUT_DIR ...] [--json OUT]
"""
import argparse
import json
import os

from serve_summary import fmt
from summarize import load


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("variants", nargs="+", help="NAME=OUT_DIR")
    ap.add_argument("--json")
    args = ap.parse_args()
    variants = {}
    for v in args.variants:
        name, _, d = v.partition("=")
        variants[name] = load(os.path.join(d, "summary.json")) or {}
    runs = sorted({r["run"] for s in variants.values() for r in s.get("runs", [])})
    names = list(variants)
    print()
    print("gpu-session: texts/s per run (rows) and variant (columns)")
    head = f"{'run':<18}" + "".join(f" {n:>14}" for n in names)
    print(head)
    print("-" * len(head))
    table = {}
    for run in runs:
        cells = []
        for n in names:
            row = next((r for r in variants[n].get("runs", []) if r["run"] == run), None)
            table.setdefault(run, {})[n] = row
            cells.append(fmt(row["texts_per_s"]) if row else "-")
        print(f"{run:<18}" + "".join(f" {c:>14}" for c in cells))
    print()
    print("One text per request: mean ms in the client / the router / the worker, and the worker's")
    print("CPU us per text (zmq-*-1 is profiled)")
    for run in runs:
        if not run.endswith("-1"):
            continue
        for n in names:
            row = table[run][n]
            if not row:
                continue
            r = row.get("router") or {}
            b = row.get("batches") or {}
            stay = b.get("mean_stay_us")
            cpu = (variants[n].get("cpu_profiles") or {}).get(f"{run}-cpu-worker") or {}
            print(f"  {run:<16} {n:<14} {fmt(row.get('mean_ms'), '{:.2f}'):>7} / "
                  f"{fmt(r.get('router_ms'), '{:.2f}'):>7} / "
                  f"{fmt(stay / 1000 if stay is not None else None, '{:.2f}'):>7} ms   "
                  f"{fmt(cpu.get('us_per_text'), '{:.1f}'):>6} us/text")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"variants": variants}, f, indent=2)


if __name__ == "__main__":
    main()
