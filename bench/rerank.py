#!/usr/bin/env python3
"""Reranking throughput: ember serving a cross-encoder (router, worker, gateway; TEI's /rerank
over HTTP) against sentence-transformers' CrossEncoder.predict on the same pairs, in
alternating rounds on this machine.

  bench/rerank.py BUILD_DIR [--rounds 3] [--queries 24] [--texts 32] [--clients 4]
                  [--threads N] [--json OUT]

The model is BUILD_DIR/models/minilm-cross-encoder-random (cross-encoder/ms-marco-MiniLM-L6-v2's
shape, random weights); the passages are bench/gpu/make_passages.py's seeded English passages
(mean ~54 tokens), each query one of them cut to 8 words. A round of ember sends every query
with its `--texts` passages as one /rerank request, `--clients` requests in flight. A round of
the peer runs CrossEncoder.predict over the same pairs (batch size = --texts), with torch on
--threads threads, as the worker has. Prints pairs/s per round, then a table of medians and
ranges, and writes JSON. Absolute figures mean little on a shared 2-core VM: the ratio is the
point.
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python", "tests"))
from processes import start, start_gateway, stop  # noqa: E402


def passages(build, count):
    out = tempfile.mkdtemp(prefix="ember-rerank-bench-")
    txt = os.path.join(out, "passages.txt")
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gpu", "make_passages.py"),
                    os.path.join(build, "models", "minilm-cross-encoder-random", "vocab.txt"),
                    txt, os.path.join(out, "ids.json"), "--count", str(count)],
                   check=True, capture_output=True)
    with open(txt, encoding="utf-8") as f:
        texts = [line.rstrip("\n") for line in f]
    shutil.rmtree(out, ignore_errors=True)
    return texts


def rerank_round(base, requests, clients):
    def post(body):
        request = urllib.request.Request(base + "/rerank", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as response:
            return len(json.loads(response.read()))
    start_s = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        pairs = sum(pool.map(post, requests))
    return pairs / (time.perf_counter() - start_s)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--queries", type=int, default=24)
    ap.add_argument("--texts", type=int, default=32)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--json")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    model = os.path.join(build, "models", "minilm-cross-encoder-random")
    texts = passages(build, args.queries * (args.texts + 1))
    queries = [" ".join(t.split()[:8]) for t in texts[:args.queries]]
    rest = texts[args.queries:]
    requests = [{"query": q, "texts": rest[i * args.texts:(i + 1) * args.texts]}
                for i, q in enumerate(queries)]
    pairs = [(r["query"], t) for r in requests for t in r["texts"]]

    import torch
    from sentence_transformers import CrossEncoder
    torch.set_num_threads(args.threads)
    peer = CrossEncoder(model, device="cpu")

    work = tempfile.mkdtemp(prefix="ember-rerank-")
    frontend, backend = "ipc://" + work + "/f", "ipc://" + work + "/b"
    processes = [
        start([os.path.join(build, "router", "ember-router"), "--frontend", frontend,
               "--backend", backend], os.path.join(work, "router.log")),
        start([os.path.join(build, "worker", "ember-worker"), "--router", backend, "--id", "w1",
               "--threads", str(args.threads), "--model", "reranker=" + model],
              os.path.join(work, "worker.log")),
    ]
    try:
        gateway, port = start_gateway([os.path.join(build, "gateway", "ember-gateway"),
                                       "--router", frontend, "--default-model", "reranker"],
                                      os.path.join(work, "gateway.log"))
        processes.append(gateway)
        base = "http://127.0.0.1:%d" % port
        deadline = time.monotonic() + 120
        while True:  # the worker loads and warms the model
            try:
                rerank_round(base, requests[:1], 1)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        peer.predict(pairs[:args.texts], batch_size=args.texts)  # warm-up
        results = {"ember": [], "sentence-transformers": []}
        for r in range(args.rounds):
            results["ember"].append(rerank_round(base, requests, args.clients))
            t0 = time.perf_counter()
            peer.predict(pairs, batch_size=args.texts)
            results["sentence-transformers"].append(len(pairs) / (time.perf_counter() - t0))
            print("round %d: ember %.0f pairs/s, sentence-transformers %.0f pairs/s"
                  % (r + 1, results["ember"][-1], results["sentence-transformers"][-1]))
    finally:
        stop(processes)
        shutil.rmtree(work, ignore_errors=True)

    print("\n%-22s %12s %22s" % ("reranking (CPU)", "median", "range (pairs/s)"))
    for name, values in results.items():
        print("%-22s %12.0f %10.0f - %-10.0f" % (name, statistics.median(values), min(values),
                                                 max(values)))
    ratio = statistics.median(results["ember"]) / statistics.median(
        results["sentence-transformers"])
    print("ember / sentence-transformers: %.2f (medians; %d pairs per round, %d per request, "
          "%d clients, %d threads)" % (ratio, len(pairs), args.texts, args.clients, args.threads))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"pairs_per_round": len(pairs), "texts_per_request": args.texts,
                       "clients": args.clients, "threads": args.threads,
                       "pairs_per_s": results, "ratio_of_medians": ratio}, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    sys.exit(main())
