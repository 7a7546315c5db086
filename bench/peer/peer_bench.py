#!/usr/bin/env python3
"""The ONNX Runtime half of the side-by-side benchmark (bench/peer/run.sh, bench/batching.sh,
docs/performance.md "Versus ONNX Runtime"): onnxruntime from PyPI, in the project's Python
environment (.venv, scripts/setup.sh).

    peer_bench.py --model model.onnx --inputs inputs.json --threads N --out-dir DIR \\
        --json OUT.json [--min-seconds 0.5] [--min-iters 3] [--max-seconds 8]

inputs.json is the file ember-peer-side --write-inputs (or ember-model-bench
--e2e-write-batches) wrote, so both sides embed the same ids. One InferenceSession
(intra_op_num_threads = N, inter_op_num_threads = 1, sequential, all graph optimisations, CPU)
runs every batch x length cell as ember-peer-side does: 1 warm-up call (its output goes to
OUT_DIR/peer_t{N}_b{B}_l{L}.f32 for the agreement check), then timed calls until at least
--min-iters and --min-seconds (or --max-seconds with at least 1 call). The input arrays are
built once per cell, outside the timed calls, so the timing is ONNX Runtime's own C++ run with
Python's call overhead (a few microseconds) on top.
"""

import argparse
import json
import os
import time

import numpy as np
import onnxruntime as ort


def load_average():
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--inputs", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--json")
    ap.add_argument("--min-seconds", type=float, default=0.5)
    ap.add_argument("--min-iters", type=int, default=3)
    ap.add_argument("--max-seconds", type=float, default=8)
    args = ap.parse_args()

    with open(args.inputs) as f:
        shared = json.load(f)
    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(args.model, options, providers=["CPUExecutionProvider"])
    print(f"peer: onnxruntime {ort.__version__}, threads {args.threads}, "
          f"load average {load_average()}", flush=True)

    results = []
    for cell in shared["cells"]:
        b, n = cell["batch"], cell["length"]
        ids = np.zeros((b, n), dtype=np.int64)
        mask = np.zeros((b, n), dtype=np.int64)
        for i, seq in enumerate(cell["ids"]):
            ids[i, :len(seq)] = seq
            mask[i, :len(seq)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        w0 = time.perf_counter()
        out = session.run(["embeddings"], feeds)[0]  # warm-up; its output is checked
        warm = time.perf_counter() - w0
        path = os.path.join(args.out_dir, f"peer_t{args.threads}_b{b}_l{n}.f32")
        out.astype("<f4").tofile(path)
        times = []
        start = time.perf_counter()
        while True:
            t0 = time.perf_counter()
            session.run(["embeddings"], feeds)
            t1 = time.perf_counter()
            times.append(t1 - t0)
            if len(times) >= args.min_iters and t1 - start >= args.min_seconds:
                break
            if t1 - start >= args.max_seconds:
                break
        mean = sum(times) / len(times)
        sps = b / mean
        print(f"peer  t{args.threads} b{b:3d} l{n:3d}: {sps:9.1f} sent/s  "
              f"(mean {mean * 1e3:.1f} ms, min {min(times) * 1e3:.1f} ms, {len(times)} calls, "
              f"warm-up {warm * 1e3:.1f} ms)", flush=True)
        results.append({"threads": args.threads, "batch": b, "length": n,
                        "sentences_per_s": sps, "mean_s": mean, "min_s": min(times),
                        "calls": len(times), "times_s": times, "warmup_s": warm,
                        "output": path})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"side": "peer", "runtime": "onnxruntime (Python)",
                       "version": ort.__version__, "threads": args.threads,
                       "load_average_end": load_average(), "cells": results}, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
