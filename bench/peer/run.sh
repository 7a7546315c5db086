#!/usr/bin/env bash
# Side-by-side benchmark: ember's EncoderModel::Embed vs ONNX Runtime (onnxruntime from PyPI, in the
# project's Python environment) on the same seeded model and the same seeded ids
# (docs/performance.md "Versus ONNX Runtime").
#
#   bench/peer/run.sh [BUILD_DIR]          (default: build)
#
# 1. takes onnxruntime from the project's Python environment (.venv, scripts/setup.sh; PEER_PY
#    names another);
# 2. uses BUILD_DIR/models/minilm-l6-random (builds the ember_models target if missing) and
#    exports it to ONNX with bench/peer/export_onnx.py (checked against
#    scripts/reference_bert.py first);
# 3. writes the shared inputs once (ember-peer-side --write-inputs) and, ROUNDS times, per thread
#    count, runs ember's side (BUILD_DIR/bench/ember-peer-side) then the peer's (peer_bench.py):
#    alternating, so that a slow spell of the machine (a shared VM's cores vary over minutes)
#    hits both sides alike rather than one whole side;
# 4. checks every cell's embeddings agree (max abs diff < 1e-4), prints the table (best round per
#    side, and the range of the per-round ratios) and writes bench/results/peer.json (OUT_JSON).
#
# Environment: ROUNDS (2), THREADS ("1 2"), BATCHES (1,8,32,128), LENGTHS (16,64,256), MIN_SECONDS (0.5),
# MAX_SECONDS (8: a cell stops after this long once it has 1 timed call), PEER_WORK
# (/tmp/ember-peer-run), OUT_JSON, PRECISION (ember's model precision: fp32, bf16 or int8; the
# peer stays fp32), TOLERANCE (max abs diff for agreement: 1e-4 for fp32, else 5e-3; the table
# also shows each cell's min cosine between the two sides).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
WORK=${PEER_WORK:-/tmp/ember-peer-run}
ROUNDS=${ROUNDS:-2}
THREADS=${THREADS:-"1 2"}
BATCHES=${BATCHES:-1,8,32,128}
LENGTHS=${LENGTHS:-16,64,256}
MIN_SECONDS=${MIN_SECONDS:-0.5}
MAX_SECONDS=${MAX_SECONDS:-8}
OUT_JSON=${OUT_JSON:-$ROOT/bench/results/peer.json}
PRECISION=${PRECISION:-fp32}
if [[ $PRECISION == fp32 ]]; then TOLERANCE=${TOLERANCE:-1e-4}; else TOLERANCE=${TOLERANCE:-5e-3}; fi
MODEL=$BUILD/models/minilm-l6-random
SIDE=$BUILD/bench/ember-peer-side

# 1. the peer (installed, model exported: bench/peer/prepare.sh)
if [[ ! -x $SIDE ]]; then
  echo "run.sh: $SIDE is missing; add the ember-peer-side target (bench/peer/ember_side.cpp," >&2
  echo "        see the header of that file) and build it: cmake --build $BUILD --target ember-peer-side" >&2
  exit 1
fi
PEER_WORK=$WORK
source "$ROOT/bench/peer/prepare.sh"
PY=$PEER_PY
rm -f "$WORK"/*.f32 "$WORK"/ember_t*.json "$WORK"/peer_t*.json "$WORK"/*_r*.json
"$SIDE" --write-inputs "$WORK/inputs.json" --batches "$BATCHES" --lengths "$LENGTHS"

# Load average every 5 s while timing (the benchmark's own threads count towards it).
LOADLOG=$WORK/loadavg.log
: >"$LOADLOG"
(while true; do echo "$(date +%s) $(cat /proc/loadavg)" >>"$LOADLOG"; sleep 5; done) &
SAMPLER=$!
trap 'kill "$SAMPLER" 2>/dev/null || true' EXIT

# 3. both sides, one thread count at a time, never concurrently, ROUNDS times
for r in $(seq 1 "$ROUNDS"); do
  for t in $THREADS; do
    echo "== round $r, threads $t: ember"
    "$SIDE" --model "$MODEL" --inputs "$WORK/inputs.json" --threads "$t" --out-dir "$WORK" \
      --json "$WORK/ember_t${t}_r$r.json" --min-seconds "$MIN_SECONDS" \
      --max-seconds "$MAX_SECONDS" --precision "$PRECISION"
    echo "== round $r, threads $t: onnxruntime $ORT_VERSION"
    "$PY" "$ROOT/bench/peer/peer_bench.py" \
      --model "$PEER_ONNX" --inputs "$WORK/inputs.json" --threads "$t" --out-dir "$WORK" \
      --json "$WORK/peer_t${t}_r$r.json" --min-seconds "$MIN_SECONDS" --max-seconds "$MAX_SECONDS"
  done
done
kill "$SAMPLER" 2>/dev/null || true

# 4. agreement + table + JSON
"$PY" - "$LOADLOG" "$WORK/meta.json" "$ORT_VERSION" <<'PYEOF'
import json, sys, subprocess
samples = [l.split() for l in open(sys.argv[1]) if l.strip()]
one = [float(s[1]) for s in samples]
import torch
json.dump({"onnxruntime": sys.argv[3], "export_torch": torch.__version__,
           "load_average_1min_during_run": {"min": min(one, default=None),
                                            "max": max(one, default=None),
                                            "samples": len(one)},
           "load_samples": [" ".join(s) for s in samples]}, open(sys.argv[2], "w"))
print(f"load average (1 min) during the run: {min(one, default=0):.2f} .. {max(one, default=0):.2f} "
      f"over {len(one)} samples")
PYEOF
THREADS_ARGS=()
for t in $THREADS; do THREADS_ARGS+=("$t"); done
"$PY" "$ROOT/bench/peer/compare.py" "$WORK" "$OUT_JSON" --threads "${THREADS_ARGS[@]}" \
  --rounds "$ROUNDS" --meta "$WORK/meta.json" --tolerance "$TOLERANCE"
