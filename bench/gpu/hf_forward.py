#!/usr/bin/env python3
"""The HuggingFace half of scripts/gpu-model-bench.sh and gpu-decoder-bench.sh: transformers'
AutoModel forward (BertModel, Qwen3Model, ...: eager PyTorch, its default SDPA attention;
optionally torch.compile) on the same ids as ember.

Its best case: texts sorted by length into padded batches of --batch-texts, the padded id and
mask tensors built (in page-locked memory) before timing; timed are the copy in, the forward,
pooling as the folder's 1_Pooling says (mean, CLS, or a decoder's last token: padding on the
right, so each text's last real position) and L2 normalisation on the GPU, and the vectors
copied to the host, as ember returns them. Timed pass after pass (after one warm-up pass) until --min-seconds; prints one line and
writes JSON. Also:
  --vectors FILE    the first --vector-count texts' vectors (file order), float32 raw
  --peak            only measure the card's dense bf16 matmul rate (8192^3), for the roofline
"""
import argparse
import json
import os
import time

import numpy as np
import torch


def pooling_mode(model_dir):
    cfg = os.path.join(model_dir, "1_Pooling", "config.json")
    if os.path.exists(cfg):
        with open(cfg) as f:
            pooling = json.load(f)
        if pooling.get("pooling_mode_cls_token"):
            return "cls"
        if pooling.get("pooling_mode_lasttoken"):
            return "last"
    return "mean"


def peak_bf16(device):
    n = 8192
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    iters = 30
    t = time.perf_counter()
    for _ in range(iters):
        a @ b
    torch.cuda.synchronize()
    return 2 * n ** 3 * iters / (time.perf_counter() - t)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model_dir", nargs="?")
    ap.add_argument("ids", nargs="?")
    ap.add_argument("--dtype", choices=("fp32", "fp16", "bf16"), default="fp16")
    ap.add_argument("--batch-texts", type=int, default=512)
    ap.add_argument("--min-seconds", type=float, default=3.0)
    ap.add_argument("--compile", action="store_true", help="torch.compile(dynamic=True) first")
    ap.add_argument("--json")
    ap.add_argument("--vectors")
    ap.add_argument("--vector-count", type=int, default=256)
    ap.add_argument("--peak", action="store_true")
    ap.add_argument("--device", default="cuda", help="cpu: a dry run of this script")
    args = ap.parse_args()
    device = torch.device(args.device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    if args.peak:
        flops = peak_bf16(device)
        print(f"bf16 dense matmul 8192^3: {flops / 1e12:.0f} TFLOP/s")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"bf16_peak_flops": flops}, f)
        return

    from transformers import AutoModel
    dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
    with open(args.ids) as f:
        ids = json.load(f)["ids"]
    model = AutoModel.from_pretrained(args.model_dir, dtype=dtype).to(device).eval()
    attn = getattr(model.config, "_attn_implementation", "?")
    forward = torch.compile(model, dynamic=True) if args.compile else model
    mode = pooling_mode(args.model_dir)

    def pad(seqs):
        longest = max(len(s) for s in seqs)
        x = torch.zeros(len(seqs), longest, dtype=torch.long)
        m = torch.zeros(len(seqs), longest, dtype=torch.long)
        for i, s in enumerate(seqs):
            x[i, :len(s)] = torch.tensor(s)
            m[i, :len(s)] = 1
        if device.type == "cuda":
            x, m = x.pin_memory(), m.pin_memory()
        return x, m

    def embed(x, m):
        x = x.to(device, non_blocking=True)
        m = m.to(device, non_blocking=True)
        h = forward(input_ids=x, attention_mask=m).last_hidden_state
        if mode == "cls":
            v = h[:, 0].float()
        elif mode == "last":
            v = h[torch.arange(h.shape[0], device=device), m.sum(1) - 1].float()
        else:
            mf = m.unsqueeze(-1).to(h.dtype)
            v = ((h * mf).sum(1).float() / mf.sum(1).float())
        return torch.nn.functional.normalize(v, dim=1).cpu()

    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    batches = [pad([ids[i] for i in order[k:k + args.batch_texts]])
               for k in range(0, len(order), args.batch_texts)]
    tokens = sum(len(s) for s in ids)
    with torch.inference_mode():
        t = time.perf_counter()
        for x, m in batches:
            embed(x, m)
        sync()
        warm = time.perf_counter() - t
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats()
        passes = 0
        t = time.perf_counter()
        while True:
            for x, m in batches:
                embed(x, m)
            passes += 1
            seconds = time.perf_counter() - t
            if seconds >= args.min_seconds:
                break
        first = embed(*pad(ids[:args.vector_count])).numpy().astype(np.float32)
    peak = torch.cuda.max_memory_allocated() / 2**20 if device.type == "cuda" else 0.0
    rate = len(ids) * passes / seconds
    name = "HF " + args.dtype + (" compiled" if args.compile else f" eager ({attn})")
    print(f"{name}: {len(ids)} texts ({tokens} tokens) x {passes} passes in {seconds:.2f} s: "
          f"{rate:.0f} texts/s, {tokens * passes / seconds:.0f} tokens/s; GPU memory peak "
          f"{peak:.0f} MiB; first pass {warm:.1f} s")
    out = {"dtype": args.dtype, "compiled": args.compile, "attention": attn, "texts": len(ids),
           "tokens": tokens, "passes": passes, "seconds": seconds, "texts_per_s": rate,
           "tokens_per_s": tokens * passes / seconds, "peak_allocated_mib": peak,
           "first_pass_s": warm, "torch": torch.__version__}
    if args.vectors:
        first.tofile(args.vectors)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
