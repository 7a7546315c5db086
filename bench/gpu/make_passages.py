#!/usr/bin/env python3
"""Seeded English passages for scripts/gpu-bench.sh, and their token ids for the HF forward.

Passages are sentences of whole English words drawn from the model's vocab.txt (alphabetic
entries of 3+ letters), capitalised and punctuated, with lengths ~ normal(54, 22) tokens
clipped to [8, 160] as the 4096 passages of the first H200 measurements
(../shared/device/README.md); the ids come from HF `tokenizers` (BertWordPieceTokenizer on the
same vocab.txt), so the HF forward gets exactly what ember's tokenizer makes of each passage.

  make_passages.py VOCAB OUT_TXT OUT_IDS_JSON [--count 4096] [--seed 0]
"""
import argparse
import random

from tokenizers import BertWordPieceTokenizer

from make_ids import write_ids


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("vocab")
    ap.add_argument("out_txt")
    ap.add_argument("out_ids")
    ap.add_argument("--count", type=int, default=4096)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    with open(args.vocab, encoding="utf-8") as f:
        words = [w.strip() for w in f if w.strip().isalpha() and w.strip().isascii() and len(w.strip()) >= 3]
    rng = random.Random(args.seed)
    passages = []
    for _ in range(args.count):
        target = min(160, max(8, round(rng.gauss(54, 22)))) - 2  # [CLS] ... [SEP]
        out, tokens = [], 0
        while tokens < target:
            n = min(target - tokens, rng.randint(5, 16))
            sentence = [rng.choice(words) for _ in range(max(1, n - 1))]
            sentence[0] = sentence[0].capitalize()
            out.append(" ".join(sentence) + rng.choice([".", ".", ".", "?", "!"]))
            tokens += len(sentence) + 1
        passages.append(" ".join(out))
    tok = BertWordPieceTokenizer(args.vocab, lowercase=True)
    ids = [e.ids for e in tok.encode_batch(passages)]
    with open(args.out_txt, "w", encoding="utf-8") as f:
        f.write("\n".join(passages) + "\n")
    print(f"make_passages: {write_ids(args.out_ids, ids)} -> {args.out_txt}, {args.out_ids}")

if __name__ == "__main__":
    main()
