#!/usr/bin/env bash
# The WordPiece tokenizer's time per text on one thread, one text at a time (as each of the
# worker's tokenizer threads runs it), beside HF tokenizers (the Rust tokenizer behind
# transformers' fast BERT tokenizers, bench/tokenizer_hf.py) on the same texts: the seeded
# English passages of scripts/gpu-bench.sh (~54 tokens) tokenized with the real
# all-MiniLM-L6-v2's tokenizer. Alternating rounds; prints median and range, writes JSON.
# With EMBER_TOKENIZER_BENCH_B set, that ember-tokenizer-bench binary (another build) runs too.
#
#   bench/tokenizer.sh [--rounds N] [--json FILE]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${EMBER_BUILD_DIR:-$ROOT/build}"
ROUNDS=3; JSON="$ROOT/bench/results/tokenizer.json"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) ROUNDS="$2"; shift 2 ;;
    --json) JSON="$2"; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "tokenizer.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
PY="${EMBER_PYTHON:-$ROOT/.venv/bin/python3}"
MODEL="${EMBER_MINILM_DIR:-$BUILD/models/all-minilm-l6-v2}"
TMP="$(mktemp -d /tmp/ember-tokenizer-XXXXXX)"; trap 'rm -rf "$TMP"' EXIT
"$PY" "$ROOT/bench/gpu/make_passages.py" "$MODEL/vocab.txt" "$TMP/passages.txt" "$TMP/ids.json" \
  > /dev/null
declare -A SIDES=([ember]="$BUILD/bench/ember-tokenizer-bench --model $MODEL --texts $TMP/passages.txt"
                  [hf-tokenizers]="$PY $ROOT/bench/tokenizer_hf.py $MODEL $TMP/passages.txt")
[[ -n ${EMBER_TOKENIZER_BENCH_B:-} ]] &&
  SIDES[ember-b]="$EMBER_TOKENIZER_BENCH_B --model $MODEL --texts $TMP/passages.txt"
: > "$TMP/rows.jsonl"
for round in $(seq 1 "$ROUNDS"); do
  for side in $(printf '%s\n' "${!SIDES[@]}" | sort); do
    # shellcheck disable=SC2086
    ${SIDES[$side]} | jq -c --arg side "$side" --argjson round "$round" \
      '{side: $side, round: $round, tokens, us_per_text: .us_per_text.median}' >> "$TMP/rows.jsonl"
  done
done
"$PY" - "$TMP/rows.jsonl" "$JSON" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
out = {"rounds": rows, "summary": {}}
print(f"{'tokenizer':<14} {'us/text (median, range)':>26} {'tokens':>8}")
for side in sorted({r["side"] for r in rows}):
    v = sorted(r["us_per_text"] for r in rows if r["side"] == side)
    tokens = {r["tokens"] for r in rows if r["side"] == side}
    out["summary"][side] = {"median": statistics.median(v), "min": v[0], "max": v[-1],
                            "tokens": sorted(tokens)}
    print(f"{side:<14} {statistics.median(v):>10.2f} ({v[0]:.2f}-{v[-1]:.2f}){'':>5} "
          f"{'/'.join(map(str, sorted(tokens))):>8}")
json.dump(out, open(sys.argv[2], "w"), indent=2)
PY
