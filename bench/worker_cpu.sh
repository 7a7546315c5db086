#!/usr/bin/env bash
# Where the worker's own CPU goes per text at the rate a GPU serves, on any machine (issue 24,
# docs/performance.md "The worker's CPU per text, without a GPU"): ember-router and ember-worker
# (--device cpu) serving a simulated model (engine/simulated/simulated_backend.h: MiniLM's real
# tokenizer; a forward that only takes BATCH_US per batch, two batches in flight, as the CUDA
# encoder), driven by ember-loadgen with one text per request on seeded English passages
# (bench/gpu/make_passages.py, as scripts/gpu-bench.sh). Prints texts/s and the worker's and the
# router's CPU per text by thread role (bench/profile/thread_cpu.py): medians and ranges over the
# rounds. Everything shares this machine's cores, so compare figures per text, not rates.
#
#   bench/worker_cpu.sh [--rounds N] [--seconds S] [--clients C] [--window W] [--batch-us U]
#                       [--qps Q] [--trace] [--json FILE]
#   --qps Q: an open loop at Q requests/s (Poisson) instead of the closed loop of C clients, so
#   that variants are compared at one load with cores to spare, as on a GPU host
#   --trace: also where a request's time goes (as scripts/gpu-bench.sh): the client's mean
#   latency, the router's (bench/profile/router_latency.py) and the worker's mean stay (its batch
#   trace, at --log-level debug, bench/gpu/batch_trace.py)
#   EMBER_WORKER_ARGS="--tokenizer-threads 4" bench/worker_cpu.sh   # extra worker flags
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${EMBER_BUILD_DIR:-$ROOT/build}"
ROUNDS=3; SECONDS_=5; CLIENTS=64; WINDOW=4; BATCH_US=2000; QPS=""; TRACE=0
JSON="$ROOT/bench/results/worker_cpu.json"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) ROUNDS="$2"; shift 2 ;;
    --seconds) SECONDS_="$2"; shift 2 ;;
    --clients) CLIENTS="$2"; shift 2 ;;
    --window) WINDOW="$2"; shift 2 ;;
    --batch-us) BATCH_US="$2"; shift 2 ;;
    --qps) QPS="$2"; shift 2 ;;
    --trace) TRACE=1; shift ;;
    --json) JSON="$2"; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "worker_cpu.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
PY="${EMBER_PYTHON:-$ROOT/.venv/bin/python3}"
MODEL="${EMBER_MINILM_DIR:-$BUILD/models/all-minilm-l6-v2}"  # only its tokenizer files are used
[[ -f $MODEL/vocab.txt ]] || { echo "worker_cpu.sh: no vocab.txt in $MODEL" >&2; exit 1; }
source "$ROOT/scripts/lib/cluster.sh"
ember_scratch worker-cpu
"$PY" "$ROOT/bench/gpu/make_passages.py" "$MODEL/vocab.txt" "$TMP/passages.txt" "$TMP/ids.json" \
  > /dev/null
mkdir -p "$TMP/repo/sim/1"
for f in vocab.txt tokenizer.json tokenizer_config.json special_tokens_map.json; do
  [[ -f $MODEL/$f ]] && ln -s "$MODEL/$f" "$TMP/repo/sim/1/"
done
# The batcher as on cuda (its defaults there), not cpu's (32 texts, 512 tokens).
printf 'backend = "simulated"\nbatch-us = %s\nmax-batch-size = 65536\nmax-batch-tokens = 32768\n' \
  "$BATCH_US" > "$TMP/repo/sim/1/config.toml"
metrics=(); level=warn
if [[ $TRACE == 1 ]]; then
  port=$(( 20000 + RANDOM % 20000 )); metrics=(--metrics-listen "127.0.0.1:$port"); level=debug
fi
"$BUILD/router/ember-router" --frontend "ipc://$TMP/f" --backend "ipc://$TMP/b" --log-level warn \
  "${metrics[@]}" > "$TMP/router.log" 2>&1 & PIDS+=($!); router=$!
# shellcheck disable=SC2086
"$BUILD/worker/ember-worker" --router "ipc://$TMP/b" --device cpu --repository "$TMP/repo" \
  --load sim --log-level "$level" ${EMBER_WORKER_ARGS:-} > "$TMP/worker.log" 2>&1 & PIDS+=($!)
worker=$!
ember_wait_for "$BUILD/client/emberctl" "ipc://$TMP/f" "sim( |$)" 1 300 || {
  echo "the worker never served the simulated model:" >&2; tail -5 "$TMP/worker.log" >&2; exit 1; }
results="$TMP/results.jsonl"; : > "$results"
load=(--concurrency "$CLIENTS" --window "$WINDOW")
[[ -n $QPS ]] && load=(--qps "$QPS" --connections 2)
for round in $(seq 1 "$ROUNDS"); do
  "$BUILD/bench/ember-loadgen" --router "ipc://$TMP/f" --model sim --texts-file "$TMP/passages.txt" \
    --texts-per-request 1 "${load[@]}" --warmup-s 1 \
    --duration-s "$SECONDS_" --quiet --json "$TMP/lg.json" > /dev/null 2>&1 & lg=$!
  sleep 1.5  # into the measured window
  for p in worker:$worker router:$router; do
    "$PY" "$ROOT/bench/profile/thread_cpu.py" snap "${p#*:}" "$TMP/${p%%:*}-a.json"
  done
  if [[ $TRACE == 1 ]]; then
    from=$(stat -c %s "$TMP/worker.log")
    "$PY" "$ROOT/bench/profile/router_latency.py" snap "http://127.0.0.1:$port/metrics" "$TMP/m-a.txt"
  fi
  sleep "$(( SECONDS_ - 1 ))"
  for p in worker:$worker router:$router; do
    "$PY" "$ROOT/bench/profile/thread_cpu.py" snap "${p#*:}" "$TMP/${p%%:*}-b.json"
  done
  echo '{}' > "$TMP/split.json"
  if [[ $TRACE == 1 ]]; then
    "$PY" "$ROOT/bench/profile/router_latency.py" snap "http://127.0.0.1:$port/metrics" "$TMP/m-b.txt"
    "$PY" "$ROOT/bench/profile/router_latency.py" report "$TMP/m-a.txt" "$TMP/m-b.txt" sim \
      --json "$TMP/router-ms.json" > /dev/null
    "$PY" "$ROOT/bench/gpu/batch_trace.py" "$TMP/worker.log" "$from" "$(stat -c %s "$TMP/worker.log")" \
      --model sim --json "$TMP/batches.json" > /dev/null
    jq -s '{router_ms: .[0].router_ms, dispatch_ms: .[0].dispatch_ms,
            worker_ms: (.[1].mean_stay_us / 1000)}' "$TMP/router-ms.json" "$TMP/batches.json" \
      > "$TMP/split.json"
  fi
  wait "$lg" || true
  # Texts served between the snapshots, at the measured rate.
  texts=$("$PY" -c "import json,sys; a=json.load(open('$TMP/worker-a.json')); b=json.load(open('$TMP/worker-b.json')); print(int(json.load(open('$TMP/lg.json'))['texts_per_s']*(b['time']-a['time'])))")
  for role in worker router; do
    "$PY" "$ROOT/bench/profile/thread_cpu.py" report "$TMP/$role-a.json" "$TMP/$role-b.json" \
      "$texts" --json "$TMP/$role-cpu.json" > /dev/null
  done
  jq -c --argjson round "$round" --slurpfile w "$TMP/worker-cpu.json" --slurpfile r "$TMP/router-cpu.json" \
    --slurpfile s "$TMP/split.json" \
    '{round: $round, texts_per_s: .texts_per_s, p50_ms: .latency_ms.p50, errors: .error_total,
      worker: $w[0], router: $r[0], split: ($s[0] + {client_ms: .latency_ms.mean})}' \
    "$TMP/lg.json" >> "$results"
done
"$PY" - "$results" "$JSON" "$CLIENTS" "$WINDOW" "$BATCH_US" "$QPS" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
qps = float(sys.argv[6]) if sys.argv[6] else None
def stat(v):
    v = sorted(v)
    return {"median": statistics.median(v), "min": v[0], "max": v[-1]}
out = {"clients": int(sys.argv[3]), "window": int(sys.argv[4]), "qps": qps, "batch_us": int(sys.argv[5]),
       "rounds": rows, "texts_per_s": stat([r["texts_per_s"] for r in rows]),
       "errors": sum(r["errors"] for r in rows), "roles": {}}
q = out["texts_per_s"]
load = f"open loop at {qps:,.0f} requests/s" if qps else \
    f"{out['clients']} clients x {out['window']} in flight"
print(f"simulated model, batch {out['batch_us']} us, {load}, "
      f"1 text/request: {q['median']:,.0f} texts/s ({q['min']:,.0f}-{q['max']:,.0f}), "
      f"{out['errors']} errors")
print(f"{'process':<8} {'thread role':<18} {'threads':>7} {'us/text (median, range)':>26} {'cores':>6}")
for proc in ("worker", "router"):
    names = sorted({row["role"] for r in rows for row in r[proc]["roles"]})
    for name in names + ["all"]:
        if name == "all":
            us = [r[proc]["us_per_text"] for r in rows]; cores = [r[proc]["cpu_s"] / r[proc]["wall_s"] for r in rows]; threads = ""
        else:
            pick = [next((x for x in r[proc]["roles"] if x["role"] == name), None) for r in rows]
            us = [p["us_per_text"] if p else 0.0 for p in pick]; cores = [p["cores"] if p else 0.0 for p in pick]
            threads = max(p["threads"] for p in pick if p)
        s = stat(us)
        if s["max"] < 0.05 and name != "all":
            continue
        out["roles"][f"{proc}/{name}"] = {"us_per_text": s, "cores": statistics.median(cores)}
        print(f"{proc:<8} {name:<18} {threads!s:>7} {s['median']:>10.1f} ({s['min']:.1f}-{s['max']:.1f})"
              f"{'':>6} {statistics.median(cores):>6.2f}")
split = [r["split"] for r in rows if r["split"].get("router_ms") is not None]
if split:  # --trace
    out["split_ms"] = {k: stat([x[k] for x in split]) for k in
                       ("client_ms", "router_ms", "dispatch_ms", "worker_ms")}
    print("where a request's time goes, mean ms (median, range): " + ", ".join(
        f"{k[:-3]} {v['median']:.2f} ({v['min']:.2f}-{v['max']:.2f})" for k, v in out["split_ms"].items()))
json.dump(out, open(sys.argv[2], "w"), indent=2)
PY
