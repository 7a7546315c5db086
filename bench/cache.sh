#!/usr/bin/env bash
# Embedding-cache bench: what the router's cache (docs/caching.md) buys at
# 0, 50, 90 and 100 % hit rates, next to the same cluster without a cache.
# One router and one CPU worker serving the MiniLM-L6 architecture (random
# weights); closed-loop clients each sending one text at a time. A "hit"
# text is one of ember-loadgen's built-in texts (cached during warmup); a
# miss is such a text with a unique suffix (never seen before).
#
#   nocache    no cache, 90 % repeated texts (what the cache saves on)
#   hit0/50/90 cache on (256 MiB), 0 / 50 / 90 % repeated texts
#   hit100     every text cached: the router answers alone
#
# With --redis, two rows instead (JSON default bench/results/cache-redis.json),
# both with every text cached, against a redis-server on a unix socket:
#   hit100     in-memory hit (Redis tier on, but the LRU answers)
#   redis100   the LRU holds nothing (cache-bytes 1): every text is a Redis hit
#
#   bench/cache.sh [--build DIR] [--threads N] [--concurrency C]
#                  [--duration S] [--json FILE] [--redis]
#
# Prints a table and writes JSON (default bench/results/cache.json).
# Every process started here is killed on exit; every wait is bounded.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${EMBER_BUILD_DIR:-$ROOT/build}"
THREADS=2
CONCURRENCY=16
DURATION=8
WARMUP=3
JSON=""
REDIS=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) BUILD="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --concurrency) CONCURRENCY="$2"; shift 2 ;;
    --duration) DURATION="$2"; shift 2 ;;
    --json) JSON="$2"; shift 2 ;;
    --redis) REDIS=1; shift ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "cache.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

if [[ -z "$JSON" ]]; then
  JSON="$ROOT/bench/results/cache.json"
  [[ $REDIS == 1 ]] && JSON="$ROOT/bench/results/cache-redis.json"
fi
ROUTER="$BUILD/router/ember-router"
WORKER="$BUILD/worker/ember-worker"
CTL="$BUILD/client/emberctl"
LOADGEN="$BUILD/bench/ember-loadgen"
MODEL="$BUILD/models/minilm-l6-random"
for f in "$ROUTER" "$WORKER" "$CTL" "$LOADGEN"; do
  [[ -x "$f" ]] || { echo "cache.sh: missing $f (build first)" >&2; exit 2; }
done

source "$ROOT/scripts/lib/cluster.sh"
ember_scratch cache

# run NAME CACHE_BYTES HIT_RATE [ROUTER ARGS...]: one router + one worker,
# then closed-loop load.
run() {
  local name="$1" bytes="$2" rate="$3"
  shift 3
  local fe="ipc://$TMP/$name-fe" be="ipc://$TMP/$name-be"
  "$ROUTER" --frontend "$fe" --backend "$be" --cache-bytes "$bytes" "$@" \
    >"$TMP/$name-router.log" 2>&1 &
  local router_pid=$!
  "$WORKER" --router "$be" --id w1 --threads "$THREADS" --model "minilm=$MODEL" \
    >"$TMP/$name-worker.log" 2>&1 &
  local worker_pid=$!
  PIDS+=("$router_pid" "$worker_pid")
  ember_wait_for "$CTL" "$fe" minilm || { echo "cache.sh: worker did not register ($name)" >&2; cat "$TMP/$name-worker.log" >&2; exit 1; }
  "$LOADGEN" --router "$fe" --model minilm --concurrency "$CONCURRENCY" --duration-s "$DURATION" \
    --warmup-s "$WARMUP" --timeout-ms 30000 --hit-rate "$rate" --quiet \
    --json "$TMP/$name.json"
  kill "$worker_pid" "$router_pid" 2>/dev/null || true
  wait "$worker_pid" "$router_pid" 2>/dev/null || true
}

echo "cache.sh: $CONCURRENCY clients x 1 text, $THREADS worker threads, ${DURATION}s per run" >&2
if [[ $REDIS == 1 ]]; then
  command -v redis-server >/dev/null || { echo "cache.sh: redis-server missing (scripts/setup.sh)" >&2; exit 2; }
  redis-server --port 0 --unixsocket "$TMP/redis.sock" --save "" --appendonly no --dir "$TMP" \
    >"$TMP/redis.log" 2>&1 &
  PIDS+=("$!")
  for _ in $(seq 1 100); do [[ -S "$TMP/redis.sock" ]] && break; sleep 0.05; done
  [[ -S "$TMP/redis.sock" ]] || { echo "cache.sh: redis-server did not start" >&2; exit 1; }
  run hit100 268435456 1 --cache-redis "unix:$TMP/redis.sock"
  run redis100 1 1 --cache-redis "unix:$TMP/redis.sock"
  ROWS='(("hit100", "memory", 1.0), ("redis100", "redis", 1.0))'
else
  run nocache 0 0.9
  run hit0 268435456 0
  run hit50 268435456 0.5
  run hit90 268435456 0.9
  run hit100 268435456 1
  ROWS='(("nocache", False, 0.9), ("hit0", True, 0.0), ("hit50", True, 0.5), ("hit90", True, 0.9), ("hit100", True, 1.0))'
fi

/usr/bin/python3 - "$TMP" "$JSON" "$CONCURRENCY" "$THREADS" "$DURATION" "$ROWS" <<'PY'
import ast, json, sys, os
tmp, out, conc, threads, duration = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
rows = []
for name, cache, rate in ast.literal_eval(sys.argv[6]):
    r = json.load(open(os.path.join(tmp, name + ".json")))
    lat = r["latency_ms"]
    rows.append({"config": name, "cache": cache, "hit_rate": rate, "texts_per_s": r["texts_per_s"],
                 "p50_ms": lat["p50"], "p99_ms": lat["p99"],
                 "errors": r["error_total"], "missing": r["missing"]})
result = {"concurrency": conc, "worker_threads": threads, "duration_s": duration,
          "model": "MiniLM-L6 architecture, random weights, 1 CPU worker",
          "cache_bytes": 268435456, "runs": rows}
if any(r["cache"] == "redis" for r in rows):
    result["cache_bytes"] = "268435456 (hit100), 1 (redis100: the LRU holds nothing)"
    result["redis"] = "redis-server on a unix socket, same host, no persistence"

print(f"{'config':8} {'cache':>6} {'hit%':>5} {'texts/s':>10} {'p50 ms':>9} {'p99 ms':>9} {'errors':>7}")
for r in rows:
    print(f"{r['config']:8} {r['cache'] if isinstance(r['cache'], str) else 'on' if r['cache'] else 'off':>6} {100*r['hit_rate']:5.0f} "
          f"{r['texts_per_s']:10.1f} {r['p50_ms']:9.3f} {r['p99_ms']:9.3f} {r['errors']:7d}")
os.makedirs(os.path.dirname(out), exist_ok=True)
json.dump(result, open(out, "w"), indent=2)
PY
