#!/usr/bin/env python3
"""The sentence-transformers peer of scripts/gpu-bench.sh: SentenceTransformer.encode on the same
passages ember serves (the model folder ember loads), as a user of that library runs it:
tokenization, padding, forward, pooling, normalisation and the copy back, in one process.

  st_encode.py MODEL_DIR PASSAGES_TXT --dtype fp32|fp16|bf16 [--batch 256] [--json OUT]
               [--device cuda]

One warm-up pass over the first 512 passages, then whole passes over all of them until
--min-seconds; prints one line and writes {"texts_per_s", ...}.
"""
import argparse
import json
import time

import torch
from sentence_transformers import SentenceTransformer


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model_dir")
    ap.add_argument("passages")
    ap.add_argument("--dtype", choices=("fp32", "fp16", "bf16"), default="fp16")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--min-seconds", type=float, default=2.0)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--json")
    args = ap.parse_args()
    with open(args.passages, encoding="utf-8") as f:
        passages = [line.rstrip("\n") for line in f if line.strip()]
    dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
    model = SentenceTransformer(args.model_dir, device=args.device)
    model.to(dtype)
    model.encode(passages[:512], batch_size=args.batch, normalize_embeddings=True)
    passes, start = 0, time.perf_counter()
    while True:
        model.encode(passages, batch_size=args.batch, normalize_embeddings=True)
        passes += 1
        seconds = time.perf_counter() - start
        if seconds >= args.min_seconds:
            break
    rate = passes * len(passages) / seconds
    print(f"sentence-transformers encode {args.dtype} batch {args.batch}: {len(passages)} texts x "
          f"{passes} passes in {seconds:.2f} s: {rate:.0f} texts/s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"dtype": args.dtype, "batch": args.batch, "texts": len(passages),
                       "passes": passes, "seconds": seconds, "texts_per_s": rate}, f, indent=2)


if __name__ == "__main__":
    main()
