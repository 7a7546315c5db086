#!/usr/bin/env python3
"""The table of scripts/gpu-decoder-bench.sh, from the JSON and vectors its runs left in OUT_DIR.

Per model shape and set of ids: ember's packed CUDA decoder, ember's ATen forward and the
transformers forward: texts/s, tokens/s, the share of the card's measured bf16 matmul rate, the
GPU memory peak while running, ember's load (seconds, and its GPU peak against the weights), and
each ember path's cosine to the transformers vectors of the same texts (min and mean). FLOPs per
text count the dense layers and attention at the text's own length (causal: half the scores):
layers * (2 L (h (q + 2 kv) + q h + 3 h f) + 4 L^2 q / (2 if causal)). Writes OUT_DIR/summary.json.
"""
import glob
import json
import os
import sys

import numpy as np

from summarize import load  # same folder: this script runs as bench/gpu/decoder_summary.py

# (layers, hidden, heads, kv heads, head_dim, intermediate): make_encoder_model.py's shapes.
SHAPES = {"qwen3-0.6b": (28, 1024, 16, 8, 128, 3072), "qwen3-8b": (36, 4096, 32, 8, 128, 12288),
          "qwen3-tiny": (2, 64, 4, 2, 32, 192)}


def flops(shape, lengths):
    n, h, heads, kv, hd, f = SHAPES[shape]
    q, k = heads * hd, kv * hd
    return sum(n * (2 * L * (h * (q + 2 * k) + q * h + 3 * h * f) + 2 * L * L * q) for L in lengths)


def cosines(a_path, b_path, dim):
    try:
        a = np.fromfile(a_path, dtype=np.float32).reshape(-1, dim)
        b = np.fromfile(b_path, dtype=np.float32).reshape(-1, dim)
    except (OSError, ValueError):
        return None
    n = min(len(a), len(b))
    if n == 0:
        return None
    a, b = a[:n].astype(np.float64), b[:n].astype(np.float64)
    c = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    return float(c.min()), float(c.mean())


def main():
    out = sys.argv[1]
    peak = (load(os.path.join(out, "peak.json")) or {}).get("bf16_peak_flops")
    rows, summary = [], []
    for hf_path in sorted(glob.glob(os.path.join(out, "*-hf.json"))):
        base = os.path.basename(hf_path)[:-len("-hf.json")]
        shape = next((s for s in SHAPES if base.startswith(s + "-")), None)
        if shape is None:
            continue
        ids_set = base[len(shape) + 1:]
        ids = load(os.path.join(out, f"ids-{ids_set}.json")) or {"ids": []}
        lengths = [len(s) for s in ids["ids"]]
        per_pass = flops(shape, lengths)
        dim = SHAPES[shape][1]
        for path in ("packed", "aten", "hf"):
            r = load(os.path.join(out, f"{base}-{path}.json"))
            if r is None:
                continue
            share = (per_pass * r["texts_per_s"] / max(len(lengths), 1) / peak) if peak else None
            cos = (cosines(os.path.join(out, f"{base}-{path}.f32"),
                           os.path.join(out, f"{base}-hf.f32"), dim) if path != "hf" else None)
            entry = {"shape": shape, "ids": ids_set, "path": path, "texts_per_s": r["texts_per_s"],
                     "tokens_per_s": r["tokens_per_s"], "peak_share": share,
                     "peak_allocated_mib": r.get("peak_allocated_mib"),
                     "weights_mib": r.get("weights_mib"), "load_seconds": r.get("load_seconds"),
                     "load_peak_allocated_mib": r.get("load_peak_allocated_mib"),
                     "packs": r.get("packs"), "cosine_to_hf": cos}
            summary.append(entry)
            rows.append(entry)
    head = (f"{'shape':<11} {'ids':<7} {'path':<7} {'texts/s':>9} {'tokens/s':>10} {'of bf16':>7} "
            f"{'GPU MiB':>8} {'weights':>8} {'load s':>7} {'load MiB':>9} {'cos min/mean':>17}")
    print(head)
    print("-" * len(head))
    for e in rows:
        share = f"{100 * e['peak_share']:.1f}%" if e["peak_share"] else "-"
        fmt = lambda v, f: (f % v) if isinstance(v, (int, float)) else "-"  # noqa: E731
        cos = (f"{e['cosine_to_hf'][0]:.5f}/{e['cosine_to_hf'][1]:.5f}"
               if e["cosine_to_hf"] else "-")
        print(f"{e['shape']:<11} {e['ids']:<7} {e['path']:<7} {e['texts_per_s']:>9.0f} "
              f"{e['tokens_per_s']:>10.0f} {share:>7} {fmt(e['peak_allocated_mib'], '%.0f'):>8} "
              f"{fmt(e['weights_mib'], '%.0f'):>8} {fmt(e['load_seconds'], '%.1f'):>7} "
              f"{fmt(e['load_peak_allocated_mib'], '%.0f'):>9} {cos:>17}")
    for shape_ids in sorted({(e["shape"], e["ids"]) for e in rows}):
        by = {e["path"]: e for e in rows if (e["shape"], e["ids"]) == shape_ids}
        if "packed" in by and "hf" in by:
            ratio = by["packed"]["texts_per_s"] / by["hf"]["texts_per_s"]
            aten = (f", ATen / transformers {by['aten']['texts_per_s'] / by['hf']['texts_per_s']:.2f}x"
                    if "aten" in by else "")
            print(f"{shape_ids[0]} {shape_ids[1]}: packed / transformers {ratio:.2f}x{aten}")
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)


if __name__ == "__main__":
    main()
