#!/usr/bin/env python3
"""Where a served batch's time goes: reads the worker's per-batch trace lines (ModelRunner at
--log-level debug: "batch model=... texts=... embed=..."; times in microseconds) from one window
of its log and summarises them. scripts/gpu-bench.sh calls it per run; serve_summary.py puts the
results in its table.

  batch_trace.py WORKER_LOG START_BYTE END_BYTE [--model NAME] [--json OUT]

Figures: batches per second over the window; mean texts and tokens per batch; medians of each
stage (queued_oldest: the batch's oldest text from queued to picked by an inference thread;
slot_wait: formed to picked; pack; embed: the backend call; lock_wait; unpack: vectors into
their requests); the mean stay (a completed request's time in the worker, arrival to answer); and
embed_occupancy, the mean number of batches inside the backend call at once (sum of embed
times over the window: 2.0 = both slots always computing).
"""
import argparse
import json
import re
import statistics

LINE = re.compile(r"batch model=(\S+) (.*)")
FIELD = re.compile(r"(\w+)=(-?\d+)")


def parse(path, start, end, model=None):
    with open(path, "rb") as f:
        f.seek(start)
        text = f.read(max(0, end - start)).decode("utf-8", "replace")
    rows = []
    for line in text.splitlines():
        m = LINE.search(line)
        if not m or (model and m.group(1) != model):
            continue
        rows.append({k: int(v) for k, v in FIELD.findall(m.group(2))})
    return rows


def summarise(rows):
    if len(rows) < 2:
        return None
    ends = [r["end"] for r in rows]
    span_us = max(ends) - min(ends)
    if span_us <= 0:
        return None
    med = lambda key: statistics.median(r[key] for r in rows)  # noqa: E731
    n = len(rows) - 1  # batches that ended inside the span
    answered = sum(r["answered"] for r in rows)
    return {
        "batches": len(rows),
        "batches_per_s": n / (span_us / 1e6),
        "texts_per_s": sum(r["texts"] for r in rows[1:]) / (span_us / 1e6),
        "mean_texts": statistics.mean(r["texts"] for r in rows),
        "mean_tokens": statistics.mean(r["tokens"] for r in rows),
        "mean_running": statistics.mean(r["running"] for r in rows),
        "embed_occupancy": sum(r["embed"] for r in rows[1:]) / span_us,
        "p50_us": {k: med(k) for k in ("queued_oldest", "queued_newest", "slot_wait", "pack",
                                       "embed", "lock_wait", "unpack")},
        "mean_stay_us": sum(r["stay_mean"] * r["answered"] for r in rows) / answered if answered else None,
        "max_stay_us": max(r["stay_max"] for r in rows),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("start", type=int)
    ap.add_argument("end", type=int)
    ap.add_argument("--model")
    ap.add_argument("--json")
    args = ap.parse_args()
    s = summarise(parse(args.log, args.start, args.end, args.model))
    if s is None:
        print("batch trace: no batches in the window (worker not at --log-level debug?)")
        return
    if args.json:
        with open(args.json, "w") as f:
            json.dump(s, f, indent=1)
    p = s["p50_us"]
    print(f"{s['batches']} batches, {s['batches_per_s']:.0f}/s, mean {s['mean_texts']:.0f} texts, "
          f"embed occupancy {s['embed_occupancy']:.2f}; p50 us: queued {p['queued_oldest']:.0f}, "
          f"slot wait {p['slot_wait']:.0f}, pack {p['pack']:.0f}, embed {p['embed']:.0f}, "
          f"mean stay {s['mean_stay_us'] or 0:.0f}")


if __name__ == "__main__":
    main()
