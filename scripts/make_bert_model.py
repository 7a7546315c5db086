#!/usr/bin/env python3
"""Write a deterministic, randomly initialised BERT model folder in HuggingFace layout.

The default shape is exactly all-MiniLM-L6-v2 (6 layers, hidden 384, 12 heads,
intermediate 1536, vocab 30522, 512 positions), so the folder can stand in for a
real sentence-transformers download in tests and benchmarks:

    OUT_DIR/config.json                  HF BertConfig subset
    OUT_DIR/model.safetensors            hand-written safetensors (no `safetensors` package)
    OUT_DIR/modules.json                 sentence-transformers pipeline
    OUT_DIR/sentence_bert_config.json    max_seq_length
    OUT_DIR/1_Pooling/config.json        pooling mode (mean by default)

The weights come from a seeded torch.Generator, so the same seed and options give
byte-identical files for a given torch version (the SHA-256 of model.safetensors is
printed). Initialisation is BERT-like (normal, std 0.02) but biases and LayerNorm
parameters are also perturbed so every parameter influences the output.

With --labels, the folder is a BertForSequenceClassification checkpoint instead (a
cross-encoder with one label, as cross-encoder/ms-marco-MiniLM-L6-v2; a classifier with
several): "bert."-prefixed encoder and pooler, "classifier.*" with one row per label, id2label
in config.json, and no sentence-transformers files.

Only torch and the standard library are needed: the project's Python (.venv/bin/python3).
"""

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import struct
import sys
import tempfile
import time

import torch

_DTYPES = {"f32": ("F32", torch.float32), "f16": ("F16", torch.float16),
           "bf16": ("BF16", torch.bfloat16)}


def build_state(args, gen):
    """Return an ordered list of (name, float32 tensor) with HF BertModel names."""
    h, inter = args.hidden, args.intermediate
    std = 0.02

    def normal(*shape, scale=std):
        return torch.randn(*shape, generator=gen, dtype=torch.float32) * scale

    def ln(prefix):
        # Near-identity LayerNorm that is still not trivially 1/0.
        return [(prefix + ".weight", 1.0 + normal(h, scale=0.1)),
                (prefix + ".bias", normal(h, scale=0.05))]

    state = [
        ("embeddings.word_embeddings.weight", normal(args.vocab, h)),
        ("embeddings.position_embeddings.weight", normal(args.max_pos, h)),
        ("embeddings.token_type_embeddings.weight", normal(args.type_vocab, h)),
    ]
    state += ln("embeddings.LayerNorm")
    for i in range(args.layers):
        p = f"encoder.layer.{i}."
        for m in ("query", "key", "value"):
            state.append((p + f"attention.self.{m}.weight", normal(h, h)))
            state.append((p + f"attention.self.{m}.bias", normal(h)))
        state.append((p + "attention.output.dense.weight", normal(h, h)))
        state.append((p + "attention.output.dense.bias", normal(h)))
        state += ln(p + "attention.output.LayerNorm")
        state.append((p + "intermediate.dense.weight", normal(inter, h)))
        state.append((p + "intermediate.dense.bias", normal(inter)))
        state.append((p + "output.dense.weight", normal(h, inter)))
        state.append((p + "output.dense.bias", normal(h)))
        state += ln(p + "output.LayerNorm")
    if not args.no_pooler:
        state.append(("pooler.dense.weight", normal(h, h)))
        state.append(("pooler.dense.bias", normal(h)))
    state = [(args.prefix + n, t) for n, t in state]
    if args.labels:
        # Larger than BERT's init so that scores spread over the sigmoid, not all near 0.5.
        state.append(("classifier.weight", normal(len(args.labels), h, scale=0.5)))
        state.append(("classifier.bias", normal(len(args.labels), scale=0.5)))
    return state


def tensor_bytes(t, dtype):
    t = t.to(dtype).contiguous()
    if dtype == torch.float32:
        raw = t.numpy().astype("<f4", copy=False).tobytes()
    else:
        # Reinterpret the 16-bit payload; numpy has no bfloat16.
        raw = t.view(torch.int16).numpy().astype("<i2", copy=False).tobytes()
    return raw


def write_safetensors(path, state, dtype_name, dtype, metadata):
    header = {"__metadata__": metadata}
    blobs = []
    offset = 0
    for name, t in state:
        raw = tensor_bytes(t, dtype)
        header[name] = {"dtype": dtype_name, "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    hjson = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hjson += b" " * ((8 - len(hjson) % 8) % 8)  # keep the data 8-byte aligned
    sha = hashlib.sha256()
    with open(path, "wb") as f:
        for chunk in (struct.pack("<Q", len(hjson)), hjson, *blobs):
            f.write(chunk)
            sha.update(chunk)
    return sha.hexdigest(), 8 + len(hjson) + offset


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


def write_sentence_transformers_files(folder, hidden, pooling, max_seq_length):
    """A sentence-transformers folder's own files: modules.json (Transformer, Pooling,
    Normalize), sentence_bert_config.json and 1_Pooling/config.json (pooling "mean", "cls" or
    "lasttoken")."""
    write_json(os.path.join(folder, "modules.json"), [
        {"idx": 0, "name": "0", "path": "",
         "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling",
         "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize",
         "type": "sentence_transformers.models.Normalize"},
    ])
    write_json(os.path.join(folder, "sentence_bert_config.json"),
               {"max_seq_length": max_seq_length, "do_lower_case": False})
    os.makedirs(os.path.join(folder, "1_Pooling"))
    write_json(os.path.join(folder, "1_Pooling", "config.json"), {
        "word_embedding_dimension": hidden,
        "pooling_mode_cls_token": pooling == "cls",
        "pooling_mode_mean_tokens": pooling == "mean",
        "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False,
        "pooling_mode_lasttoken": pooling == "lasttoken",
    })
    os.makedirs(os.path.join(folder, "2_Normalize"))


@contextlib.contextmanager
def folder_in_place(out_dir):
    """Yields a temporary sibling of out_dir to fill, which replaces out_dir when the block
    ends, so that an interrupted run never leaves a half-written folder that a build system
    would consider up to date; on an error the temporary folder is removed."""
    out_dir = os.path.abspath(out_dir)
    parent = os.path.dirname(out_dir)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".tmp-" + os.path.basename(out_dir) + "-", dir=parent)
    try:
        yield tmp
        os.chmod(tmp, 0o755)  # mkdtemp creates 0700
        if os.path.isdir(out_dir):
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


# Named shapes (layers, hidden, heads, intermediate) of models no package ships with weights:
# --shape sets them, and any of --layers / --hidden / --heads / --intermediate given overrides.
SHAPES = {
    "minilm-l6": (6, 384, 12, 1536),   # all-MiniLM-L6-v2 (the default)
    "bge-small": (12, 384, 12, 1536),  # BAAI/bge-small-en-v1.5
    "bge-base": (12, 768, 12, 3072),   # BAAI/bge-base-en-v1.5, bert-base
    "bge-large": (24, 1024, 16, 4096),  # BAAI/bge-large-en-v1.5, bert-large
}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--shape", choices=sorted(SHAPES), default="minilm-l6",
                    help="a named shape (random weights; bge-large stored f32 is 1.3 GB)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--layers", type=int)
    ap.add_argument("--hidden", type=int)
    ap.add_argument("--heads", type=int)
    ap.add_argument("--intermediate", type=int)
    ap.add_argument("--vocab", type=int, default=30522)
    ap.add_argument("--max-pos", dest="max_pos", type=int, default=512)
    ap.add_argument("--type-vocab", dest="type_vocab", type=int, default=2)
    ap.add_argument("--max-seq-length", dest="max_seq_length", type=int, default=256,
                    help="sentence_bert_config.json max_seq_length")
    ap.add_argument("--pooling", choices=("mean", "cls"), default="mean")
    ap.add_argument("--dtype", choices=sorted(_DTYPES), default="f32",
                    help="storage dtype of model.safetensors")
    ap.add_argument("--prefix", default="",
                    help="tensor name prefix, e.g. 'bert.' as in BertForXxx checkpoints")
    ap.add_argument("--no-pooler", action="store_true", help="omit pooler.dense.*")
    ap.add_argument("--no-sentence-transformers", dest="no_st", action="store_true",
                    help="write only config.json + model.safetensors")
    ap.add_argument("--labels", type=lambda s: s.split(","),
                    help="comma-separated label names: a BertForSequenceClassification folder "
                         "(one label: a cross-encoder)")
    args = ap.parse_args(argv)
    if args.labels:
        if args.no_pooler:
            ap.error("--labels needs the pooler")
        args.prefix = "bert."
        args.no_st = True
    for name, value in zip(("layers", "hidden", "heads", "intermediate"), SHAPES[args.shape]):
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.hidden % args.heads:
        ap.error("--hidden must be divisible by --heads")

    t0 = time.monotonic()
    gen = torch.Generator().manual_seed(args.seed)
    state = build_state(args, gen)

    out_dir = os.path.abspath(args.out_dir)
    with folder_in_place(out_dir) as tmp:
        dtype_name, dtype = _DTYPES[args.dtype]
        sha, size = write_safetensors(
            os.path.join(tmp, "model.safetensors"), state, dtype_name, dtype,
            {"format": "pt", "generator": "ember make_bert_model.py", "seed": str(args.seed)})
        classifier = {}
        if args.labels:
            classifier = {"id2label": {str(i): n for i, n in enumerate(args.labels)},
                          "label2id": {n: i for i, n in enumerate(args.labels)}}
        write_json(os.path.join(tmp, "config.json"), {
            **classifier,
            "architectures": ["BertForSequenceClassification" if args.labels else "BertModel"],
            "model_type": "bert",
            "hidden_size": args.hidden,
            "num_hidden_layers": args.layers,
            "num_attention_heads": args.heads,
            "intermediate_size": args.intermediate,
            "max_position_embeddings": args.max_pos,
            "vocab_size": args.vocab,
            "type_vocab_size": args.type_vocab,
            "layer_norm_eps": 1e-12,
            "hidden_act": "gelu",
            "hidden_dropout_prob": 0.1,
            "attention_probs_dropout_prob": 0.1,
            "initializer_range": 0.02,
            "pad_token_id": 0,
            "position_embedding_type": "absolute",
            "torch_dtype": {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}[args.dtype],
        })
        if not args.no_st:
            write_sentence_transformers_files(tmp, args.hidden, args.pooling,
                                              args.max_seq_length)
    n_params = sum(t.numel() for _, t in state)
    print(f"wrote {out_dir}: {n_params} params, {len(state)} tensors, {args.dtype}, "
          f"{size} bytes, sha256 {sha}, {time.monotonic() - t0:.2f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
