#!/usr/bin/env python3
"""Reference text embeddings for a BERT folder, computed without ember.

Tokenizes each text with HF tokenizers' BertWordPieceTokenizer over the folder's vocab.txt
(what transformers makes of it), runs it alone through reference_bert.py's float64 forward pass,
mean-pools and L2-normalizes, as sentence-transformers does for
all-MiniLM-L6-v2. The C++ cluster test compares ember's vectors with these.

Usage: reference_embeddings.py MODEL_DIR OUT_JSON
"""
import json
import os
import sys

import torch
from tokenizers import BertWordPieceTokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_bert import Ref, l2n  # noqa: E402

TEXTS = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "ember turns text into vectors at high throughput.",
    "What is the capital of France?",
    "Paris is the capital and most populous city of France.",
    "Embeddings of identical texts must be identical regardless of batching.",
    "A",
    "Café, naïve, Ångström: accents are stripped by the uncased tokenizer.",
    "Unbelievably, the tokenizer splits unaffordable words into word pieces.",
    "Numbers like 3.14159 and 2,718 and dates like 2026-12-02 are text too.",
    "今天天气很好，我们去公园散步吧。",
    "机器学习模型把文本变成向量。",
    "北京是中华人民共和国的首都，也是全国的政治和文化中心。",
    "我爱自然语言处理。",
    "Mixed 中文 and English text in one sentence.",
    "東京は日本の首都です。",
    "서울은 한국의 수도입니다.",
    "Emoji 🚀 and symbols ™ © are unknown or split.",
    "   leading and trailing whitespace, tabs\tand\nnewlines   ",
    # Long inputs: truncated to the model's maximum (256 tokens).
    " ".join(["The router dispatches each request to a worker that serves the model."] * 30),
    "长文本测试。" * 120,
    ("A medium-length paragraph about serving embedding models in production: clients "
     "send many short texts, the router spreads them across GPUs, and dynamic batching "
     "merges concurrent requests so that the accelerator stays busy without hurting "
     "tail latency."),
]


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    model_dir, out_json = sys.argv[1], sys.argv[2]
    torch.set_grad_enabled(False)
    with open(os.path.join(model_dir, "sentence_bert_config.json"), encoding="utf-8") as f:
        max_len = json.load(f)["max_seq_length"]
    tokenizer = BertWordPieceTokenizer(os.path.join(model_dir, "vocab.txt"), lowercase=True)
    ref = Ref(model_dir, torch.float64)
    ids, vectors = [], []
    for text in TEXTS:
        seq = tokenizer.encode(text).ids
        if len(seq) > max_len:
            seq = seq[: max_len - 1] + [seq[-1]]
        ids.append(seq)
        vectors.append(l2n(ref.encode(seq).mean(dim=0)).tolist())
    tmp = out_json + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump({"texts": TEXTS, "ids": ids, "vectors": vectors}, f, ensure_ascii=False)
    os.replace(tmp, out_json)
    print(f"wrote {out_json}: {len(TEXTS)} texts, dim {len(vectors[0])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
