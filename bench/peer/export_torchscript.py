#!/usr/bin/env python3
"""Export an ember BERT model folder as a TorchScript module for ember's TorchScript backend.

    export_torchscript.py MODEL_DIR OUT_DIR

Traces (torch.jit.trace; sizes stay dynamic, checked on another shape) the same HF-layout module export_onnx.py builds and checks (pooling
and L2 normalisation inside), saves it as OUT_DIR/model.pt with MODEL_DIR's vocab.txt beside it,
so that `ember-worker --model NAME=OUT_DIR/model.pt` and `ember-peer-side --torchscript` serve
the same model through the TorchScript backend (docs/performance.md "TorchScript modules").
Use the project's Python (.venv/bin/python3, scripts/setup.sh).
"""

import argparse
import os
import shutil
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_onnx  # noqa: E402  (load, check)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model_dir")
    ap.add_argument("out_dir")
    args = ap.parse_args(argv)
    torch.set_grad_enabled(False)
    enc, _ = export_onnx.load(args.model_dir)
    export_onnx.check(enc, args.model_dir)
    ids = torch.full((2, 8), 1000, dtype=torch.long)
    scripted = torch.jit.trace(enc, (ids, torch.ones(2, 8, dtype=torch.long)))
    # Another batch and length than the example, with padding: the trace must not have frozen
    # either.
    gen = torch.Generator().manual_seed(3)
    ids = torch.randint(1000, 30000, (3, 21), generator=gen)
    mask = torch.ones(3, 21, dtype=torch.long)
    mask[1, 9:] = 0
    diff = float((scripted(ids, mask) - enc(ids, mask)).abs().max())
    print(f"traced vs eager on 3 x 21 with padding: max abs diff {diff:.3g}")
    if not diff < 1e-6:
        raise SystemExit(f"export_torchscript.py: trace disagrees with the module ({diff:.3g})")
    os.makedirs(args.out_dir, exist_ok=True)
    out = os.path.join(args.out_dir, "model.pt")
    scripted.save(out + ".tmp")
    os.replace(out + ".tmp", out)
    shutil.copy(os.path.join(args.model_dir, "vocab.txt"), os.path.join(args.out_dir, "vocab.txt"))
    print(f"wrote {out} ({os.path.getsize(out)} bytes) and vocab.txt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
