#!/usr/bin/env bash
# Several routers (docs/balancing.md "Several routers"): closed-loop throughput through one
# router vs the same clients split over two routers, in one run, alternating rounds; then the
# failover gap: SDK clients spread over both routers while one is killed with SIGKILL.
# Three workers on the tiny model, attached to both routers, serve every round.
#
#   bench/routers.sh [--build DIR] [--rounds N] [--duration S] [--concurrency C]
#                    [--json FILE]
#
# Results: a table on stdout and JSON (default bench/results/routers.json). Every process
# started here is killed on exit; every wait is bounded.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${EMBER_BUILD_DIR:-$ROOT/build}"
ROUNDS=3
DURATION=8
CONCURRENCY=16
JSON=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) BUILD="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --duration) DURATION="$2"; shift 2 ;;
    --concurrency) CONCURRENCY="$2"; shift 2 ;;
    --json) JSON="$2"; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "routers.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
ROUTER_BIN="$BUILD/router/ember-router"
WORKER_BIN="$BUILD/worker/ember-worker"
CTL="$BUILD/client/emberctl"
LOADGEN="$BUILD/bench/ember-loadgen"
FAILOVER="$BUILD/bench/ember-failover-bench"
MODEL="$BUILD/models/ember-tiny/model.pt"
JSON="${JSON:-$ROOT/bench/results/routers.json}"
for f in "$ROUTER_BIN" "$WORKER_BIN" "$CTL" "$LOADGEN" "$FAILOVER"; do
  [[ -x "$f" ]] || { echo "routers.sh: missing $f (build first)" >&2; exit 2; }
done
[[ -f "$MODEL" ]] || { echo "routers.sh: missing $MODEL (build target ember_models)" >&2; exit 2; }
source "$ROOT/scripts/lib/cluster.sh"
ember_scratch routers
trap 'exit 130' INT TERM

# Routers r0, r1 and workers w1..w3 attached to both; waits until both list all three.
ROUTER_PIDS=()
start_router() {
  "$ROUTER_BIN" --frontend "ipc://$TMP/f$1" --backend "ipc://$TMP/b$1" --heartbeat-ms 250 \
    --log-level warn >> "$TMP/r$1.log" 2>&1 &
  ROUTER_PIDS[$1]=$!
  PIDS+=($!)
}
start_cluster() {
  start_router 0
  start_router 1
  local i
  for i in 1 2 3; do
    "$WORKER_BIN" --router "ipc://$TMP/b0" --router "ipc://$TMP/b1" --id "w$i" --device cpu \
      --threads 1 --heartbeat-ms 250 --model "tiny=$MODEL" --log-level warn \
      > "$TMP/w$i.log" 2>&1 &
    PIDS+=($!)
  done
  for i in 0 1; do
    ember_wait_for "$CTL" "ipc://$TMP/f$i" '^w[123] ' 3 && continue
    echo "routers.sh: workers did not register with router $i; logs in $TMP" >&2
    cat "$TMP"/*.log >&2
    exit 1
  done
}

# loadgen ROUTER CONCURRENCY OUT: a closed-loop run of DURATION seconds.
loadgen() {
  "$LOADGEN" --router "$1" --model tiny --concurrency "$2" --window 1 --duration-s "$DURATION" \
    --warmup-s 1 --json "$3" > /dev/null
}

start_cluster
echo "ember routers bench: $(nproc) cores; 3 workers (tiny model, 1 thread each) on both" \
     "routers; $CONCURRENCY closed-loop clients, $DURATION s per run, $ROUNDS rounds" >&2
half=$((CONCURRENCY / 2))
rounds_json="[]"
for round in $(seq 1 "$ROUNDS"); do
  # Alternate which goes first, so a drift of the machine does not favour one side.
  for side in $( ((round % 2)) && echo "one two" || echo "two one"); do
    if [[ $side == one ]]; then
      loadgen "ipc://$TMP/f0" "$CONCURRENCY" "$TMP/one-$round.json"
    else
      loadgen "ipc://$TMP/f0" "$half" "$TMP/two-a-$round.json" &
      a=$!
      loadgen "ipc://$TMP/f1" "$half" "$TMP/two-b-$round.json"
      wait "$a"
    fi
  done
  rounds_json=$(jq -n --argjson r "$rounds_json" --arg n "$round" \
    --slurpfile one "$TMP/one-$round.json" --slurpfile a "$TMP/two-a-$round.json" \
    --slurpfile b "$TMP/two-b-$round.json" \
    '$r + [{round: ($n|tonumber), one_qps: $one[0].qps, one_p99_ms: $one[0].latency_ms.p99,
            two_qps: ($a[0].qps + $b[0].qps),
            two_p99_ms: ([$a[0].latency_ms.p99, $b[0].latency_ms.p99] | max)}
           | .ratio = (.two_qps / .one_qps)]')
done

# The failover gap: 8 SDK clients spread over both routers; router 1 killed half way.
"$FAILOVER" --router "ipc://$TMP/f0,ipc://$TMP/f1" --model tiny --clients 8 \
  --duration-s "$DURATION" --kill-at-s "$(jq -n "$DURATION / 2")" --kill-pid "${ROUTER_PIDS[1]}" \
  --heartbeat-ms 250 --json "$TMP/failover.json" > "$TMP/failover.txt" || true

mkdir -p "$(dirname "$JSON")"
jq -n --argjson rounds "$rounds_json" --slurpfile f "$TMP/failover.json" \
  --arg cores "$(nproc)" --arg c "$CONCURRENCY" --arg d "$DURATION" \
  '{cores: ($cores|tonumber), concurrency: ($c|tonumber), duration_s: ($d|tonumber),
    rounds: $rounds,
    ratio_median: ([$rounds[].ratio] | sort | .[length/2|floor]),
    ratio_min: ([$rounds[].ratio] | min), ratio_max: ([$rounds[].ratio] | max),
    failover: $f[0]}' > "$JSON"

printf "%-6s %14s %12s %14s %12s %8s\n" round "1 router QPS" "p99 ms" "2 routers QPS" "p99 ms" ratio
jq -r '.rounds[] | [.round, .one_qps, .one_p99_ms, .two_qps, .two_p99_ms, .ratio]
       | @tsv' "$JSON" | while IFS=$'\t' read -r r q1 p1 q2 p2 x; do
  printf "%-6s %14.1f %12.2f %14.1f %12.2f %8.3f\n" "$r" "$q1" "$p1" "$q2" "$p2" "$x"
done
jq -r '"ratio 2/1 routers: median \(.ratio_median | .*1000|round/1000), range \(.ratio_min | .*1000|round/1000) - \(.ratio_max | .*1000|round/1000)"' "$JSON"
echo
echo "failover (router 1 killed with SIGKILL at $(jq -n "$DURATION / 2") s, 8 SDK clients):"
cat "$TMP/failover.txt"
echo "JSON: $JSON"
