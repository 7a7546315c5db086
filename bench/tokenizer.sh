#!/usr/bin/env bash
# Tokenizers' time per text on one thread, one text at a time (as each of the worker's tokenizer
# threads runs them), ember beside HF tokenizers (the Rust library behind transformers' fast
# tokenizers, bench/tokenizer_hf.py) on the same texts: the seeded English passages of
# scripts/gpu-bench.sh (~54 BERT tokens each). Tokenizers: the real all-MiniLM-L6-v2's
# (bert-base-uncased WordPiece) and those of tests/hf_tokenizer_test (the build's
# testdata/tokenizers: XLM-R Unigram, Qwen's byte-level BPE, a SentencePiece BPE, a GPT-2 style
# byte-level BPE). Alternating rounds; prints median and range per side, writes JSON.
# ember's figure is the median of its loops over the texts (its word caches warm after the
# first); the cold first loop is kept in the JSON.
# With EMBER_TOKENIZER_BENCH_B set, that ember-tokenizer-bench binary (another build) runs too.
#
#   bench/tokenizer.sh [--rounds N] [--json FILE] [--only bert,xlmr,...]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${EMBER_BUILD_DIR:-$ROOT/build}"
ROUNDS=3; JSON="$ROOT/bench/results/tokenizer.json"; ONLY="bert,xlmr,qwen,mistral,bytelevel"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) ROUNDS="$2"; shift 2 ;;
    --json) JSON="$2"; shift 2 ;;
    --only) ONLY="$2"; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "tokenizer.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
PY="${EMBER_PYTHON:-$ROOT/.venv/bin/python3}"
MINILM="${EMBER_MINILM_DIR:-$BUILD/models/all-minilm-l6-v2}"
TESTDATA="$BUILD/testdata/tokenizers"
TMP="$(mktemp -d /tmp/ember-tokenizer-XXXXXX)"; trap 'rm -rf "$TMP"' EXIT
"$PY" "$ROOT/bench/gpu/make_passages.py" "$MINILM/vocab.txt" "$TMP/passages.txt" "$TMP/ids.json" \
  > /dev/null
declare -A DIRS=([bert]="$MINILM" [xlmr]="$TESTDATA/xlmr" [qwen]="$TESTDATA/qwen"
                 [mistral]="$TESTDATA/mistral" [bytelevel]="$TESTDATA/bytelevel")
: > "$TMP/rows.jsonl"
for round in $(seq 1 "$ROUNDS"); do
  for name in ${ONLY//,/ }; do
    dir="${DIRS[$name]:?unknown tokenizer $name}"
    [[ -f $dir/tokenizer.json ]] || { echo "tokenizer.sh: no $dir/tokenizer.json (build first)" >&2; exit 1; }
    declare -A SIDES=([ember]="$BUILD/bench/ember-tokenizer-bench --model $dir --texts $TMP/passages.txt"
                      [hf-tokenizers]="$PY $ROOT/bench/tokenizer_hf.py $dir $TMP/passages.txt")
    [[ -n ${EMBER_TOKENIZER_BENCH_B:-} ]] &&
      SIDES[ember-b]="$EMBER_TOKENIZER_BENCH_B --model $dir --texts $TMP/passages.txt"
    for side in $(printf '%s\n' "${!SIDES[@]}" | sort); do
      # shellcheck disable=SC2086
      ${SIDES[$side]} 2> /dev/null | jq -c --arg side "$side" --arg tokenizer "$name" \
        --argjson round "$round" \
        '{tokenizer: $tokenizer, side: $side, round: $round, tokens,
          us_per_text: .us_per_text.median, cold_us_per_text: .us_per_text.max}' \
        >> "$TMP/rows.jsonl"
    done
    unset SIDES
  done
done
"$PY" - "$TMP/rows.jsonl" "$JSON" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
out = {"rounds": rows, "summary": {}}
print(f"{'tokenizer':<10} {'side':<14} {'us/text (median, range)':>26} {'tokens':>9} {'HF / ember':>11}")
for name in dict.fromkeys(r["tokenizer"] for r in rows):
    out["summary"][name] = {}
    medians = {}
    for side in sorted({r["side"] for r in rows if r["tokenizer"] == name}):
        sel = [r for r in rows if r["tokenizer"] == name and r["side"] == side]
        v = sorted(r["us_per_text"] for r in sel)
        tokens = sorted({r["tokens"] for r in sel})
        medians[side] = statistics.median(v)
        out["summary"][name][side] = {"median": medians[side], "min": v[0], "max": v[-1],
                                      "cold": statistics.median(r["cold_us_per_text"] for r in sel),
                                      "tokens": tokens}
    for side, m in medians.items():
        ratio = medians.get("hf-tokenizers", float("nan")) / m
        s = out["summary"][name][side]
        print(f"{name:<10} {side:<14} {m:>10.2f} ({s['min']:.2f}-{s['max']:.2f}){'':>5} "
              f"{'/'.join(map(str, s['tokens'])):>9} {ratio:>10.1f}x")
json.dump(out, open(sys.argv[2], "w"), indent=2)
PY
