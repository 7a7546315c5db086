#!/usr/bin/env python3
"""Writes ember-tiny, a small deterministic TorchScript text-embedding model.

ember-tiny is a 2-layer transformer encoder (dim 64, 4 heads) with random
weights from a fixed seed and a character-level tokenizer compiled into the
module, so tests and the demo run with no downloads. It is not a useful
embedding model; it exercises the same code paths as one.

Outputs, in OUT_DIR:
  model.pt        TorchScript: tokenize(texts) and forward(input_ids, attention_mask)
  reference.json  sentences and their vectors, each computed alone by this script:
                  what tests compare the cluster's answers with.

Usage: make_tiny_model.py OUT_DIR
"""
import json
import math
import os
import sys
from typing import List, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

VOCAB, DIM, HEADS, LAYERS, FFN, MAX_LEN = 1024, 64, 4, 2, 128, 128


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads, self.dim = HEADS, DIM
        self.qkv = nn.Linear(DIM, 3 * DIM)
        self.out = nn.Linear(DIM, DIM)
        self.ln1 = nn.LayerNorm(DIM)
        self.ff1 = nn.Linear(DIM, FFN)
        self.ff2 = nn.Linear(FFN, DIM)
        self.ln2 = nn.LayerNorm(DIM)

    def forward(self, h: Tensor, bias: Tensor) -> Tensor:
        b, t, _ = h.shape
        head_dim = self.dim // self.heads
        qkv = self.qkv(h).view(b, t, 3, self.heads, head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = q @ k.transpose(-1, -2) / math.sqrt(head_dim) + bias
        a = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, self.dim)
        h = self.ln1(h + self.out(a))
        return self.ln2(h + self.ff2(F.gelu(self.ff1(h))))


class TinyEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.vocab, self.max_len = VOCAB, MAX_LEN
        self.tok = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Embedding(MAX_LEN, DIM)
        self.ln = nn.LayerNorm(DIM)
        self.layers = nn.ModuleList([Layer() for _ in range(LAYERS)])

    @torch.jit.export
    def tokenize(self, texts: List[str]) -> Tuple[Tensor, Tensor]:
        """[CLS] one id per character [SEP], truncated to MAX_LEN, padded."""
        seqs: List[List[int]] = []
        for text in texts:
            ids = [1]  # [CLS]
            for ch in text:
                if len(ids) >= self.max_len - 1:
                    break
                ids.append(3 + ord(ch) % (self.vocab - 3))
            ids.append(2)  # [SEP]
            seqs.append(ids)
        width = max([len(s) for s in seqs])
        input_ids = torch.zeros(len(seqs), width, dtype=torch.long)
        mask = torch.zeros(len(seqs), width, dtype=torch.long)
        for i, s in enumerate(seqs):
            input_ids[i, : len(s)] = torch.tensor(s, dtype=torch.long)
            mask[i, : len(s)] = 1
        return input_ids, mask

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        t = input_ids.shape[1]
        positions = torch.arange(t, device=input_ids.device).unsqueeze(0)
        h = self.ln(self.tok(input_ids) + self.pos(positions))
        m = attention_mask.to(h.dtype)
        bias = ((1.0 - m) * -1e4)[:, None, None, :]
        for layer in self.layers:
            h = layer(h, bias)
        pooled = (h * m.unsqueeze(-1)).sum(1) / m.sum(1, keepdim=True).clamp(min=1.0)
        return F.normalize(pooled, dim=-1)


SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "ember turns text into vectors at high throughput.",
    "Hello, world!",
    "a",
    "",
    "今天天气很好，我们去公园散步吧。",
    "机器学习模型把文本变成向量。",
    "Mixed 中文 and English text, with numbers 12345.",
    "Café, naïve, Ångström: accents survive.",
    "Emoji are text too 🚀🔥",
    "Tabs\tand\nnewlines   and   spaces",
    "A longer sentence that keeps going so that batches hold inputs of rather different "
    "lengths, which exercises padding and the attention mask in every layer of the model.",
    "x" * 300,
    "Short.",
    "Embeddings of identical texts must be identical regardless of batching.",
    "What is the capital of France?",
    "Paris is the capital and most populous city of France.",
    "The router dispatches each request to a worker that serves the model.",
    "東京は日本の首都です。",
    "서울은 한국의 수도입니다.",
]


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(20261202)
    model = TinyEncoder().eval()
    scripted = torch.jit.script(model)
    with torch.no_grad():
        vectors = [scripted(*scripted.tokenize([s]))[0].tolist() for s in SENTENCES]
    tmp = os.path.join(out_dir, "model.pt.tmp")
    scripted.save(tmp)
    os.replace(tmp, os.path.join(out_dir, "model.pt"))
    with open(os.path.join(out_dir, "reference.json"), "w", encoding="utf-8") as f:
        json.dump({"model": "ember-tiny", "dim": DIM, "texts": SENTENCES, "vectors": vectors},
                  f, ensure_ascii=False)
    print(f"wrote {out_dir}/model.pt and reference.json ({len(SENTENCES)} sentences, dim {DIM})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
