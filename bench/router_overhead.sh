#!/usr/bin/env bash
# What the router itself costs (docs/performance.md "The router's own cost"): ember-router and
# ember-raw-broker (a bare ROUTER/ROUTER broker of the same shape, bench/overhead/) side by
# side, each in front of an ember-null-worker that answers at once with no model, driven by
# ember-loadgen; alternating rounds in one run.
#   - saturation: closed loop (CONCURRENCY clients x WINDOW in flight): requests/s, and the
#     broker process's CPU per request (utime + stime from /proc over the run);
#   - half load: open loop at half the raw broker's saturation rate: p50/p99 latency.
#
#   bench/router_overhead.sh [--build DIR] [--rounds N] [--duration S] [--concurrency C]
#                            [--window W] [--json FILE]
#
# Results: a table on stdout and JSON (default bench/results/router_overhead.json). Every
# process started here is killed on exit; every wait is bounded.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${EMBER_BUILD_DIR:-$ROOT/build}"
ROUNDS=3
DURATION=6
CONCURRENCY=8
WINDOW=8
JSON=""
PIN=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) BUILD="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --duration) DURATION="$2"; shift 2 ;;
    --concurrency) CONCURRENCY="$2"; shift 2 ;;
    --window) WINDOW="$2"; shift 2 ;;
    --json) JSON="$2"; shift 2 ;;
    --pin) PIN=1; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "router_overhead.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
ROUTER_BIN="${EMBER_ROUTER_BIN:-$BUILD/router/ember-router}"  # another build of it, to compare
RAW="$BUILD/bench/ember-raw-broker"
NULL="$BUILD/bench/ember-null-worker"
LOADGEN="$BUILD/bench/ember-loadgen"
CTL="$BUILD/client/emberctl"
JSON="${JSON:-$ROOT/bench/results/router_overhead.json}"
for f in "$ROUTER_BIN" "$RAW" "$NULL" "$LOADGEN" "$CTL"; do
  [[ -x "$f" ]] || { echo "router_overhead.sh: missing $f (build first)" >&2; exit 2; }
done
source "$ROOT/scripts/lib/cluster.sh"
ember_scratch overhead
trap 'exit 130' INT TERM

# --pin: each broker alone on the last core, load generator and null workers on the others, so
# a broker's rate is what its own cost allows rather than what the scheduler gives it.
BROKER_CPU=() LOAD_CPU=()
if [[ -n $PIN ]]; then
  last=$(( $(nproc) - 1 ))
  BROKER_CPU=(taskset -c "$last") LOAD_CPU=(taskset -c "0-$(( last > 0 ? last - 1 : 0 ))")
fi
"${BROKER_CPU[@]}" "$ROUTER_BIN" --frontend "ipc://$TMP/rf" --backend "ipc://$TMP/rb" --log-level warn \
  --max-in-flight-per-client 100000 --max-queue 100000 > "$TMP/router.log" 2>&1 &
ROUTER_PID=$!; PIDS+=($!)
"${BROKER_CPU[@]}" "$RAW" --frontend "ipc://$TMP/xf" --backend "ipc://$TMP/xb" > "$TMP/raw.log" 2>&1 &
RAW_PID=$!; PIDS+=($!)
"${LOAD_CPU[@]}" "$NULL" --router "ipc://$TMP/rb" --id null-r > "$TMP/null-r.log" 2>&1 & PIDS+=($!)
"${LOAD_CPU[@]}" "$NULL" --router "ipc://$TMP/xb" --id null-x > "$TMP/null-x.log" 2>&1 & PIDS+=($!)
ember_wait_for "$CTL" "ipc://$TMP/rf" '^null-r ' 1 || { echo "null worker never registered" >&2; exit 1; }
sleep 0.5  # the raw broker has no status: give its worker's READY a moment

# CPU seconds (user + system) a process has used so far, and its main thread alone (the
# broker's poll loop: the rest is ZeroMQ's I/O thread). comm may hold spaces: count fields
# from the end of "(comm)".
cpu_s() { sed 's/.*) //' "/proc/$1/stat" | awk -v hz="$(getconf CLK_TCK)" '{printf "%.3f", ($12 + $13) / hz}'; }
main_cpu_s() { sed 's/.*) //' "/proc/$1/task/$1/stat" | awk -v hz="$(getconf CLK_TCK)" '{printf "%.3f", ($12 + $13) / hz}'; }

# run NAME PID FRONTEND OUT [open-loop QPS]
run() {
  local before after main_before main_after extra=(--concurrency "$CONCURRENCY" --window "$WINDOW")
  [[ -n "${5:-}" ]] && extra=(--qps "$5" --connections 4)
  before=$(cpu_s "$2"); main_before=$(main_cpu_s "$2")
  "${LOAD_CPU[@]}" "$LOADGEN" --router "$3" --model null --duration-s "$DURATION" --warmup-s 1 \
    "${extra[@]}" --json "$4" > /dev/null
  after=$(cpu_s "$2"); main_after=$(main_cpu_s "$2")
  jq --argjson b "$before" --argjson a "$after" --argjson mb "$main_before" \
    --argjson ma "$main_after" \
    '.cpu_s = ($a - $b) | .cpu_us_per_request = (1e6 * ($a - $b) / (.sent + .warmup_sent))
     | .main_cpu_us_per_request = (1e6 * ($ma - $mb) / (.sent + .warmup_sent))' \
    "$4" > "$4.tmp" && mv "$4.tmp" "$4"
}

echo "ember router overhead: $(nproc) cores; null worker; closed loop $CONCURRENCY x $WINDOW," \
     "$DURATION s per run, $ROUNDS rounds" >&2
rounds="[]"
for round in $(seq 1 "$ROUNDS"); do
  for side in $( ((round % 2)) && echo "raw router" || echo "router raw"); do
    if [[ $side == raw ]]; then run raw "$RAW_PID" "ipc://$TMP/xf" "$TMP/raw-$round.json"
    else run router "$ROUTER_PID" "ipc://$TMP/rf" "$TMP/router-$round.json"; fi
  done
  half=$(jq '.qps / 2 | floor' "$TMP/raw-$round.json")
  for side in $( ((round % 2)) && echo "raw router" || echo "router raw"); do
    if [[ $side == raw ]]; then run raw "$RAW_PID" "ipc://$TMP/xf" "$TMP/raw-half-$round.json" "$half"
    else run router "$ROUTER_PID" "ipc://$TMP/rf" "$TMP/router-half-$round.json" "$half"; fi
  done
  rounds=$(jq -n --argjson r "$rounds" --arg n "$round" \
    --slurpfile x "$TMP/raw-$round.json" --slurpfile e "$TMP/router-$round.json" \
    --slurpfile xh "$TMP/raw-half-$round.json" --slurpfile eh "$TMP/router-half-$round.json" \
    '$r + [{round: ($n|tonumber),
            raw_qps: $x[0].qps, router_qps: $e[0].qps, ratio: ($e[0].qps / $x[0].qps),
            raw_cpu_us: $x[0].cpu_us_per_request, router_cpu_us: $e[0].cpu_us_per_request,
            raw_loop_us: $x[0].main_cpu_us_per_request,
            router_loop_us: $e[0].main_cpu_us_per_request,
            half_qps: ($xh[0].offered_qps),
            raw_half_p50_ms: $xh[0].latency_ms.p50, raw_half_p99_ms: $xh[0].latency_ms.p99,
            router_half_p50_ms: $eh[0].latency_ms.p50, router_half_p99_ms: $eh[0].latency_ms.p99,
            errors: ($x[0].error_total + $e[0].error_total + $xh[0].error_total +
                     $eh[0].error_total + $x[0].missing + $e[0].missing)}]')
done
mkdir -p "$(dirname "$JSON")"
jq -n --argjson rounds "$rounds" --arg cores "$(nproc)" --arg c "$CONCURRENCY" --arg w "$WINDOW" \
  --arg d "$DURATION" \
  'def median: sort | .[length/2|floor];
   {cores: ($cores|tonumber), concurrency: ($c|tonumber), window: ($w|tonumber),
    duration_s: ($d|tonumber), rounds: $rounds,
    ratio_median: ([$rounds[].ratio] | median), ratio_min: ([$rounds[].ratio] | min),
    ratio_max: ([$rounds[].ratio] | max),
    router_cpu_us_median: ([$rounds[].router_cpu_us] | median),
    raw_cpu_us_median: ([$rounds[].raw_cpu_us] | median),
    router_loop_us_median: ([$rounds[].router_loop_us] | median),
    raw_loop_us_median: ([$rounds[].raw_loop_us] | median)}' > "$JSON"
# CPU columns: µs per request, whole process / its poll-loop thread.
printf "%-5s %10s %10s %7s %11s %11s %9s %16s %16s\n" round "raw req/s" "router" ratio \
  "raw us" "router us" "half QPS" "raw p50/p99 ms" "router p50/p99"
jq -r '.rounds[] | [.round, .raw_qps, .router_qps, .ratio, .raw_cpu_us, .raw_loop_us,
       .router_cpu_us, .router_loop_us, .half_qps,
       .raw_half_p50_ms, .raw_half_p99_ms, .router_half_p50_ms, .router_half_p99_ms] | @tsv' \
  "$JSON" | while IFS=$'\t' read -r n a b x ca la cb lb h p1 p2 p3 p4; do
  printf "%-5s %10.0f %10.0f %7.3f %5.1f/%-5.1f %5.1f/%-5.1f %9.0f %7.3f/%-8.3f %7.3f/%-8.3f\n" \
    "$n" "$a" "$b" "$x" "$ca" "$la" "$cb" "$lb" "$h" "$p1" "$p2" "$p3" "$p4"
done
jq -r '"router / raw broker req/s: median \(.ratio_median*1000|round/1000), range \(.ratio_min*1000|round/1000) - \(.ratio_max*1000|round/1000); CPU per request (process / poll loop): router \(.router_cpu_us_median*10|round/10) / \(.router_loop_us_median*10|round/10) us, raw broker \(.raw_cpu_us_median*10|round/10) / \(.raw_loop_us_median*10|round/10) us (medians)"' "$JSON"
echo "JSON: $JSON"
