#!/usr/bin/env python3
"""Seeded token ids for scripts/gpu-model-bench.sh, the same file for ember and the HF forward.

  passages: lengths ~ normal(54, 22) clipped to [8, 160] (mean ~54 tokens, as the 4096 English
            passages of the first H200 measurements, ../shared/device/README.md)
  mix:      lengths uniform in [32, 512] (issue 25's large-model mix)
  long:     lengths uniform in [2048, 8192] (issue 37: long inputs to a decoder)
Each sequence is [CLS] random ids in [1000, 30000) [SEP]; only the lengths matter for cost.
Writes {"ids": [[...], ...], "lengths": {...summary...}}.
"""
import argparse
import json
import random


def write_ids(path, ids):
    """Writes {"ids", "lengths"} as the benches read it; returns a one-line summary."""
    lengths = [len(s) for s in ids]
    with open(path, "w") as f:
        json.dump({"ids": ids, "lengths": {"count": len(ids), "mean": sum(lengths) / len(ids),
                                           "min": min(lengths), "max": max(lengths)}}, f)
    return (f"{len(ids)} texts, mean {sum(lengths) / len(ids):.1f} tokens "
            f"({min(lengths)}-{max(lengths)})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--kind", choices=("passages", "mix", "long"), default="passages")
    ap.add_argument("--count", type=int, default=4096)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    ids = []
    for _ in range(args.count):
        if args.kind == "passages":
            n = min(160, max(8, round(rng.gauss(54, 22))))
        elif args.kind == "mix":
            n = rng.randint(32, 512)
        else:
            n = rng.randint(2048, 8192)
        ids.append([101] + [rng.randrange(1000, 30000) for _ in range(n - 2)] + [102])
    print(f"make_ids: {write_ids(args.out, ids)} -> {args.out}")


if __name__ == "__main__":
    main()
