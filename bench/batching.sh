#!/usr/bin/env bash
# Dynamic-batching bench: what the worker's batcher buys under many small
# concurrent requests. One router and one CPU worker serving the MiniLM-L6
# architecture (random weights); 64 closed-loop clients each sending one text
# at a time, for three configurations, side by side in one run:
#
#   batched    the default batcher (max-batch-size 32, max-queue-delay 2 ms)
#   batch1     --max-batch-size 1: every text runs alone
#   offline    the same texts through the same backend in-process, sorted by
#              length and cut into batches under the same limits (32 texts,
#              max-batch-tokens), no sockets (ember-model-bench): the limit
#
#   bench/batching.sh [--build DIR] [--threads N] [--concurrency C]
#                     [--duration S] [--max-batch-tokens N] [--json FILE]
#
# Prints a table and writes JSON (default bench/results/batching.json).
# Every process started here is killed on exit; every wait is bounded.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${EMBER_BUILD_DIR:-$ROOT/build}"
THREADS=2
CONCURRENCY=64
DURATION=15
WARMUP=3
BATCH=32
TOKENS=512
JSON="$ROOT/bench/results/batching.json"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) BUILD="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --concurrency) CONCURRENCY="$2"; shift 2 ;;
    --duration) DURATION="$2"; shift 2 ;;
    --max-batch-tokens) TOKENS="$2"; shift 2 ;;
    --json) JSON="$2"; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "batching.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

ROUTER="$BUILD/router/ember-router"
WORKER="$BUILD/worker/ember-worker"
CTL="$BUILD/client/emberctl"
LOADGEN="$BUILD/bench/ember-loadgen"
MODELBENCH="$BUILD/bench/ember-model-bench"
MODEL="$BUILD/models/minilm-l6-random"
for f in "$ROUTER" "$WORKER" "$CTL" "$LOADGEN" "$MODELBENCH"; do
  [[ -x "$f" ]] || { echo "batching.sh: missing $f (build first)" >&2; exit 2; }
done

source "$ROOT/scripts/lib/cluster.sh"
ember_scratch batching

"$LOADGEN" --dump-texts >"$TMP/texts.txt"

# run_cluster NAME WORKER_ARGS...: one router + one worker, then closed-loop load.
run_cluster() {
  local name="$1"; shift
  local fe="ipc://$TMP/$name-fe" be="ipc://$TMP/$name-be"
  "$ROUTER" --frontend "$fe" --backend "$be" >"$TMP/$name-router.log" 2>&1 &
  local router_pid=$!
  "$WORKER" --router "$be" --id w1 --threads "$THREADS" --model "minilm=$MODEL" "$@" \
    >"$TMP/$name-worker.log" 2>&1 &
  local worker_pid=$!
  PIDS+=("$router_pid" "$worker_pid")
  ember_wait_for "$CTL" "$fe" minilm || { echo "batching.sh: worker did not register ($name)" >&2; cat "$TMP/$name-worker.log" >&2; exit 1; }
  "$LOADGEN" --router "$fe" --model minilm --concurrency "$CONCURRENCY" --duration-s "$DURATION" \
    --warmup-s "$WARMUP" --timeout-ms 30000 --texts-file "$TMP/texts.txt" --quiet \
    --no-router-status --json "$TMP/$name.json"
  kill "$worker_pid" "$router_pid" 2>/dev/null || true
  wait "$worker_pid" "$router_pid" 2>/dev/null || true
}

echo "batching.sh: $CONCURRENCY clients x 1 text, $THREADS threads, ${DURATION}s per run" >&2
run_cluster batched --max-batch-size "$BATCH" --max-batch-tokens "$TOKENS"
run_cluster batch1 --max-batch-size 1
"$MODELBENCH" --model "$MODEL" --threads "$THREADS" --no-gemm --no-bf16 --e2e-only \
  --e2e-batch "$BATCH" --e2e-max-tokens "$TOKENS" --e2e-texts "$TMP/texts.txt" --json "$TMP/offline.json" >/dev/null

/usr/bin/python3 - "$TMP" "$JSON" "$CONCURRENCY" "$THREADS" "$BATCH" <<'PY'
import json, sys, os
tmp, out, conc, threads, batch = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
b = json.load(open(os.path.join(tmp, "batched.json")))
s = json.load(open(os.path.join(tmp, "batch1.json")))
o = next(c for c in json.load(open(os.path.join(tmp, "offline.json")))["cells"]
         if c["kind"] == "e2e")
rows = []
for name, r in (("batched", b), ("batch1", s)):
    lat = r["latency_ms"]
    rows.append({"config": name, "texts_per_s": r["texts_per_s"], "p50_ms": lat["p50"],
                 "p99_ms": lat["p99"], "errors": sum(r["errors"].values()) if r["errors"] else 0,
                 "missing": r["missing"], "batch_sizes": r.get("batch_sizes", {})})
offline = o["sentences_per_s"]
result = {"concurrency": conc, "threads": threads, "max_batch_size": batch,
          "model": "MiniLM-L6 architecture, random weights", "runs": rows,
          "offline_texts_per_s": offline,
          "batched_over_batch1": rows[0]["texts_per_s"] / rows[1]["texts_per_s"],
          "batched_over_offline": rows[0]["texts_per_s"] / offline}
print(f"{'config':10} {'texts/s':>10} {'p50 ms':>9} {'p99 ms':>9} {'errors':>7}")
for r in rows:
    print(f"{r['config']:10} {r['texts_per_s']:10.1f} {r['p50_ms']:9.2f} {r['p99_ms']:9.2f} {r['errors']:7d}")
print(f"{'offline':10} {offline:10.1f}")
print(f"batched / batch1  = {result['batched_over_batch1']:.2f}x")
print(f"batched / offline = {100 * result['batched_over_offline']:.1f}%")
print("batch sizes (batched):", rows[0]["batch_sizes"])
os.makedirs(os.path.dirname(out), exist_ok=True)
json.dump(result, open(out, "w"), indent=2)
PY
