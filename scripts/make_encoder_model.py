#!/usr/bin/env python3
"""Write a seeded random model folder of an encoder or decoder family in the real models' shapes,
with a real or trained tokenizer: what the family parity tests serve and compare with
sentence-transformers / transformers (python/tests/test_families.py).

The model is transformers' own class (XLMRobertaModel, XLMRobertaForSequenceClassification,
...) built from its config with torch.manual_seed(SEED), then every LayerNorm and bias moved
off its initial value (noise of std 0.05) so that each parameter changes the output, and saved
with save_pretrained (model.safetensors, float32). The tokenizer's tokenizer.json is copied
beside it with a tokenizer_config.json for AutoTokenizer; the vocabulary size is the
tokenizer's. An embedding model gets sentence-transformers' files (modules.json, pooling,
Normalize, max_seq_length); a cross-encoder (--labels) gets none, as on the hub. --token-heads
adds bge-m3's token-level heads as FlagEmbedding saves them: sparse_linear.pt (Linear(H, 1)) and
colbert_linear.pt (Linear(H, H)), torch.save'd state dicts with PyTorch's default init (the
sparse bias 0).

    make_encoder_model.py OUT_DIR --family xlm-roberta --shape e5-small \\
        --tokenizer build/testdata/tokenizers/xlmr [--pooling mean|cls] [--labels LABEL_0]

A decoder (--family qwen3, qwen2 or mistral; Qwen3Model, ...) takes a DECODER_SHAPES shape, last-token
pooling by default (as Qwen3-Embedding, gte-Qwen2 and e5-mistral), --bidirectional for a config
with is_causal false, --sliding-window for Mistral's (4096 by default, as e5-mistral's) and
--dtype bfloat16 to be saved as the real ones are (--shard-size: in shards, with
model.safetensors.index.json). --streamed writes a decoder too large to build in memory here
(Qwen3-Embedding-4B's shapes: 8 GB in bf16) tensor by tensor: seeded normal weights of std 0.02,
norms near 1, shard after shard; for load tests (bench/load_check.cpp), not parity.
"""

import argparse
import json
import os
import shutil
import sys

import torch

from make_bert_model import folder_in_place, write_json, write_sentence_transformers_files

# Named shapes (layers, hidden, heads, intermediate, max_position_embeddings) of the real models.
SHAPES = {
    "e5-small": (12, 384, 12, 1536, 514),  # intfloat/multilingual-e5-small
    "e5-base": (12, 768, 12, 3072, 514),   # intfloat/multilingual-e5-base, xlm-roberta-base
    "m3": (24, 1024, 16, 4096, 8194),      # BAAI/bge-m3, bge-reranker-v2-m3
    "mpnet-base": (12, 768, 12, 3072, 514),  # sentence-transformers/all-mpnet-base-v2
    # answerdotai/ModernBERT-base, Alibaba-NLP/gte-modernbert-base, nomic-ai/modernbert-embed-base
    "modernbert-base": (22, 768, 12, 1152, 8192),
}

# Decoder shapes (layers, hidden, heads, key/value heads, head_dim, intermediate,
# max_position_embeddings): the real models', and the tiny ones the tests serve, which keep the
# real ones' head structure (grouped queries; Qwen3's heads wider than hidden / heads).
DECODER_SHAPES = {
    "qwen3-0.6b": (28, 1024, 16, 8, 128, 3072, 32768),   # Qwen/Qwen3-Embedding-0.6B
    "qwen3-4b": (36, 2560, 32, 8, 128, 9728, 40960),     # Qwen/Qwen3-Embedding-4B
    "qwen3-8b": (36, 4096, 32, 8, 128, 12288, 40960),    # Qwen/Qwen3-Embedding-8B
    "qwen3-tiny": (2, 64, 4, 2, 32, 192, 32768),
    "qwen2-1.5b": (28, 1536, 12, 2, 128, 8960, 131072),  # Alibaba-NLP/gte-Qwen2-1.5B-instruct
    "qwen2-tiny": (2, 96, 6, 2, 16, 256, 32768),
    "mistral-7b": (32, 4096, 32, 8, 128, 14336, 32768),  # intfloat/e5-mistral-7b-instruct
    "mistral-tiny": (2, 64, 8, 2, 8, 160, 32768),
}
# family -> (config class, model class, config keys, tokenizer_config.json's special tokens).
DECODERS = {
    "qwen3": ("Qwen3Config", "Qwen3Model", {"rms_norm_eps": 1e-6, "rope_theta": 1000000.0},
              {"eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>"}),
    "qwen2": ("Qwen2Config", "Qwen2Model", {"rms_norm_eps": 1e-6, "rope_theta": 1000000.0},
              {"eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>"}),
    "mistral": ("MistralConfig", "MistralModel", {"rms_norm_eps": 1e-5, "rope_theta": 10000.0},
                {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
                 "pad_token": "<unk>"}),
}

# family -> (config class, encoder class, classifier class, tokenizer class), by name in
# transformers, the config's extra keys, and tokenizer_config.json's special tokens where they
# are not XLM-R's.
ROBERTA_SPECIALS = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
                    "sep_token": "</s>", "cls_token": "<s>", "pad_token": "<pad>",
                    "mask_token": "<mask>"}
FAMILIES = {
    "xlm-roberta": ("XLMRobertaConfig", "XLMRobertaModel", "XLMRobertaForSequenceClassification",
                    "XLMRobertaTokenizer",
                    {"type_vocab_size": 1, "layer_norm_eps": 1e-5, "pad_token_id": 1,
                     "bos_token_id": 0, "eos_token_id": 2}),
    "roberta": ("RobertaConfig", "RobertaModel", "RobertaForSequenceClassification",
                "RobertaTokenizer",
                {"type_vocab_size": 1, "layer_norm_eps": 1e-5, "pad_token_id": 1,
                 "bos_token_id": 0, "eos_token_id": 2}),
    # all-mpnet-base-v2's tokenizer_config.json: lower case, [UNK] as the unknown token.
    "mpnet": ("MPNetConfig", "MPNetModel", "MPNetForSequenceClassification", "MPNetTokenizer",
              {"layer_norm_eps": 1e-5, "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2,
               "relative_attention_num_buckets": 32},
              {"unk_token": "[UNK]", "do_lower_case": True, "tokenize_chinese_chars": True,
               "strip_accents": None}),
    # ModernBERT-base's config (global and local RoPE, a global layer every 3, a window of 128,
    # no biases); its special tokens' ids are the tokenizer's (special_token_ids).
    "modernbert": ("ModernBertConfig", "ModernBertModel", "ModernBertForSequenceClassification",
                   "PreTrainedTokenizerFast",
                   {"hidden_activation": "gelu", "norm_eps": 1e-5, "global_attn_every_n_layers": 3,
                    "local_attention": 128, "global_rope_theta": 160000.0,
                    "local_rope_theta": 10000.0},
                   {"unk_token": "[UNK]", "cls_token": "[CLS]", "sep_token": "[SEP]",
                    "pad_token": "[PAD]", "mask_token": "[MASK]", "bos_token": None,
                    "eos_token": None}),
}


def tokenizer_vocab_size(path):
    with open(path, encoding="utf-8") as f:
        tok = json.load(f)
    vocab = tok["model"]["vocab"]
    ids = [i for _, i in vocab.items()] if isinstance(vocab, dict) else [len(vocab) - 1]
    ids += [t["id"] for t in tok.get("added_tokens", [])]
    return max(ids) + 1


def special_token_ids(path, names):
    """{"pad_token_id": id of [PAD], ...} for a tokenizer.json's added tokens."""
    with open(path, encoding="utf-8") as f:
        ids = {t["content"]: t["id"] for t in json.load(f).get("added_tokens", [])}
    return {key: ids[token] for key, token in names.items()}


def write_streamed(args, config, tokenizer_json, specials, max_pos):
    """The model's tensors, named and shaped as transformers' (one layer built on the meta
    device, repeated), drawn one at a time and written shard by shard: memory holds one shard."""
    import copy
    import transformers
    from safetensors.torch import save_file
    _, model_name, _, _ = DECODERS[args.family]
    one = copy.deepcopy(config)
    one.num_hidden_layers = 1
    one.layer_types = one.layer_types[:1] if getattr(one, "layer_types", None) else None
    with torch.device("meta"):
        shapes = dict((n, tuple(p.shape)) for n, p in
                      getattr(transformers, model_name)(one).named_parameters())
    names = []
    for name, shape in shapes.items():
        if name.startswith("layers.0."):
            names += [("layers.%d." % i + name[len("layers.0."):], shape)
                      for i in range(config.num_hidden_layers)]
        else:
            names.append((name, shape))
    dtype = getattr(torch, args.dtype)
    limit = _size_bytes(args.shard_size or "2GB")
    gen = torch.Generator().manual_seed(args.seed)
    out_dir = os.path.abspath(args.out_dir)
    with folder_in_place(out_dir) as tmp:
        shards, shard, size, weight_map, total = [], {}, 0, {}, 0
        def flush():
            nonlocal shard, size
            if shard:
                shards.append(shard)
                save_file(shard, os.path.join(tmp, "shard-%05d.safetensors" % len(shards)),
                          metadata={"format": "pt"})
                shard, size = {}, 0
        for name, shape in names:
            t = torch.randn(shape, generator=gen) * 0.02
            if name.endswith("norm.weight"):
                t = 1.0 + t
            t = t.to(dtype)
            if size and size + t.numel() * t.element_size() > limit:
                flush()
            shard[name] = t
            size += t.numel() * t.element_size()
            total += t.numel() * t.element_size()
            weight_map[name] = len(shards) + 1
        flush()
        n = len(shards)
        final = {}
        for i in range(1, n + 1):
            final[i] = "model-%05d-of-%05d.safetensors" % (i, n)
            os.rename(os.path.join(tmp, "shard-%05d.safetensors" % i), os.path.join(tmp, final[i]))
        write_json(os.path.join(tmp, "model.safetensors.index.json"), {
            "metadata": {"total_size": total},
            "weight_map": {k: final[v] for k, v in weight_map.items()}})
        config.save_pretrained(tmp)
        shutil.copyfile(tokenizer_json, os.path.join(tmp, "tokenizer.json"))
        write_json(os.path.join(tmp, "tokenizer_config.json"), {
            "tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": max_pos,
            **specials})
        write_sentence_transformers_files(tmp, config.hidden_size, args.pooling or "lasttoken",
                                          args.max_seq_length)
    params = sum(torch.Size(s).numel() for _, s in names)
    print(f"wrote {out_dir}: {model_name} ({args.dtype}, streamed), {params} parameters in {n} "
          f"shards, seed {args.seed}")
    return 0


def _size_bytes(text):
    units = {"KB": 10**3, "MB": 10**6, "GB": 10**9}
    for unit, factor in units.items():
        if text.upper().endswith(unit):
            return int(float(text[:-len(unit)]) * factor)
    return int(text)


def make_decoder(args):
    """A decoder family's folder (DECODERS): its base model (Qwen3Model, ...) from the config,
    seeded, every norm weight and bias moved off its initial value."""
    import transformers
    config_name, model_name, extra, specials = DECODERS[args.family]
    layers, hidden, heads, kv_heads, head_dim, inter, max_pos = DECODER_SHAPES[args.shape]
    extra = dict(extra)
    theta = extra.pop("rope_theta")
    if args.family == "mistral":
        extra["sliding_window"] = args.sliding_window
    if args.bidirectional:
        extra["is_causal"] = False
    tokenizer_json = os.path.join(args.tokenizer, "tokenizer.json")
    config = getattr(transformers, config_name)(
        vocab_size=tokenizer_vocab_size(tokenizer_json), hidden_size=hidden,
        num_hidden_layers=args.layers or layers, num_attention_heads=heads,
        num_key_value_heads=kv_heads, head_dim=head_dim, intermediate_size=inter,
        max_position_embeddings=max_pos, hidden_act="silu",
        rope_parameters={"rope_type": "default", "rope_theta": theta}, **extra)
    if args.streamed:
        return write_streamed(args, config, tokenizer_json, specials, max_pos)
    torch.manual_seed(args.seed)
    model = getattr(transformers, model_name)(config).eval()
    gen = torch.Generator().manual_seed(args.seed + 1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or name.endswith("norm.weight") or "layernorm" in name:
                p.add_(torch.randn(p.shape, generator=gen) * 0.05)
    model = model.to(getattr(torch, args.dtype))
    out_dir = os.path.abspath(args.out_dir)
    with folder_in_place(out_dir) as tmp:
        model.save_pretrained(tmp, safe_serialization=True,
                              max_shard_size=args.shard_size or "1000GB")
        shutil.copyfile(tokenizer_json, os.path.join(tmp, "tokenizer.json"))
        write_json(os.path.join(tmp, "tokenizer_config.json"), {
            "tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": max_pos,
            **specials})
        write_sentence_transformers_files(tmp, hidden, args.pooling or "lasttoken",
                                          args.max_seq_length)
    n = sum(p.numel() for p in model.parameters())
    print(f"wrote {out_dir}: {model_name} ({args.dtype}), {n} parameters, seed {args.seed}")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--family", choices=sorted(FAMILIES) + sorted(DECODERS), required=True)
    ap.add_argument("--shape", choices=sorted(SHAPES) + sorted(DECODER_SHAPES), required=True)
    ap.add_argument("--layers", type=int, help="fewer layers than the shape's (test time)")
    ap.add_argument("--tokenizer", required=True, help="a folder with tokenizer.json")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pooling", choices=("mean", "cls", "lasttoken"),
                    help="default: mean for an encoder, lasttoken for a decoder")
    ap.add_argument("--max-seq-length", dest="max_seq_length", type=int, default=512)
    ap.add_argument("--classifier-pooling", choices=("cls", "mean"),
                    help="ModernBERT classifiers: the config's classifier_pooling")
    ap.add_argument("--labels", type=lambda s: s.split(","),
                    help="comma-separated label names: a ...ForSequenceClassification folder")
    ap.add_argument("--bidirectional", action="store_true", help="a decoder with is_causal false")
    ap.add_argument("--token-heads", dest="token_heads", action="store_true",
                    help="bge-m3's sparse_linear.pt and colbert_linear.pt beside the encoder")
    ap.add_argument("--sliding-window", dest="sliding_window", type=int, default=4096,
                    help="Mistral's sliding_window")
    ap.add_argument("--dtype", choices=("float32", "bfloat16", "float16"), default="float32")
    ap.add_argument("--shard-size", dest="shard_size",
                    help="save_pretrained's max_shard_size, e.g. 2GB (default: one file; "
                         "--streamed: 2GB)")
    ap.add_argument("--streamed", action="store_true",
                    help="a decoder too large to build in memory: tensor by tensor (load tests)")
    args = ap.parse_args(argv)
    if (args.family in DECODERS) != (args.shape in DECODER_SHAPES):
        ap.error("--shape %s is not a %s shape" % (args.shape, args.family))
    if args.family in DECODERS:
        return make_decoder(args)
    args.pooling = args.pooling or "mean"

    import transformers
    config_name, model_name, classifier_name, tokenizer_class, extra, *tokens = FAMILIES[args.family]
    layers, hidden, heads, inter, max_pos = SHAPES[args.shape]
    tokenizer_json = os.path.join(args.tokenizer, "tokenizer.json")
    if args.family == "modernbert":
        extra = {**extra, **special_token_ids(tokenizer_json, {
            "pad_token_id": "[PAD]", "cls_token_id": "[CLS]", "sep_token_id": "[SEP]",
            "bos_token_id": "[CLS]", "eos_token_id": "[SEP]"})}
    else:
        extra = {"hidden_act": "gelu", **extra}
    config = getattr(transformers, config_name)(
        vocab_size=tokenizer_vocab_size(tokenizer_json), hidden_size=hidden,
        num_hidden_layers=args.layers or layers, num_attention_heads=heads,
        intermediate_size=inter, max_position_embeddings=max_pos, **extra)
    if args.labels:
        config.id2label = dict(enumerate(args.labels))
        config.label2id = {n: i for i, n in enumerate(args.labels)}
    if args.classifier_pooling:
        config.classifier_pooling = args.classifier_pooling
    torch.manual_seed(args.seed)
    model_class = classifier_name if args.labels else model_name
    model = getattr(transformers, model_class)(config).eval()
    gen = torch.Generator().manual_seed(args.seed + 1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if (name.endswith("bias") or "LayerNorm" in name or "relative_attention" in name
                    or name.endswith("norm.weight")):
                p.add_(torch.randn(p.shape, generator=gen) * 0.05)
            if args.labels and name.startswith("classifier."):
                # Larger than the init so that scores spread over the sigmoid.
                p.mul_(10.0)

    out_dir = os.path.abspath(args.out_dir)
    with folder_in_place(out_dir) as tmp:
        model.save_pretrained(tmp, safe_serialization=True)
        shutil.copyfile(tokenizer_json, os.path.join(tmp, "tokenizer.json"))
        write_json(os.path.join(tmp, "tokenizer_config.json"), {
            "tokenizer_class": tokenizer_class,
            "model_max_length": max_pos if args.family == "modernbert" else max_pos - 2,
            **ROBERTA_SPECIALS, **(tokens[0] if tokens else {})})
        if not args.labels:
            write_sentence_transformers_files(tmp, hidden, args.pooling, args.max_seq_length)
        if args.token_heads:
            torch.manual_seed(args.seed + 2)
            for name, out in (("sparse_linear", 1), ("colbert_linear", hidden)):
                head = torch.nn.Linear(hidden, out)
                if out == 1:
                    # Bias 0: about half the tokens weigh > 0, so that repeated ids and the
                    # special tokens left out are exercised (the default init leaves ~1 in 10).
                    torch.nn.init.zeros_(head.bias)
                torch.save(head.state_dict(), os.path.join(tmp, name + ".pt"))
    n = sum(p.numel() for p in model.parameters())
    print(f"wrote {out_dir}: {model_class}, {n} parameters, seed {args.seed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
