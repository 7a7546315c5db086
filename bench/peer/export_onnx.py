#!/usr/bin/env python3
"""Export an ember BERT model folder to ONNX for the ONNX Runtime peer benchmark.

    export_onnx.py MODEL_DIR OUT.onnx [--opset 14] [--no-check]

Builds a torch.nn.Module BERT (HF BertModel layout: separate query/key/value Linear layers,
additive key mask, exact erf GELU, LayerNorm eps from config.json) with the weights from
MODEL_DIR/model.safetensors, followed by ember's pooling: mean over non-padding tokens, then
L2 normalisation. Inputs: input_ids and attention_mask, int64 [batch, sequence] (dynamic axes);
output: embeddings, float32 [batch, hidden].

Before exporting, the module is checked against scripts/reference_bert.py (float64, one
sequence at a time, no padding) on a few sequences run as one padded batch; the script fails if
the max abs difference exceeds 1e-5. Runs on the project's Python environment (.venv: torch and
onnx, scripts/setup.sh) with torch's TorchScript-based exporter, which needs no onnxscript.
"""

import argparse
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "scripts"))
import reference_bert  # noqa: E402  (read_safetensors and the float64 reference Ref)


class Layer(torch.nn.Module):
    def __init__(self, h, inter, nh, eps):
        super().__init__()
        self.nh, self.hd = nh, h // nh
        self.query = torch.nn.Linear(h, h)
        self.key = torch.nn.Linear(h, h)
        self.value = torch.nn.Linear(h, h)
        self.attn_out = torch.nn.Linear(h, h)
        self.ln1 = torch.nn.LayerNorm(h, eps=eps)
        self.inter = torch.nn.Linear(h, inter)
        self.out = torch.nn.Linear(inter, h)
        self.ln2 = torch.nn.LayerNorm(h, eps=eps)

    def heads(self, x):  # [B, L, H] -> [B, nh, L, hd]
        b, n, _ = x.shape
        return x.view(b, n, self.nh, self.hd).permute(0, 2, 1, 3)

    def forward(self, x, key_bias):
        b, n, h = x.shape
        q, k, v = self.heads(self.query(x)), self.heads(self.key(x)), self.heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.hd) + key_bias
        probs = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(b, n, h)
        x = self.ln1(self.attn_out(ctx) + x)
        return self.ln2(self.out(torch.nn.functional.gelu(self.inter(x))) + x)


class Encoder(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h = cfg["hidden_size"]
        eps = cfg.get("layer_norm_eps", 1e-12)
        act = cfg.get("hidden_act", "gelu")
        if act != "gelu":
            raise ValueError(f"only hidden_act=gelu (erf) is exported, got {act}")
        self.word = torch.nn.Embedding(cfg["vocab_size"], h)
        self.pos = torch.nn.Embedding(cfg["max_position_embeddings"], h)
        self.type0 = torch.nn.Parameter(torch.zeros(h))
        self.emb_ln = torch.nn.LayerNorm(h, eps=eps)
        self.layers = torch.nn.ModuleList(
            Layer(h, cfg["intermediate_size"], cfg["num_attention_heads"], eps)
            for _ in range(cfg["num_hidden_layers"]))

    def forward(self, input_ids, attention_mask):
        n = input_ids.shape[1]
        mask = attention_mask.to(torch.float32)
        x = self.word(input_ids) + self.pos.weight[:n] + self.type0
        x = self.emb_ln(x)
        key_bias = ((1.0 - mask) * torch.finfo(torch.float32).min)[:, None, None, :]
        for layer in self.layers:
            x = layer(x, key_bias)
        m = mask.unsqueeze(-1)
        pooled = (x * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return pooled / pooled.norm(p=2, dim=1, keepdim=True).clamp(min=1e-12)


def load(model_dir):
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    w = reference_bert.read_safetensors(os.path.join(model_dir, "model.safetensors"))
    if "bert.embeddings.word_embeddings.weight" in w:
        w = {k[len("bert."):]: v for k, v in w.items() if k.startswith("bert.")}
    w = {k: v.to(torch.float32) for k, v in w.items()}
    enc = Encoder(cfg)
    sd = {"word.weight": w["embeddings.word_embeddings.weight"],
          "pos.weight": w["embeddings.position_embeddings.weight"],
          "type0": w["embeddings.token_type_embeddings.weight"][0],
          "emb_ln.weight": w["embeddings.LayerNorm.weight"],
          "emb_ln.bias": w["embeddings.LayerNorm.bias"]}
    names = {"query": "attention.self.query", "key": "attention.self.key",
             "value": "attention.self.value", "attn_out": "attention.output.dense",
             "ln1": "attention.output.LayerNorm", "inter": "intermediate.dense",
             "out": "output.dense", "ln2": "output.LayerNorm"}
    for i in range(cfg["num_hidden_layers"]):
        for mine, hf in names.items():
            for p in ("weight", "bias"):
                sd[f"layers.{i}.{mine}.{p}"] = w[f"encoder.layer.{i}.{hf}.{p}"]
    enc.load_state_dict(sd, strict=True)
    return enc.eval(), cfg


def check(enc, model_dir):
    """Padded batch through the module vs the float64 per-sequence reference."""
    gen = torch.Generator().manual_seed(7)
    lengths = [2, 5, 16, 33, 64]
    seqs = []
    for n in lengths:
        ids = torch.randint(1000, 30000, (n,), generator=gen).tolist()
        ids[0], ids[-1] = 101, 102
        seqs.append(ids)
    ref = reference_bert.Ref(model_dir, torch.float64)
    want = torch.stack([reference_bert.l2n(ref.encode(s).mean(dim=0)) for s in seqs])
    longest = max(lengths)
    ids = torch.zeros(len(seqs), longest, dtype=torch.long)
    mask = torch.zeros(len(seqs), longest, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.tensor(s)
        mask[i, :len(s)] = 1
    got = enc(ids, mask).to(torch.float64)
    diff = float((got - want).abs().max())
    print(f"check vs reference_bert.py (float64, unpadded): lengths {lengths} as one padded "
          f"batch, max abs diff {diff:.3g}")
    if not diff < 1e-5:
        raise SystemExit(f"export_onnx.py: module disagrees with the reference ({diff:.3g})")
    return diff


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model_dir")
    ap.add_argument("out_onnx")
    ap.add_argument("--opset", type=int, default=14)
    ap.add_argument("--no-check", action="store_true")
    args = ap.parse_args(argv)
    torch.set_grad_enabled(False)
    enc, cfg = load(args.model_dir)
    if not args.no_check:
        check(enc, args.model_dir)
    ids = torch.full((2, 8), 1000, dtype=torch.long)
    mask = torch.ones(2, 8, dtype=torch.long)
    tmp = args.out_onnx + ".tmp"
    torch.onnx.export(enc, (ids, mask), tmp, opset_version=args.opset,
                      input_names=["input_ids", "attention_mask"], output_names=["embeddings"],
                      dynamic_axes={"input_ids": {0: "batch", 1: "sequence"},
                                    "attention_mask": {0: "batch", 1: "sequence"},
                                    "embeddings": {0: "batch"}},
                      do_constant_folding=True, dynamo=False)
    os.replace(tmp, args.out_onnx)
    print(f"wrote {args.out_onnx} (opset {args.opset}, {os.path.getsize(args.out_onnx)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
