#!/usr/bin/env python3
"""Independent reference BERT encoder for testing ember's C++ EncoderModel.

    reference_bert.py MODEL_DIR IDS_JSON OUT_JSON [--dtype float64|float32]

MODEL_DIR is a HuggingFace-style folder (config.json + model.safetensors, as written
by make_bert_model.py or downloaded from sentence-transformers). IDS_JSON is
{"ids": [[101, ..., 102], ...]} (see make_test_ids.py).

Deliberately shares no code or structure with engine/encoder/encoder_model.cpp:
  * model.safetensors is parsed here from raw bytes (struct + json + numpy);
    F32, F16 and BF16 are decoded by hand;
  * the forward pass uses explicit per-head attention loops, a hand-written
    LayerNorm and erf-GELU, and runs in float64 by default;
  * every sequence is run alone (batch of 1, no padding, no attention mask), so
    agreement with ember's padded batches also proves the masking is right.

OUT_JSON: {"model_dir", "dim", "ids", "mean", "cls"} where "mean" holds the
L2-normalised mean-pooled embeddings and "cls" the L2-normalised [CLS] vectors,
one row per input sequence.
"""

import argparse
import json
import math
import os
import struct
import sys
import time

import numpy as np
import torch


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (hlen,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + hlen].decode("utf-8"))
    base = 8 + hlen
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = data[base + begin: base + end]
        shape = tuple(info["shape"])
        dt = info["dtype"]
        if dt == "F32":
            arr = np.frombuffer(raw, dtype="<f4").astype(np.float64)
        elif dt == "F64":
            arr = np.frombuffer(raw, dtype="<f8").astype(np.float64)
        elif dt == "F16":
            arr = np.frombuffer(raw, dtype="<f2").astype(np.float64)
        elif dt == "BF16":
            bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            arr = bits.view(np.float32).astype(np.float64)
        else:
            raise ValueError(f"{path}: tensor {name}: dtype {dt} not handled by reference")
        out[name] = torch.from_numpy(arr.reshape(shape).copy())
    return out


class Ref:
    def __init__(self, model_dir, dtype):
        with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
            cfg = json.load(f)
        self.h = cfg["hidden_size"]
        self.nh = cfg["num_attention_heads"]
        self.nl = cfg["num_hidden_layers"]
        self.eps = cfg.get("layer_norm_eps", 1e-12)
        act = cfg.get("hidden_act", "gelu")
        if act != "gelu":
            raise ValueError(f"reference only implements hidden_act=gelu, got {act}")
        w = read_safetensors(os.path.join(model_dir, "model.safetensors"))
        if "bert.embeddings.word_embeddings.weight" in w:
            w = {k[len("bert."):]: v for k, v in w.items() if k.startswith("bert.")}
        self.w = {k: v.to(dtype) for k, v in w.items()}

    def layer_norm(self, x, prefix):
        mu = x.mean(dim=-1, keepdim=True)
        var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)
        return (x - mu) / torch.sqrt(var + self.eps) * self.w[prefix + ".weight"] \
            + self.w[prefix + ".bias"]

    def dense(self, x, prefix):
        return x @ self.w[prefix + ".weight"].T + self.w[prefix + ".bias"]

    @staticmethod
    def gelu(x):
        return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))

    def encode(self, ids):
        """ids: list[int] (one sequence). Returns [L, H] last hidden state."""
        w = self.w
        n = len(ids)
        idx = torch.tensor(ids, dtype=torch.long)
        x = w["embeddings.word_embeddings.weight"][idx] \
            + w["embeddings.position_embeddings.weight"][:n] \
            + w["embeddings.token_type_embeddings.weight"][0]
        x = self.layer_norm(x, "embeddings.LayerNorm")
        hd = self.h // self.nh
        for i in range(self.nl):
            p = f"encoder.layer.{i}."
            q = self.dense(x, p + "attention.self.query")
            k = self.dense(x, p + "attention.self.key")
            v = self.dense(x, p + "attention.self.value")
            heads = []
            for hh in range(self.nh):
                sl = slice(hh * hd, (hh + 1) * hd)
                scores = (q[:, sl] @ k[:, sl].T) / math.sqrt(hd)
                probs = torch.nn.functional.softmax(scores, dim=-1)
                heads.append(probs @ v[:, sl])
            ctx = torch.cat(heads, dim=-1)
            x = self.layer_norm(self.dense(ctx, p + "attention.output.dense") + x,
                                p + "attention.output.LayerNorm")
            inter = self.gelu(self.dense(x, p + "intermediate.dense"))
            x = self.layer_norm(self.dense(inter, p + "output.dense") + x,
                                p + "output.LayerNorm")
        return x


def l2n(v):
    return v / max(float(torch.linalg.norm(v)), 1e-12)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model_dir")
    ap.add_argument("ids_json")
    ap.add_argument("out_json")
    ap.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    torch.set_grad_enabled(False)
    ref = Ref(args.model_dir, getattr(torch, args.dtype))
    with open(args.ids_json, encoding="utf-8") as f:
        seqs = json.load(f)["ids"]
    mean, cls = [], []
    for ids in seqs:
        hs = ref.encode(ids)
        mean.append(l2n(hs.mean(dim=0)).tolist())
        cls.append(l2n(hs[0]).tolist())
    tmp = args.out_json + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump({"model_dir": os.path.abspath(args.model_dir), "dim": ref.h,
                   "ids": seqs, "mean": mean, "cls": cls}, f)
        f.write("\n")
    os.replace(tmp, args.out_json)
    print(f"wrote {args.out_json}: {len(seqs)} embeddings of dim {ref.h} "
          f"({args.dtype}) in {time.monotonic() - t0:.2f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
