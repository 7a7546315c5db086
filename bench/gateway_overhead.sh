#!/usr/bin/env bash
# What the HTTP gateway itself costs per request (docs/performance.md "The gateway's own
# cost"): ember-gateway in front of ember-router and an ember-null-worker that answers at once
# with no model, driven by ember-loadgen --http (OpenAI API, base64, CLIENTS keep-alive
# connections, one request in flight each); the gateway's CPU per request by thread role
# (bench/profile/thread_cpu.py) over the measured window. With EMBER_GATEWAY_B set, that
# gateway binary (another build) runs too, in alternating rounds.
#
#   bench/gateway_overhead.sh [--rounds N] [--seconds S] [--clients C] [--json FILE]
#   EMBER_GATEWAY_B=/path/to/other/ember-gateway bench/gateway_overhead.sh
#
# Prints a table (median and range over the rounds) and writes JSON (default
# bench/results/gateway_overhead.json). Every process started here is stopped on exit.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${EMBER_BUILD_DIR:-$ROOT/build}"
ROUNDS=3; SECONDS_=5; CLIENTS=16; JSON="$ROOT/bench/results/gateway_overhead.json"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) ROUNDS="$2"; shift 2 ;;
    --seconds) SECONDS_="$2"; shift 2 ;;
    --clients) CLIENTS="$2"; shift 2 ;;
    --json) JSON="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "gateway_overhead.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
PY="${EMBER_PYTHON:-$ROOT/.venv/bin/python3}"; [[ -x $PY ]] || PY=python3
declare -A GATEWAYS=([a]="$BUILD/gateway/ember-gateway")
[[ -n ${EMBER_GATEWAY_B:-} ]] && GATEWAYS[b]="$EMBER_GATEWAY_B"
source "$ROOT/scripts/lib/cluster.sh"
ember_scratch gateway-overhead
"$BUILD/router/ember-router" --frontend "ipc://$TMP/f" --backend "ipc://$TMP/b" --log-level warn \
  > "$TMP/router.log" 2>&1 & PIDS+=($!)
"$BUILD/bench/ember-null-worker" --router "ipc://$TMP/b" --model null > "$TMP/null.log" 2>&1 &
PIDS+=($!)
ember_wait_for "$BUILD/client/emberctl" "ipc://$TMP/f" null || { echo "router never listed the null worker" >&2; exit 1; }
results="$TMP/results.jsonl"; : > "$results"
for round in $(seq 1 "$ROUNDS"); do
  for side in $(printf '%s\n' "${!GATEWAYS[@]}" | sort); do
    port=$(( 20000 + RANDOM % 20000 ))
    "${GATEWAYS[$side]}" --router "ipc://$TMP/f" --listen "127.0.0.1:$port" --log-level warn \
      > "$TMP/gateway-$side.log" 2>&1 & gw=$!
    for _ in $(seq 1 100); do  # bounded: until it answers /health
      "$PY" -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$port/health', timeout=1)" \
        2>/dev/null && break
      sleep 0.1
    done
    "$BUILD/bench/ember-loadgen" --http "http://127.0.0.1:$port" --model null --concurrency "$CLIENTS" \
      --warmup-s 1 --duration-s "$SECONDS_" --quiet --json "$TMP/lg.json" > /dev/null 2>&1 & lg=$!
    sleep 1
    "$PY" "$ROOT/bench/profile/thread_cpu.py" snap "$gw" "$TMP/a.json"
    sleep "$SECONDS_"
    "$PY" "$ROOT/bench/profile/thread_cpu.py" snap "$gw" "$TMP/b.json"
    wait "$lg" || true
    kill "$gw"; wait "$gw" 2>/dev/null || true
    texts=$(jq ".texts_per_s * $SECONDS_ | floor" "$TMP/lg.json")
    "$PY" "$ROOT/bench/profile/thread_cpu.py" report "$TMP/a.json" "$TMP/b.json" "$texts" \
      --json "$TMP/cpu.json" > /dev/null
    jq -c --arg side "$side" --argjson round "$round" --slurpfile cpu "$TMP/cpu.json" \
      '{side: $side, round: $round, requests_per_s: .texts_per_s, p50_ms: .latency_ms.p50,
        errors: .error_total, cpu_us_per_request: $cpu[0].us_per_text}' "$TMP/lg.json" >> "$results"
  done
done
"$PY" - "$results" "$JSON" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
out = {}
print(f"{'gateway':<8} {'requests/s (median, range)':<32} {'CPU us/request (median, range)':<34} {'p50 ms':>7}")
for side in sorted({r["side"] for r in rows}):
    rs = [r for r in rows if r["side"] == side]
    def stat(k):
        v = sorted(r[k] for r in rs)
        return {"median": statistics.median(v), "min": v[0], "max": v[-1]}
    out[side] = {k: stat(k) for k in ("requests_per_s", "cpu_us_per_request", "p50_ms")}
    out[side]["errors"] = sum(r["errors"] for r in rs)
    q, c, p = out[side]["requests_per_s"], out[side]["cpu_us_per_request"], out[side]["p50_ms"]
    print(f"{side:<8} {q['median']:>9,.0f} ({q['min']:,.0f}-{q['max']:,.0f}){'':<8} "
          f"{c['median']:>8.1f} ({c['min']:.1f}-{c['max']:.1f}){'':<12} {p['median']:>7.2f}")
json.dump({"rounds": rows, "summary": out}, open(sys.argv[2], "w"), indent=2)
PY
