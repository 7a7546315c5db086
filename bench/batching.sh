#!/usr/bin/env bash
# Dynamic-batching bench, and the served path against the model offline (docs/batching.md,
# docs/performance.md "Served vs offline"). One router and one CPU worker serving the MiniLM-L6
# architecture (random weights); 64 closed-loop clients each sending one text at a time:
#
#   batched    the default batcher (max-batch-size 32, max-queue-delay 2 ms)
#   batch1     --max-batch-size 1: every text runs alone (round 1 only)
#   offline    the same texts through the same backend in-process, sorted by length and cut
#              into batches under the same limits (32 texts, max-batch-tokens counted as the
#              worker counts them), no sockets (ember-model-bench): the limit; "ids only" is
#              the same without the tokenizer
#   onnxrt     ONNX Runtime (onnxruntime from PyPI, bench/peer/) on the same model exported to
#              ONNX, the same batches of ids (padded), the same thread count: the peer
#
# ROUNDS rounds, alternating whether the served or the offline side goes first; the ratios
# are reported per round, with their median and range. Core split: by default none is pinned
# (the worker and the offline/peer runs use THREADS compute threads; router and load
# generator share the same cores). --split gives the model the last core (worker, offline and
# peer pinned there, 1 thread) and router + load generator the others, as one would run a
# worker beside its router on a small box.
#
#   bench/batching.sh [--build DIR] [--threads N] [--concurrency C] [--rounds R] [--split]
#                     [--duration S] [--max-batch-tokens N] [--no-peer] [--json FILE]
#
# Prints a table and writes JSON (default bench/results/batching.json).
# Every process started here is killed on exit; every wait is bounded.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${EMBER_BUILD_DIR:-$ROOT/build}"
THREADS=2
CONCURRENCY=64
ROUNDS=3
DURATION=10
PEER=1
SPLIT=""
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
    --rounds) ROUNDS="$2"; shift 2 ;;
    --no-peer) PEER=""; shift ;;
    --split) SPLIT=1; shift ;;
    --max-batch-tokens) TOKENS="$2"; shift 2 ;;
    --json) JSON="$2"; shift 2 ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
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

COMPUTE=() SERVING=()
if [[ -n $SPLIT ]]; then
  last=$(( $(nproc) - 1 ))
  ((last > 0)) || { echo "batching.sh: --split needs 2 cores or more" >&2; exit 2; }
  THREADS=1 COMPUTE=(taskset -c "$last") SERVING=(taskset -c "0-$((last - 1))")
fi
source "$ROOT/scripts/lib/cluster.sh"
ember_scratch batching

"$LOADGEN" --dump-texts >"$TMP/texts.txt"

# run_cluster NAME WORKER_ARGS...: one router + one worker, then closed-loop load.
run_cluster() {
  local name="$1"; shift
  local fe="ipc://$TMP/$name-fe" be="ipc://$TMP/$name-be"
  "${SERVING[@]}" "$ROUTER" --frontend "$fe" --backend "$be" >"$TMP/$name-router.log" 2>&1 &
  local router_pid=$!
  "${COMPUTE[@]}" "$WORKER" --router "$be" --id w1 --threads "$THREADS" --model "minilm=$MODEL" "$@" \
    >"$TMP/$name-worker.log" 2>&1 &
  local worker_pid=$!
  PIDS+=("$router_pid" "$worker_pid")
  ember_wait_for "$CTL" "$fe" minilm || { echo "batching.sh: worker did not register ($name)" >&2; cat "$TMP/$name-worker.log" >&2; exit 1; }
  "${SERVING[@]}" "$LOADGEN" --router "$fe" --model minilm --concurrency "$CONCURRENCY" --duration-s "$DURATION" \
    --warmup-s "$WARMUP" --timeout-ms 30000 --texts-file "$TMP/texts.txt" --quiet \
    --no-router-status --json "$TMP/$name.json"
  kill "$worker_pid" "$router_pid" 2>/dev/null || true
  wait "$worker_pid" "$router_pid" 2>/dev/null || true
}

# run_offline NAME [--e2e-write-batches FILE]
run_offline() {
  local name="$1"; shift
  "${COMPUTE[@]}" "$MODELBENCH" --model "$MODEL" --threads "$THREADS" --no-gemm --no-bf16 --e2e-only \
    --e2e-batch "$BATCH" --e2e-max-tokens "$TOKENS" --e2e-texts "$TMP/texts.txt" \
    --json "$TMP/$name.json" "$@" >/dev/null
}
# run_peer NAME: ONNX Runtime over the offline batches.
run_peer() {
  "${COMPUTE[@]}" "$PEER_PY" "$ROOT/bench/peer/peer_bench.py" --model "$PEER_ONNX" \
    --inputs "$TMP/batches.json" --threads "$THREADS" --out-dir "$TMP/peer" \
    --json "$TMP/$1.json" --min-seconds 0.5 --min-iters 3 >/dev/null
}

echo "batching.sh: $CONCURRENCY clients x 1 text, $THREADS threads, ${DURATION}s per run," \
     "$ROUNDS rounds" >&2
run_offline offline-0 --e2e-write-batches "$TMP/batches.json"  # the batches, and a warm-up
if [[ -n $PEER ]]; then
  mkdir -p "$TMP/peer"
  # Exports the model once with the project's Python (onnxruntime, torch); a machine without
  # that environment gets the rest of the bench.
  if ! (source "$ROOT/bench/peer/prepare.sh") >"$TMP/peer-prepare.log" 2>&1; then
    echo "batching.sh: the ONNX Runtime peer could not be prepared (see below); going on without" >&2
    tail -5 "$TMP/peer-prepare.log" >&2
    PEER=""
  else
    source "$ROOT/bench/peer/prepare.sh" 2>/dev/null
  fi
fi
run_cluster batch1 --max-batch-size 1
for round in $(seq 1 "$ROUNDS"); do
  if ((round % 2)); then
    run_cluster "batched-$round" --max-batch-size "$BATCH" --max-batch-tokens "$TOKENS"
    run_offline "offline-$round"
    [[ -z $PEER ]] || run_peer "onnxrt-$round"
  else
    [[ -z $PEER ]] || run_peer "onnxrt-$round"
    run_offline "offline-$round"
    run_cluster "batched-$round" --max-batch-size "$BATCH" --max-batch-tokens "$TOKENS"
  fi
done

/usr/bin/python3 - "$TMP" "$JSON" "$CONCURRENCY" "$THREADS" "$BATCH" "$ROUNDS" "$TOKENS" \
  "${SPLIT:-0}" <<'PY'
import json, os, sys
tmp, out = sys.argv[1], sys.argv[2]
conc, threads, batch, rounds, tokens, split = map(int, sys.argv[3:9])
load = lambda name: json.load(open(os.path.join(tmp, name + ".json")))
def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2
def served(r):
    lat = r["latency_ms"]
    return {"texts_per_s": r["texts_per_s"], "p50_ms": lat["p50"], "p99_ms": lat["p99"],
            "errors": sum(r["errors"].values()) if r["errors"] else 0, "missing": r["missing"],
            "batch_sizes": r.get("batch_sizes", {})}
def offline(name):
    cells = {c["kind"]: c["sentences_per_s"] for c in load(name)["cells"]}
    return cells["e2e"], cells["idsonly"]
def peer(name):
    path = os.path.join(tmp, name + ".json")
    if not os.path.exists(path):
        return None
    cells = json.load(open(path))["cells"]
    return sum(c["batch"] for c in cells) / sum(c["mean_s"] for c in cells)
batch1 = served(load("batch1"))
rows = []
for n in range(1, rounds + 1):
    b = served(load(f"batched-{n}"))
    e2e, ids = offline(f"offline-{n}")
    ort = peer(f"onnxrt-{n}")
    rows.append({"round": n, "batched": b, "offline_texts_per_s": e2e,
                 "offline_ids_only_texts_per_s": ids, "onnxrt_texts_per_s": ort,
                 "served_over_offline": b["texts_per_s"] / e2e,
                 "served_over_onnxrt": b["texts_per_s"] / ort if ort else None,
                 "offline_ids_only_over_onnxrt": ids / ort if ort else None})
def summary(key):
    xs = [r[key] for r in rows if r[key] is not None]
    return {"median": median(xs), "min": min(xs), "max": max(xs)} if xs else None
batches = json.load(open(os.path.join(tmp, "batches.json")))["cells"]
result = {"concurrency": conc, "threads": threads, "max_batch_size": batch,
          "max_batch_tokens": tokens, "rounds": rows, "batch1": batch1,
          "model": "MiniLM-L6 architecture, random weights",
          "core_split": ("worker, offline and peer pinned to the last core (1 thread); router "
                         "and load generator to the others") if split else
                        ("none pinned: worker and offline/peer runs use the same compute "
                         "threads; router and load generator share the cores"),
          "offline_batches": [c["batch"] for c in batches],
          "served_over_offline": summary("served_over_offline"),
          "served_over_onnxrt": summary("served_over_onnxrt"),
          "offline_ids_only_over_onnxrt": summary("offline_ids_only_over_onnxrt"),
          "batched_over_batch1": median([r["batched"]["texts_per_s"] for r in rows]) /
                                 batch1["texts_per_s"]}
print(f"{'round':5} {'served':>9} {'p50 ms':>8} {'p99 ms':>8} {'err':>4} {'offline':>9} "
      f"{'ids only':>9} {'onnxrt':>9} {'srv/off':>8} {'srv/ort':>8}")
fmt = lambda x, f: format(x, f) if x is not None else "-"
for r in rows:
    b = r["batched"]
    print(f"{r['round']:<5} {b['texts_per_s']:9.1f} {b['p50_ms']:8.1f} {b['p99_ms']:8.1f} "
          f"{b['errors'] + b['missing']:4d} {r['offline_texts_per_s']:9.1f} "
          f"{r['offline_ids_only_texts_per_s']:9.1f} {fmt(r['onnxrt_texts_per_s'], '9.1f'):>9} "
          f"{r['served_over_offline']:8.3f} {fmt(r['served_over_onnxrt'], '8.3f'):>8}")
print(f"batch1 (round 1 only): {batch1['texts_per_s']:.1f} texts/s, p50 {batch1['p50_ms']:.1f} ms")
for key, what in (("served_over_offline", "served / offline"),
                  ("served_over_onnxrt", "served / ONNX Runtime offline"),
                  ("offline_ids_only_over_onnxrt", "offline ids only / ONNX Runtime")):
    s = result[key]
    if s:
        print(f"{what}: median {s['median']:.3f}, range {s['min']:.3f} - {s['max']:.3f}")
print(f"batched / batch1 = {result['batched_over_batch1']:.2f}x; offline batches: "
      f"{result['offline_batches']}")
os.makedirs(os.path.dirname(out), exist_ok=True)
json.dump(result, open(out, "w"), indent=2)
PY
