#!/usr/bin/env bash
# Heap allocations per request in the router (docs/performance.md "No allocation per
# request"): ember-router under heaptrack in front of an ember-null-worker, driven by
# ember-loadgen for DURATION seconds; prints allocation calls per request, split into those
# with ember's code on the stack and the rest (ZeroMQ's own message buffers, startup), and the
# ember call sites that allocate about once per request or more.
#   bench/router_allocations.sh [--build DIR] [--duration S] [--model NAME] [--json FILE]
# Needs heaptrack (apt-get install heaptrack). Every process started here is killed on exit.
set -euo pipefail
shopt -s nullglob

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${EMBER_BUILD_DIR:-$ROOT/build}"
DURATION=3
MODEL=null
JSON="$ROOT/bench/results/router_allocations.json"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) BUILD="$2"; shift 2 ;;
    --duration) DURATION="$2"; shift 2 ;;
    --model) MODEL="$2"; shift 2 ;;  # a name longer than 15 bytes leaves std::string's SSO
    --json) JSON="$2"; shift 2 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "router_allocations.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
command -v heaptrack > /dev/null || { echo "router_allocations.sh: needs heaptrack" >&2; exit 2; }
ROUTER="$BUILD/router/ember-router" NULL="$BUILD/bench/ember-null-worker"
LOADGEN="$BUILD/bench/ember-loadgen" CTL="$BUILD/client/emberctl"
for f in "$ROUTER" "$NULL" "$LOADGEN" "$CTL"; do
  [[ -x "$f" ]] || { echo "router_allocations.sh: missing $f (build first)" >&2; exit 2; }
done
source "$ROOT/scripts/lib/cluster.sh"
ember_scratch allocations
trap 'exit 130' INT TERM

# heaptrack's own script runs the router as a child: signal the router itself by its pid.
heaptrack -o "$TMP/heap" "$ROUTER" --frontend "ipc://$TMP/f" --backend "ipc://$TMP/b" \
  --log-level warn --max-in-flight-per-client 100000 --max-queue 100000 > "$TMP/router.log" 2>&1 &
HEAPTRACK_PID=$!; PIDS+=($!)
"$NULL" --router "ipc://$TMP/b" --id null --model "$MODEL" > "$TMP/null.log" 2>&1 & PIDS+=($!)
ember_wait_for "$CTL" "ipc://$TMP/f" '^null ' 1 || { echo "null worker never registered" >&2; exit 1; }
"$LOADGEN" --router "ipc://$TMP/f" --model "$MODEL" --duration-s "$DURATION" --warmup-s 0 \
  --concurrency 8 --window 8 --json "$TMP/load.json" > /dev/null
# heaptrack runs the router as its child: stop the router, then wait (bounded) for heaptrack
# to finish writing its data.
pkill -INT -f "^$ROUTER --frontend ipc://$TMP/f"
for _ in $(seq 1 300); do kill -0 "$HEAPTRACK_PID" 2> /dev/null || break; sleep 0.1; done
data=("$TMP"/heap*.zst "$TMP"/heap*.gz)
[[ -s "${data[0]}" ]] || { echo "router_allocations.sh: heaptrack wrote no data" >&2; exit 1; }
requests=$(jq '.sent + .warmup_sent' "$TMP/load.json")
# Unmerged backtraces: one entry per allocating call stack.
heaptrack_print -m 0 -n 400 -p 0 -T 0 "${data[0]}" > "$TMP/print.txt" 2> /dev/null
awk -v req="$requests" '
  function flush() {
    if (calls == "") return
    if (site != "") { ember += calls; if (calls >= 0.5 * req) sites[site] += calls } else other += calls
    calls = ""; site = ""
  }
  /^[0-9]+ calls to allocation functions/ { flush(); calls = $1; next }
  /^calls to allocation functions:/ { flush(); total = $5 }
  # The innermost ember frame names the site.
  calls != "" && site == "" && /^ *ember::/ { site = $0; sub(/^ +/, "", site); sub(/\(.*/, "", site) }
  END {
    flush()
    printf "{\"requests\": %d, \"total_calls\": %d, \"ember_calls\": %d, \"other_calls\": %d, ", req, total, ember, other
    printf "\"sites\": {"; sep = ""
    for (s in sites) { printf "%s\"%s\": %.3f", sep, s, sites[s] / req; sep = ", " }
    printf "}}\n"
  }' "$TMP/print.txt" | jq --arg model "$MODEL" '.model = $model
    | .per_request = {total: (.total_calls / .requests), ember: (.ember_calls / .requests),
                      other: (.other_calls / .requests)}' > "$TMP/result.json"
mkdir -p "$(dirname "$JSON")"
cp "$TMP/result.json" "$JSON"
jq -r '"router allocations per request (\(.requests) requests, model \"\(.model)\"): \(.per_request.total*100|round/100) in all, \(.per_request.ember*100|round/100) with ember code on the stack, \(.per_request.other*100|round/100) elsewhere (ZeroMQ, startup)",
       (.sites | to_entries[] | "  \(.value*100|round/100) per request: \(.key)")' "$JSON"
echo "JSON: $JSON"
