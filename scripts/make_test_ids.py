#!/usr/bin/env python3
"""Write seeded BERT token-id sequences ([CLS]=101 ... [SEP]=102) as JSON for tests.

    make_test_ids.py OUT_JSON [--seed 1] [--count 24] [--max-len 256]

Output: {"seed": S, "ids": [[101, ..., 102], ...]}. Lengths cover 1 (a lone [CLS]),
2 ([CLS][SEP]), short, medium and --max-len tokens; inner ids are uniform in
[1000, 30000). Standard library only, deterministic for a given seed.
"""

import argparse
import json
import random
import sys


def make_ids(seed, count, max_len, lo=1000, hi=30000):
    rng = random.Random(seed)
    fixed = [1, 2, 3, 5, 8, 13, 16, 31, 64, 100, 128, 200, max_len - 1, max_len]
    lengths = [n for n in fixed if 1 <= n <= max_len]
    while len(lengths) < count:
        lengths.append(rng.randint(1, max_len))
    lengths = lengths[:count]
    rng.shuffle(lengths)  # mixed lengths inside every batch
    seqs = []
    for n in lengths:
        if n == 1:
            seqs.append([101])
            continue
        seqs.append([101] + [rng.randrange(lo, hi) for _ in range(n - 2)] + [102])
    return seqs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_json")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=24)
    ap.add_argument("--max-len", dest="max_len", type=int, default=256)
    args = ap.parse_args(argv)
    seqs = make_ids(args.seed, args.count, args.max_len)
    with open(args.out_json, "w", encoding="utf-8") as f:
        json.dump({"seed": args.seed, "ids": seqs}, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {args.out_json}: {len(seqs)} sequences, lengths "
          f"{sorted(len(s) for s in seqs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
