#!/usr/bin/env python3
"""HF tokenizers (the Rust WordPiece behind transformers' fast BERT tokenizers) on one thread,
one text at a time, over a file of texts: the peer of ember-tokenizer-bench (bench/tokenizer.sh).

  tokenizer_hf.py MODEL_DIR TEXTS [--loops 5] [--max-length 256]

Prints one JSON object, as ember-tokenizer-bench does.
"""
import argparse
import json
import os
import statistics
import time

os.environ.setdefault("RAYON_NUM_THREADS", "1")  # one thread, as one of ember's pool threads
from tokenizers import BertWordPieceTokenizer, Tokenizer  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("texts")
    ap.add_argument("--loops", type=int, default=5)
    ap.add_argument("--max-length", type=int, default=256)
    args = ap.parse_args()
    path = os.path.join(args.model, "tokenizer.json")
    tok = Tokenizer.from_file(path) if os.path.exists(path) else BertWordPieceTokenizer(
        os.path.join(args.model, "vocab.txt"))
    tok.enable_truncation(args.max_length)
    tok.no_padding()
    texts = [line.rstrip("\n") for line in open(args.texts, encoding="utf-8")]
    us, tokens = [], 0
    for _ in range(args.loops):
        start = time.perf_counter()
        tokens = sum(len(tok.encode(t).ids) for t in texts)
        us.append(1e6 * (time.perf_counter() - start) / len(texts))
    print(json.dumps({"texts": len(texts), "tokens": tokens,
                      "us_per_text": {"median": statistics.median(us), "min": min(us), "max": max(us)}}))


if __name__ == "__main__":
    main()
