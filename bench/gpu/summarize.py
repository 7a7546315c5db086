#!/usr/bin/env python3
"""The table of scripts/gpu-model-bench.sh, from the JSON files its runs left in OUT_DIR.

Per model and dtype: ember's CUDA encoder (texts/s, tokens/s, share of the card's measured bf16
matmul rate), its ATen forward, the HF forward (eager; compiled where it ran), ratios, peak GPU
memory, and the cosine of ember's and HF's vectors against HF fp32 on the same texts. FLOPs per
text count the dense layers and attention at the text's own length (no padding):
2 * layers * L * (4 h^2 + 2 h ffn) + 4 * layers * L^2 * h. Writes OUT_DIR/summary.json.
"""
import json
import os
import sys

import numpy as np

MODELS = {"minilm": ("minilm-l6-random", "passages"), "bge-large": ("bge-large-random", "mix")}


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def flops_per_pass(config, lengths):
    n, h, f = config["num_hidden_layers"], config["hidden_size"], config["intermediate_size"]
    return sum(2 * n * L * (4 * h * h + 2 * h * f) + 4 * n * L * L * h for L in lengths)


def cosine(a_path, b_path, dim):
    if not (os.path.exists(a_path) and os.path.exists(b_path)):
        return None
    a = np.fromfile(a_path, dtype=np.float32).reshape(-1, dim).astype(np.float64)
    b = np.fromfile(b_path, dtype=np.float32).reshape(-1, dim).astype(np.float64)
    k = min(len(a), len(b))
    a, b = a[:k], b[:k]
    return float(((a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)).min())


def main():
    out, models = sys.argv[1], sys.argv[2]
    peak = (load(os.path.join(out, "peak.json")) or {}).get("bf16_peak_flops")
    gpu = open(os.path.join(out, "gpu.txt")).read().strip() if os.path.exists(
        os.path.join(out, "gpu.txt")) else "?"
    rows = []
    for name, (folder, ids) in MODELS.items():
        config = load(os.path.join(models, folder, "config.json"))
        idsj = load(os.path.join(out, f"ids-{ids}.json"))
        if not config or not idsj:
            continue
        lengths = [len(s) for s in idsj["ids"]]
        fpp = flops_per_pass(config, lengths)
        dim = config["hidden_size"]
        for dtype in ("fp32", "fp16", "bf16", "fp16-block"):
            e = load(os.path.join(out, f"{name}-ember-{dtype}.json"))
            if not e:
                continue
            base = dtype.split("-")[0]  # fp16-block: ember's block LayerNorm vs HF fp16
            hf = load(os.path.join(out, f"{name}-hf-{base}.json")) or {}
            at = load(os.path.join(out, f"{name}-aten-{dtype}.json")) or {}
            hc = load(os.path.join(out, f"{name}-hfcompiled-{dtype}.json")) or {}
            ref = os.path.join(out, f"{name}-hf-fp32.f32")
            texts = len(lengths)
            rate = e["texts_per_s"]
            row = {
                "model": name, "dtype": dtype, "texts": texts,
                "mean_tokens": sum(lengths) / texts,
                "ember_texts_per_s": rate, "ember_tokens_per_s": e["tokens_per_s"],
                "ember_tflops": rate / texts * fpp / 1e12,
                "bf16_peak_share": (rate / texts * fpp / peak) if peak else None,
                "ember_aten_texts_per_s": at.get("texts_per_s"),
                "hf_texts_per_s": hf.get("texts_per_s"),
                "hf_attention": hf.get("attention"),
                "hf_compiled_texts_per_s": hc.get("texts_per_s"),
                "ember_over_hf": rate / hf["texts_per_s"] if hf.get("texts_per_s") else None,
                "ember_peak_mib": e["peak_allocated_mib"], "ember_weights_mib": e["weights_mib"],
                "hf_peak_mib": hf.get("peak_allocated_mib"),
                "ember_min_cos_vs_hf_fp32": cosine(os.path.join(out, f"{name}-ember-{dtype}.f32"),
                                                   ref, dim),
                "hf_min_cos_vs_hf_fp32": cosine(os.path.join(out, f"{name}-hf-{base}.f32"), ref,
                                                dim),
            }
            rows.append(row)

    def f(v, fmt):
        return "-" if v is None else format(v, fmt)

    print(f"GPU: {gpu}; bf16 matmul peak measured {f(peak and peak / 1e12, '.0f')} TFLOP/s")
    head = ("model", "dtype", "ember t/s", "tokens/s", "TFLOP/s", "%bf16pk", "aten t/s",
            "HF t/s", "HF comp", "ember/HF", "MiB e/HF", "cos e", "cos HF")
    print(" | ".join(head))
    for r in rows:
        print(" | ".join([
            r["model"], r["dtype"], f(r["ember_texts_per_s"], ".0f"),
            f(r["ember_tokens_per_s"], ".3g"), f(r["ember_tflops"], ".0f"),
            f(r["bf16_peak_share"] and 100 * r["bf16_peak_share"], ".1f"),
            f(r["ember_aten_texts_per_s"], ".0f"), f(r["hf_texts_per_s"], ".0f"),
            f(r["hf_compiled_texts_per_s"], ".0f"), f(r["ember_over_hf"], ".2f") + "x",
            f(r["ember_peak_mib"], ".0f") + "/" + f(r["hf_peak_mib"], ".0f"),
            f(r["ember_min_cos_vs_hf_fp32"], ".7f"), f(r["hf_min_cos_vs_hf_fp32"], ".7f")]))
    print("t/s = texts/s; cos = min cosine vs HF fp32 vectors of the same texts; MiB = peak "
          "allocated during timing (LibTorch allocator)")
    sweep = []
    for n in (64, 512, 2048):
        e = load(os.path.join(out, f"minilm-ember-fp16-batch{n}.json" if n != 512
                              else "minilm-ember-fp16.json"))
        if e:
            sweep.append({"batch_texts": n, "texts_per_s": e["texts_per_s"]})
    if sweep:
        print("MiniLM fp16, ember texts/s by texts per call: " +
              ", ".join(f"{s['batch_texts']}: {s['texts_per_s']:.0f}" for s in sweep))
    with open(os.path.join(out, "summary.json"), "w") as fh:
        json.dump({"gpu": gpu, "bf16_peak_flops": peak, "rows": rows, "batch_sweep": sweep}, fh,
                  indent=2)
    if not rows:
        sys.exit("summarize: no results")


if __name__ == "__main__":
    main()
