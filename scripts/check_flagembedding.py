#!/usr/bin/env python3
"""Holds ember's bge-m3 outputs (dense, /embed_sparse, /embed_multi_vector) to FlagEmbedding's own
M3 embedder: a check to run by hand (docs/models.md records its last run), not a CI test.

    .venv/bin/python scripts/check_flagembedding.py MODEL_DIR [BUILD_DIR]

MODEL_DIR: a bge-m3-style folder (sparse_linear.pt, colbert_linear.pt), e.g. the test model
build/testdata/families/xlmr-m3-1layer or the real BAAI/bge-m3. FlagEmbedding 1.4.2 is fetched
with `pip download --no-deps` into ~/.cache/ember/flagembedding (it is not in the project's
lock: it requires datasets, peft, accelerate and ir-datasets, which its embedders never call, so
they are stubbed here). The texts are the families test's bge-m3 texts (test_families.m3_texts);
a router, a worker and a gateway from BUILD_DIR (default build/) serve the folder. Prints the
largest differences.
"""
import glob
import importlib.machinery
import json
import os
import subprocess
import sys
import tempfile
import time
import types
import zipfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python", "tests"))
from processes import add_version, post_json, start, start_gateway, stop  # noqa: E402
from test_families import corpus, m3_texts, sparse_difference  # noqa: E402

VERSION = "1.4.2"


def stub_attribute(name):
    """A stubbed module's attribute: a class that does nothing (the embedders never use one)."""
    if name.startswith("__"):
        raise AttributeError(name)
    return type(name, (), {"__init__": lambda *args, **kwargs: None})


def flagembedding():
    cache = os.path.expanduser("~/.cache/ember/flagembedding")
    wheels = glob.glob(os.path.join(cache, "flagembedding-%s-*.whl" % VERSION))
    if not wheels:
        subprocess.check_call([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                               "FlagEmbedding==" + VERSION, "-d", cache])
        wheels = glob.glob(os.path.join(cache, "flagembedding-%s-*.whl" % VERSION))
    source = os.path.join(cache, VERSION)
    if not os.path.isdir(source):
        zipfile.ZipFile(wheels[0]).extractall(source)
    for name in ("datasets", "peft", "accelerate", "ir_datasets"):
        stub = types.ModuleType(name)
        stub.__spec__ = importlib.machinery.ModuleSpec(name, None)
        stub.__getattr__ = stub_attribute
        sys.modules[name] = stub
    sys.path.insert(0, source)
    from FlagEmbedding.inference.embedder.encoder_only.m3 import M3Embedder
    return M3Embedder


def main():
    folder = os.path.abspath(sys.argv[1])
    build = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "build"))
    inputs = m3_texts(corpus())
    want = flagembedding()(folder, use_fp16=False, devices="cpu", normalize_embeddings=True).encode(
        inputs, batch_size=8, max_length=8192, return_dense=True, return_sparse=True,
        return_colbert_vecs=True)

    work = tempfile.mkdtemp(prefix="ember-flagembedding-")
    repository = os.path.join(work, "repository")
    add_version(repository, "m3", folder)
    frontend, backend = "ipc://%s/frontend" % work, "ipc://%s/backend" % work
    processes = [start([os.path.join(build, "router", "ember-router"), "--frontend", frontend,
                        "--backend", backend], os.path.join(work, "router.log")),
                 start([os.path.join(build, "worker", "ember-worker"), "--router", backend,
                        "--id", "w1", "--repository", repository],
                       os.path.join(work, "worker.log"))]
    gateway, port = start_gateway([os.path.join(build, "gateway", "ember-gateway"), "--router",
                                   frontend, "--default-model", "m3"],
                                  os.path.join(work, "gateway.log"))
    processes.append(gateway)
    base = "http://127.0.0.1:%d" % port
    try:
        deadline = time.monotonic() + 600
        while post_json(base, "/embed", {"inputs": "warm-up"}, timeout=60)[0] != 200:
            if time.monotonic() > deadline:
                raise RuntimeError("the model did not load; logs in " + work)
            time.sleep(0.5)

        def get(path):
            out = []
            for i in range(0, len(inputs), 16):
                status, reply, _ = post_json(base, path, {"inputs": inputs[i:i + 16]}, timeout=600)
                if status != 200:
                    raise RuntimeError("%s: %s %s" % (path, status, reply))
                out += reply
            return out

        dense = np.abs(np.asarray(get("/embed")) - want["dense_vecs"]).max()
        sparse, weights = 0.0, 0
        for mine, theirs in zip(get("/embed_sparse"), want["lexical_weights"]):
            weights += len(theirs)
            sparse = max(sparse, sparse_difference(
                mine, {int(k): float(v) for k, v in theirs.items()})[0])
        colbert, vectors = 0.0, 0
        for mine, theirs in zip(get("/embed_multi_vector"), want["colbert_vecs"]):
            mine = np.asarray(mine)
            if mine.shape != theirs.shape:
                raise RuntimeError("ColBERT shapes differ: %s %s" % (mine.shape, theirs.shape))
            colbert = max(colbert, float(np.abs(mine - theirs).max()))
            vectors += len(theirs)
    finally:
        stop(processes, timeout=10)
    print(json.dumps({"texts": len(inputs), "dense_max_diff": float(dense),
                      "sparse_max_diff": sparse, "sparse_weights": weights,
                      "colbert_max_diff": colbert, "colbert_vectors": vectors}))
    return 0 if max(dense, sparse, colbert) < 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
