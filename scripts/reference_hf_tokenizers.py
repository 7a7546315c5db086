#!/usr/bin/env python3
"""What HF tokenizers (Rust, through its Python package) makes of the parity corpus, for one
tokenizer.json: the reference tests/hf_tokenizer_test.cpp holds ember's tokenizer to.

    reference_hf_tokenizers.py TOKENIZER_JSON OUT_JSON [--seed N]

The corpus is scripts/tokenizer_corpus.py's (seed 0), with this tokenizer's own added tokens
typed into the random texts. For every text: the ids with special tokens added and no
truncation, each token's byte offsets into the UTF-8 text (HF's Python offsets count
characters; they are turned into bytes here), and the decoding of those ids with and without
special tokens. For the texts longer than 64 ids: the ids truncated to 64. For 400 seeded
pairs of texts: their ids and type ids whole and truncated to 96 ("longest_first").

The file's own padding and truncation settings are switched off, as a server tokenizes.
"""

import argparse
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tokenizer_corpus  # noqa: E402

TRUNCATE = 64
PAIR_TRUNCATE = 96
PAIRS = 400


def byte_offsets(text, offsets):
    """HF's character offsets as byte offsets into the UTF-8 text."""
    starts = [0]
    for ch in text:
        starts.append(starts[-1] + len(ch.encode("utf-8")))
    out = []
    for start, end in offsets:
        out += [starts[start], starts[end]]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tokenizer_json")
    ap.add_argument("out_json")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(args.tokenizer_json)
    tok.no_padding()
    tok.no_truncation()
    with open(args.tokenizer_json, encoding="utf-8") as f:
        added = [t["content"] for t in json.load(f).get("added_tokens") or []]
    texts = tokenizer_corpus.texts(specials=added, seed=args.seed)

    single, decoded, decoded_skip = [], [], []
    for text in texts:
        enc = tok.encode(text)
        single.append({"ids": enc.ids, "offsets": byte_offsets(text, enc.offsets)})
        decoded.append(tok.decode(enc.ids, skip_special_tokens=False))
        decoded_skip.append(tok.decode(enc.ids, skip_special_tokens=True))

    long_texts = [i for i, s in enumerate(single) if len(s["ids"]) > TRUNCATE]
    tok.enable_truncation(max_length=TRUNCATE)
    truncated = [[i, tok.encode(texts[i]).ids] for i in long_texts]

    rng = random.Random(args.seed + 1)
    pairs = []
    for _ in range(PAIRS):
        a, b = rng.randrange(len(texts)), rng.randrange(len(texts))
        tok.no_truncation()
        whole = tok.encode(texts[a], texts[b])
        tok.enable_truncation(max_length=PAIR_TRUNCATE, strategy="longest_first")
        cut = tok.encode(texts[a], texts[b])
        pairs.append({"a": a, "b": b, "ids": whole.ids, "types": whole.type_ids,
                      "ids_cut": cut.ids, "types_cut": cut.type_ids})

    out = {"tokenizer": os.path.abspath(args.tokenizer_json), "texts": texts, "single": single,
           "decode": decoded, "decode_skip": decoded_skip,
           "truncate": {"max_length": TRUNCATE, "cases": truncated},
           "pair_max_length": PAIR_TRUNCATE, "pairs": pairs}
    tmp = args.out_json + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False)
    os.replace(tmp, args.out_json)
    tokens = sum(len(s["ids"]) for s in single)
    print(f"wrote {args.out_json}: {len(texts)} texts, {tokens} tokens, {len(truncated)} "
          f"truncated, {len(pairs)} pairs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
