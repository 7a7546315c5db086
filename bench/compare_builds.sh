#!/usr/bin/env bash
# ember-model-bench of two builds side by side, in alternating rounds (A, B, B, A, ...), on the
# same seeded model folder: per cell, each build's median sentences/s and range over the rounds,
# and the median of the per-round ratios B / A. For a change of toolchain or LibTorch (the
# torch 2.11 wheel against Debian's LibTorch 1.13: docs/performance.md "Toolchain").
#
#   bench/compare_builds.sh BUILD_A BUILD_B [--rounds 3] [--json FILE] [-- MODEL_BENCH_ARGS...]
#
# Default cells: threads 1,2 x batches 1,8,32 x lengths 16,64,256, 0.5 s each, fp32, no GEMM
# roofline and no tokenizer cell. The model is BUILD_A's models/minilm-l6-random.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[[ $# -ge 2 ]] || { sed -n 2,9p "$0" >&2; exit 2; }
A=$(cd "$1" && pwd) B=$(cd "$2" && pwd)
shift 2
ROUNDS=3
JSON="$ROOT/bench/results/compare_builds.json"
ARGS=(--threads 1,2 --batches 1,8,32 --lengths 16,64,256 --min-seconds 0.5 --no-gemm --no-e2e)
while [[ $# -gt 0 ]]; do
  case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --json) JSON=$2; shift 2 ;;
    --) shift; ARGS=("$@"); break ;;
    *) echo "compare_builds.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
TMP=$(mktemp -d /tmp/ember-compare-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
MODEL="$A/models/minilm-l6-random"
for r in $(seq 1 "$ROUNDS"); do
  order=(A B); ((r % 2)) || order=(B A)
  for side in "${order[@]}"; do
    build=$A; [[ $side == B ]] && build=$B
    echo "== round $r: $side ($build)" >&2
    "$build/bench/ember-model-bench" --model "$MODEL" "${ARGS[@]}" \
      --json "$TMP/${side}_$r.json" >"$TMP/${side}_$r.log"
  done
done
python3 - "$TMP" "$ROUNDS" "$JSON" "$A" "$B" <<'PY'
import json, statistics, sys
tmp, rounds, out, a_dir, b_dir = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
def cells(side, r):
    d = json.load(open(f"{tmp}/{side}_{r}.json"))
    return {(c["threads"], c["batch"], c["length"]): c["sentences_per_s"] for c in d["cells"]}
A = [cells("A", r) for r in range(1, rounds + 1)]
B = [cells("B", r) for r in range(1, rounds + 1)]
rows = []
print(f"{'thr':>3} {'batch':>5} {'len':>4} {'A sent/s':>10} {'(range)':>17} {'B sent/s':>10} "
      f"{'(range)':>17} {'B/A':>6} {'(range)':>13}")
for key in sorted(A[0]):
    a = [x[key] for x in A]; b = [x[key] for x in B]
    ratios = [y / x for x, y in zip(a, b)]
    rows.append({"threads": key[0], "batch": key[1], "length": key[2],
                 "a_median": statistics.median(a), "a_range": [min(a), max(a)],
                 "b_median": statistics.median(b), "b_range": [min(b), max(b)],
                 "b_over_a_median": statistics.median(ratios), "b_over_a_range": [min(ratios), max(ratios)]})
    print(f"{key[0]:3d} {key[1]:5d} {key[2]:4d} {statistics.median(a):10.1f} "
          f"{min(a):8.1f}-{max(a):<8.1f} {statistics.median(b):10.1f} {min(b):8.1f}-{max(b):<8.1f} "
          f"{statistics.median(ratios):6.3f} {min(ratios):6.3f}-{max(ratios):<6.3f}")
all_r = [r["b_over_a_median"] for r in rows]
print(f"B/A over all cells: median {statistics.median(all_r):.3f}, range {min(all_r):.3f}-{max(all_r):.3f}")
json.dump({"description": "ember-model-bench, two builds in alternating rounds (bench/compare_builds.sh)",
           "a": a_dir, "b": b_dir, "rounds": rounds, "cells": rows}, open(out, "w"), indent=1)
PY
