#!/usr/bin/env python3
"""Agreement check and table for bench/peer/run.sh.

    compare.py WORK_DIR OUT_JSON --threads 1 2 [--rounds 2] [--tolerance 1e-4]

Reads WORK_DIR/ember_t{N}_r{R}.json and WORK_DIR/peer_t{N}_r{R}.json (timings; round R ran
ember then the peer) and the embeddings each side wrote for every cell
(ember_t{N}_b{B}_l{L}.f32, peer_...), checks max abs diff < tolerance per cell, prints threads /
batch / length / each side's best sentences/s over the rounds / their ratio / the range of the
per-round ratios (ember and peer of the same round, minutes apart at most), and writes OUT_JSON.
Exits 1 if any cell disagrees or is missing (its ratio is still printed, marked FAIL).
"""

import argparse
import json
import os
import platform
import sys
import time

import numpy as np


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("work")
    ap.add_argument("out_json")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--tolerance", type=float, default=1e-4)
    ap.add_argument("--meta", help="JSON file with extra run metadata (load samples, versions)")
    args = ap.parse_args(argv)
    rows, ok = [], True
    for t in args.threads:
        def load(side):
            runs = []
            for r in range(1, args.rounds + 1):
                with open(os.path.join(args.work, f"{side}_t{t}_r{r}.json")) as f:
                    runs.append(json.load(f))
            return runs
        ember_runs, peer_runs = load("ember"), load("peer")
        ember = ember_runs[0]
        by_round = [{(c["batch"], c["length"]): c for c in run["cells"]} for run in peer_runs]
        ember_by_round = [{(c["batch"], c["length"]): c for c in run["cells"]}
                          for run in ember_runs]
        for e0 in ember["cells"]:
            key = (e0["batch"], e0["length"])
            if any(key not in rnd for rnd in by_round + ember_by_round):
                print(f"missing cell t{t} b{key[0]} l{key[1]} in a round")
                ok = False
                continue
            es = [rnd[key] for rnd in ember_by_round]
            ps = [rnd[key] for rnd in by_round]
            e = max(es, key=lambda c: c["sentences_per_s"])
            p = max(ps, key=lambda c: c["sentences_per_s"])
            round_ratios = [a["sentences_per_s"] / b["sentences_per_s"] for a, b in zip(es, ps)]
            a = np.fromfile(e["output"], dtype="<f4")
            b = np.fromfile(p["output"], dtype="<f4")
            min_cos = float("nan")
            if a.size != b.size or a.size == 0:
                diff = float("inf")
            else:
                diff = float(np.abs(a.astype(np.float64) - b.astype(np.float64)).max())
                ra = a.astype(np.float64).reshape(key[0], -1)
                rb = b.astype(np.float64).reshape(key[0], -1)
                cos = (ra * rb).sum(1) / np.sqrt((ra * ra).sum(1) * (rb * rb).sum(1))
                min_cos = float(cos.min())
            agree = diff < args.tolerance
            ok &= agree
            rows.append({"threads": t, "batch": key[0], "length": key[1],
                         "ember_sentences_per_s": e["sentences_per_s"],
                         "peer_sentences_per_s": p["sentences_per_s"],
                         "ember_over_peer": e["sentences_per_s"] / p["sentences_per_s"],
                         "ember_over_peer_per_round": round_ratios,
                         "ember_sentences_per_s_per_round": [c["sentences_per_s"] for c in es],
                         "peer_sentences_per_s_per_round": [c["sentences_per_s"] for c in ps],
                         "max_abs_diff": diff, "min_cosine": min_cos, "agree": agree,
                         "ember_precision": ember.get("precision", "fp32"),
                         "ember_calls": e["calls"], "peer_calls": p["calls"],
                         "ember_mean_ms": e["mean_s"] * 1e3, "peer_mean_ms": p["mean_s"] * 1e3,
                         "ember_min_ms": e["min_s"] * 1e3, "peer_min_ms": p["min_s"] * 1e3})
    print()
    print(f"best of {args.rounds} round(s) per side; per-round ratio = ember / peer of one round")
    print("| threads | batch | length | ember sent/s | peer sent/s | ember/peer | per-round ratios "
          "| max abs diff | min cosine | calls (ember/peer) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        flag = "" if r["agree"] else " FAIL"
        print(f"| {r['threads']} | {r['batch']} | {r['length']} | {r['ember_sentences_per_s']:.1f} "
              f"| {r['peer_sentences_per_s']:.1f} | {r['ember_over_peer']:.2f} "
              f"| {min(r['ember_over_peer_per_round']):.2f}-{max(r['ember_over_peer_per_round']):.2f} "
              f"| {r['max_abs_diff']:.2e}{flag} | {r['min_cosine']:.7f} "
              f"| {r['ember_calls']}/{r['peer_calls']} |")
    worst = max((r["max_abs_diff"] for r in rows), default=float("nan"))
    print(f"\nagreement: max abs diff over all cells {worst:.3g} (tolerance {args.tolerance:g}): "
          f"{'OK' if ok else 'FAILED'}")
    meta = {}
    if args.meta and os.path.exists(args.meta):
        with open(args.meta) as f:
            meta = json.load(f)
    out = {"description": "ember BertModel::Embed vs onnxruntime (Python) on the same seeded ids "
                          "(bench/peer/run.sh); sentences/s = batch / mean call time, per side the best of the rounds",
           "machine": platform.node(), "cpus": os.cpu_count(),
           "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
           "rounds": args.rounds, "tolerance": args.tolerance, "all_agree": ok, "max_abs_diff": worst,
           **meta, "cells": rows}
    os.makedirs(os.path.dirname(os.path.abspath(args.out_json)), exist_ok=True)
    with open(args.out_json, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"wrote {args.out_json}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
