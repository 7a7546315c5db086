#!/usr/bin/env python3
"""The ids transformers gives for a BERT folder that has only vocab.txt (and
tokenizer_config.json), under several configurations: the reference for
tests/bert_vocab_tokenizer_test.cpp (HfTokenizer::FromDirectory's vocab.txt path).

The tokenizer is AutoTokenizer's for such a folder (transformers converts the vocabulary to
HF tokenizers' BertNormalizer, BertPreTokenizer, WordPiece and [CLS] $A [SEP]), run without
truncation. The "per_word" configurations are ember's `lowercase = "per-word"` (Python's
str.lower(), with Final_Sigma, as Google's original BERT tokenizer lowercased each word), which
no HF tokenizer does: there the BertNormalizer keeps case and a custom normalizer lowercases
with Python's own str.lower() of the whole normalized text (Final_Sigma's context never crosses
whitespace, so that is each word's lowercasing).

Usage:
  reference_bert_vocab.py --vocab vocab.txt --corpus corpus.json --out reference.json
                          [--random-cases N] [--seed S]

corpus.json is a JSON array of strings. The output is
  {"unicode_version": ..., "configs": {name: {options}},
   "cases": [{"text": str, "ids": {config_name: [int, ...]}}]}
where ids include [CLS] ... [SEP] and are never truncated.
"""

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import unicodedata

from tokenizers import normalizers
from tokenizers.normalizers import Normalizer
from transformers import AutoTokenizer

# Configurations that the C++ test replays (as tokenizer_config.json options). strip_accents=None
# means "follow lowercase". lowercase_rule: "per_character" (HF) or "per_word" (ember's option).
CONFIGS = {
    "uncased": {"lowercase": True, "strip_accents": None, "tokenize_chinese_chars": True,
                "lowercase_rule": "per_character"},
    "cased": {"lowercase": False, "strip_accents": None, "tokenize_chinese_chars": True,
              "lowercase_rule": "per_character"},
    "lower_keep_accents": {"lowercase": True, "strip_accents": False, "tokenize_chinese_chars": True,
                           "lowercase_rule": "per_character"},
    "cased_strip_no_cjk": {"lowercase": False, "strip_accents": True, "tokenize_chinese_chars": False,
                           "lowercase_rule": "per_character"},
    "uncased_per_word": {"lowercase": True, "strip_accents": None, "tokenize_chinese_chars": True,
                         "lowercase_rule": "per_word"},
    "lower_keep_accents_per_word": {"lowercase": True, "strip_accents": False,
                                    "tokenize_chinese_chars": True, "lowercase_rule": "per_word"},
}


def load_vocab(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


class FinalSigmaLowercase:
    """Python's str.lower() of the normalized text, as a custom HF normalizer: HF's per-character
    lowercasing, then each capital sigma that Python made final turned into "ς"."""

    def normalize(self, normalized):
        text = normalized.normalized
        python = text.lower()
        finals, at = set(), 0
        for c in text:
            if c == "\u03a3" and python[at] == "\u03c2":
                finals.add(at)
            at += len(c.lower())
        normalized.lowercase()
        position = 0

        def final_sigma(c):
            nonlocal position
            out = "\u03c2" if position in finals and c == "\u03c3" else c
            position += 1
            return out

        if finals:
            normalized.map(final_sigma)


def make_tokenizer(vocab_path, options):
    """The backend tokenizer AutoTokenizer makes of a folder with vocab.txt and these options."""
    folder = tempfile.mkdtemp(prefix="ember-bert-vocab-")
    try:
        shutil.copy(vocab_path, os.path.join(folder, "vocab.txt"))
        config = {"tokenizer_class": "BertTokenizer", "do_lower_case": options["lowercase"],
                  "tokenize_chinese_chars": options["tokenize_chinese_chars"]}
        if options["strip_accents"] is not None:
            config["strip_accents"] = options["strip_accents"]
        with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
            json.dump(config, f)
        backend = AutoTokenizer.from_pretrained(folder).backend_tokenizer
    finally:
        shutil.rmtree(folder)
    backend.no_truncation()
    backend.no_padding()
    if options["lowercase_rule"] == "per_word":
        strip = options["strip_accents"]
        backend.normalizer = normalizers.Sequence([
            normalizers.BertNormalizer(
                clean_text=True, handle_chinese_chars=options["tokenize_chinese_chars"],
                strip_accents=options["lowercase"] if strip is None else strip, lowercase=False),
            Normalizer.custom(FinalSigmaLowercase()),
        ])
    return backend


def random_cases(vocab, count, seed):
    """Deterministic random texts that stress the Unicode paths.

    Only code points that are assigned (category != Cn) in this Python's Unicode database are
    used (the pools stay within what HF tokenizers' Unicode data knows too).
    """
    rng = random.Random(seed)
    words = [t for t in vocab if not t.startswith("[")]

    def pool(lo, hi):
        return [chr(c) for c in range(lo, hi + 1) if unicodedata.category(chr(c)) != "Cn"]

    pools = [
        (30, [chr(c) for c in range(0x20, 0x7F)]),
        (8, list(" \t\n\r\u00a0\u3000\u2028\u2029\u2009\x0b\x0c\x85")),
        (4, list("\x00\x01\x1f\x7f\ufffd\u200b\u200d\ufeff\u00ad\ue000")),
        (8, pool(0xC0, 0x24F)),
        (6, pool(0x300, 0x36F)),
        (4, pool(0x370, 0x3FF) + ["\u03a3"] * 10),
        # Final_Sigma's context: case-ignorable characters (apostrophes, periods, colons,
        # modifier letters, marks) between a capital sigma and the letters around it.
        (3, list("\u03a3\u03a3\u03a3\u0391\u039f'.:\u00b7\u2019\u02b0\u0301\u0342^`,;-1")),
        (3, pool(0x400, 0x4FF)),
        (2, pool(0x591, 0x5F4) + pool(0x600, 0x6FF)),
        (2, pool(0x900, 0x97F) + pool(0xE00, 0xE7F)),
        (2, pool(0x1E00, 0x1FFF)),
        (3, pool(0x2000, 0x206F) + pool(0x20A0, 0x20C0) + pool(0x2100, 0x218B)),
        (2, pool(0x2190, 0x22FF) + list("\u2260\u226e\u226f")),
        (3, pool(0x3000, 0x30FF)),
        (8, pool(0x4E00, 0x9FFF)),
        (1, pool(0x3400, 0x4DBF) + pool(0xF900, 0xFAFF) + pool(0x2F800, 0x2FA1F)),
        (1, pool(0x20000, 0x2A6DF)),
        (3, pool(0xAC00, 0xD7A3) + pool(0x1100, 0x11FF)),
        (2, pool(0xFF00, 0xFFEF)),
        (2, pool(0x1F300, 0x1F64F) + pool(0x2600, 0x27BF)),
        (1, pool(0x1D400, 0x1D4FF)),
        (1, list("\u0130\u212a\u212b\u2126\u1e9e\u00df\u0149\u01c5\u1fbc")),
        (1, list("=<>") + ["=\u0338", "<\u0338", "e\u0301", "A\u030a", "\u1100\u1161\u11a8"]),
    ]
    weights = [w for w, _ in pools]
    specials = ["[CLS]", "[SEP]", "[MASK]", "[UNK]", "[PAD]", "[cls]", "[MAS\u212a]", "[SEP\u200b]"]

    cases = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(0, 24)):
            r = rng.random()
            if r < 0.25:
                w = rng.choice(words)
                w = w[2:] if w.startswith("##") else w
                parts.append(w.upper() if rng.random() < 0.2 else w)
                parts.append(rng.choice([" ", " ", " ", "", ", ", "\n"]))
            elif r < 0.28:
                parts.append(rng.choice(specials))
            else:
                chosen = rng.choices(pools, weights=weights)[0][1]
                parts.append("".join(rng.choice(chosen) for _ in range(rng.randint(1, 6))))
        cases.append("".join(parts))
    return cases


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab", required=True)
    parser.add_argument("--corpus", required=True, help="JSON array of input texts")
    parser.add_argument("--out", required=True)
    parser.add_argument("--random-cases", type=int, default=0)
    parser.add_argument("--seed", type=int, default=20240601)
    args = parser.parse_args(argv[1:])

    vocab = load_vocab(args.vocab)
    with open(args.corpus, encoding="utf-8") as f:
        texts = json.load(f)
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise SystemExit(f"{args.corpus}: expected a JSON array of strings")
    texts = texts + random_cases(vocab, args.random_cases, args.seed)

    tokenizers = {name: make_tokenizer(args.vocab, opts) for name, opts in CONFIGS.items()}
    cases = [{"text": t, "ids": {n: tok.encode(t).ids for n, tok in tokenizers.items()}}
             for t in texts]
    out = {
        "unicode_version": unicodedata.unidata_version,
        "configs": CONFIGS,
        "cases": cases,
    }
    tmp = args.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=True)
    os.replace(tmp, args.out)
    print(f"wrote {len(cases)} cases x {len(CONFIGS)} configs to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
