#!/usr/bin/env python3
"""Reference ids and vectors for tests/real_model_test.cpp, from the real peers.

    reference_sentence_transformers.py MODEL_DIR OUT.json [--random 120] [--seed 7]

Embeds a corpus of varied texts with sentence-transformers' own `encode` (the folder's
Transformer -> Pooling -> Normalize modules, fp32, on the CPU) and tokenizes it with HF
`tokenizers` (the Rust tokenizer, from the folder's tokenizer.json, truncated to the folder's
max_seq_length as sentence-transformers truncates). The corpus: hand-written texts
(tests/data/real_texts.json: English, accents in NFC and NFD, CJK, emoji, mixed scripts,
texts far longer than 512 tokens, strings that normalise to nothing, special-token lookalikes)
plus --random seeded strings drawn from those scripts. Writes
    {"model", "max_seq_length", "versions", "texts", "ids", "vectors"}
Before writing, it checks that sentence-transformers' own tokenizer gives the same ids as the
Rust one, so the two oracles agree with each other. Runs offline (HF_HUB_OFFLINE=1).
"""

import argparse
import json
import os
import random
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402
import sentence_transformers  # noqa: E402
import tokenizers  # noqa: E402
import torch  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "tests", "data", "real_texts.json")

# Pieces the random texts are made of: words and characters of many scripts, emoji (with
# ZWJ sequences, skin tones and flags), combining marks, controls, odd spaces, punctuation.
POOL = [
    "hello", "World", "ÉCOLE", "naïve", "Straße", "İstanbul", "ΣΟΦΟΣ", "Ελληνικά", "москва",
    "ПРИВЕТ", "עִבְרִית", "العربية", "हिन्दी", "ไทย", "日本語", "中文", "한국어", "カタカナ",
    "ひらがな", "😀", "👩‍💻", "👍🏽", "🇫🇷", "❤️", "e\u0301", "a\u0308", "\u0301", "\u200b",
    "\u00a0", "\u3000", "\t", "\n", "\x07", "\ufeff", "\ufffd", "...", "!?", "(", ")", "#",
    "$12.50", "3.14159", "2026-12-04", "user@example.com", "https://example.org/a?b=c",
    "[CLS]", "[SEP]", "[MASK]", "##ing", "don't", "C++", "x²", "½", "ﬁ", "Ⅻ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    "supercalifragilisticexpialidocious", "𓀀", "∮", "☃",
]


def random_texts(n, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        k = rng.randint(1, 40)
        sep = rng.choice([" ", " ", " ", "", "\u3000", "\n"])
        out.append(sep.join(rng.choice(POOL) for _ in range(k)))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir")
    ap.add_argument("out")
    ap.add_argument("--random", type=int, default=120)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()

    with open(CORPUS, encoding="utf-8") as f:
        corpus = json.load(f)
    texts = [t for group in corpus.values() if isinstance(group, list) for t in group]
    texts += corpus_long(corpus)
    texts += random_texts(args.random, args.seed)

    torch.set_num_threads(max(1, os.cpu_count() or 1))
    model = SentenceTransformer(args.model_dir, device="cpu")
    max_len = model.max_seq_length

    rust = tokenizers.Tokenizer.from_file(os.path.join(args.model_dir, "tokenizer.json"))
    rust.no_padding()
    rust.enable_truncation(max_length=max_len)
    ids = [e.ids for e in rust.encode_batch(texts)]

    st_ids = model.tokenize(texts)["input_ids"].tolist()
    for i, (a, b) in enumerate(zip(ids, st_ids)):
        if b[:len(a)] != a or any(b[len(a):]):
            sys.exit(f"the two oracles disagree on text {i} {texts[i]!r}:\n  {a}\n  {b}")

    vectors = model.encode(texts, batch_size=32, convert_to_numpy=True,
                           show_progress_bar=False).astype(np.float32)
    out = {
        "model": args.model_dir,
        "max_seq_length": max_len,
        "versions": {"sentence_transformers": sentence_transformers.__version__,
                     "tokenizers": tokenizers.__version__, "torch": torch.__version__},
        "texts": texts,
        "ids": ids,
        "vectors": vectors.tolist(),
    }
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False)
    longest = max(len(t) for t in texts)
    print(f"wrote {args.out}: {len(texts)} texts (longest {longest} characters), "
          f"max_seq_length {max_len}, {sum(len(i) == max_len for i in ids)} truncated")


def corpus_long(corpus):
    """Texts far past 512 tokens (600 to 3,000 and more), from "long_paragraphs" repeated."""
    out = []
    for paragraph in corpus["long_paragraphs"]:
        for chars in (3000, 12000):
            out.append(" ".join([paragraph] * (chars // len(paragraph) + 1)))
    return out


if __name__ == "__main__":
    main()
