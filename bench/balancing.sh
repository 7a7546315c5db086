#!/usr/bin/env bash
# Load-balancing bench: 3 workers, one of them 3x slower, open-loop Poisson load
# at a fixed fraction (default 70%) of the cluster's measured capacity; p50/p99
# per router policy. Results: a table on stdout and JSON (docs/balancing.md).
#
#   bench/balancing.sh [--build DIR] [--worker BIN] [--duration S] [--warmup S]
#                      [--load F] [--capacity QPS] [--max-batch-size N]
#                      [--policies "a b c"] [--json FILE]
#
# Capacity (unless --capacity is given): closed-loop saturation with the
# least_connections policy at several concurrencies; the highest achieved QPS.
# Every process started here is killed on exit; every wait is bounded.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${EMBER_BUILD_DIR:-$ROOT/build}"
WORKER_BIN=""
DURATION=20
WARMUP=3
LOAD=0.7
CAPACITY=""
MAX_BATCH=1
SLOWDOWN=3
TIMEOUT_MS=10000
CONCURRENCIES="4 8 16"
POLICIES="round_robin weighted_round_robin least_connections response_time adaptive"
JSON=""
SEED=42

while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) BUILD="$2"; shift 2 ;;
    --worker) WORKER_BIN="$2"; shift 2 ;;
    --duration) DURATION="$2"; shift 2 ;;
    --warmup) WARMUP="$2"; shift 2 ;;
    --load) LOAD="$2"; shift 2 ;;
    --capacity) CAPACITY="$2"; shift 2 ;;
    --max-batch-size) MAX_BATCH="$2"; shift 2 ;;
    --slowdown) SLOWDOWN="$2"; shift 2 ;;
    --policies) POLICIES="$2"; shift 2 ;;
    --json) JSON="$2"; shift 2 ;;
    --seed) SEED="$2"; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "balancing.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

ROUTER_BIN="$BUILD/router/ember-router"
WORKER_BIN="${WORKER_BIN:-$BUILD/worker/ember-worker}"
CTL="$BUILD/client/emberctl"
LOADGEN="$BUILD/ember-loadgen"
[[ -x "$LOADGEN" ]] || LOADGEN="$BUILD/bench/ember-loadgen"
MODEL="$BUILD/models/ember-tiny/model.pt"
JSON="${JSON:-$ROOT/bench/results/balancing.json}"
for f in "$ROUTER_BIN" "$WORKER_BIN" "$CTL" "$LOADGEN"; do
  [[ -x "$f" ]] || { echo "balancing.sh: missing $f (build first)" >&2; exit 2; }
done
[[ -f "$MODEL" ]] || { echo "balancing.sh: missing $MODEL (build target ember_models)" >&2; exit 2; }

source "$ROOT/scripts/lib/cluster.sh"
ember_scratch balancing
trap 'exit 130' INT TERM

# Starts a router with policy $1 and workers w1, w2 (normal) and w3 (slow) in
# $TMP/$1; waits (bounded) until the router lists all three.
start_cluster() {
  local policy="$1" dir="$TMP/$1"
  mkdir -p "$dir"
  cat > "$dir/router.toml" <<EOF
# weighted_round_robin: the slow worker gets weight 1, the others 3.
[workers."w1"]
weight = 3.0
[workers."w2"]
weight = 3.0
[workers."w3"]
weight = 1.0
EOF
  FRONTEND="ipc://$dir/frontend"
  "$ROUTER_BIN" --config "$dir/router.toml" --frontend "$FRONTEND" --backend "ipc://$dir/backend" \
    --policy "$policy" --log-level warn > "$dir/router.log" 2>&1 &
  PIDS+=($!)
  local i slow
  for i in 1 2 3; do
    slow=1
    [[ $i == 3 ]] && slow="$SLOWDOWN"
    "$WORKER_BIN" --router "ipc://$dir/backend" --id "w$i" --device cpu --threads 1 \
      --max-batch-size "$MAX_BATCH" --slowdown "$slow" --model "tiny=$MODEL" --capacity 256 \
      --log-level warn > "$dir/w$i.log" 2>&1 &
    PIDS+=($!)
  done
  ember_wait_for "$CTL" "$FRONTEND" '^w[123] ' 3 && return 0
  echo "balancing.sh: not all 3 workers registered with the $policy router; logs in $dir" >&2
  cat "$dir"/*.log >&2
  exit 1
}


# CPU use of the whole machine (seconds, all cores) and of this script's
# finished children, to tell how much CPU other programs took during a run:
# this is a 2-core machine and the numbers mean little if something else ran.
cpu_busy_s() { awk '/^cpu /{printf "%.2f", ($2+$3+$4+$7+$8)/100}' /proc/stat; }
# (`times` must run in this shell, not in a $(...) subshell.)
children_cpu_s() {
  tail -1 "$TMP/times.txt" | awk '{n=0; for(i=1;i<=2;i++){split($i,a,/[ms]/); n+=a[1]*60+a[2]} printf "%.2f", n}'
}
# Waits (at most 180 s) until the machine is idle, with none of our processes
# running: under 10% of one core busy over 2 s.
wait_idle() {
  local b0 b1 busy
  for _ in $(seq 1 90); do
    b0=$(cpu_busy_s); sleep 2; b1=$(cpu_busy_s)
    busy=$(jq -n --argjson a "$b0" --argjson b "$b1" '($b - $a) / 2')
    if jq -e -n --argjson x "$busy" '$x < 0.1' > /dev/null; then return 0; fi
    echo "waiting for the machine to go idle (other programs use $busy cores)" >&2
  done
  echo "balancing.sh: machine still busy; measuring anyway (see other_cpu_s)" >&2
}

echo "ember balancing bench: $(nproc) cores, $(uname -m), slow worker w3 --slowdown $SLOWDOWN," \
     "--max-batch-size $MAX_BATCH, --threads 1 per worker" >&2

if [[ -z "$CAPACITY" ]]; then
  wait_idle
  start_cluster least_connections
  CAPACITY=0
  for c in $CONCURRENCIES; do
    "$LOADGEN" --router "$FRONTEND" --model tiny --concurrency "$c" --duration-s 5 --warmup-s 1 \
      --timeout-ms "$TIMEOUT_MS" --seed "$SEED" --quiet --no-router-status \
      --json "$TMP/capacity-$c.json"
    q=$(jq '.qps' "$TMP/capacity-$c.json")
    echo "capacity probe: least_connections, closed loop, concurrency $c: $q QPS" \
         "(p99 $(jq '.latency_ms.p99' "$TMP/capacity-$c.json") ms)" >&2
    CAPACITY=$(jq -n --argjson a "$CAPACITY" --argjson b "$q" '[$a, $b] | max')
  done
  ember_stop_all
fi
TARGET=$(jq -n --argjson c "$CAPACITY" --argjson l "$LOAD" '$c * $l | floor')
echo "capacity $CAPACITY QPS; open-loop load ${LOAD} x capacity = $TARGET QPS," \
     "${DURATION}s per policy after ${WARMUP}s warm-up" >&2

for policy in $POLICIES; do
  wait_idle
  start_cluster "$policy"
  times > "$TMP/times.txt"; busy0=$(cpu_busy_s); kids0=$(children_cpu_s)
  "$LOADGEN" --router "$FRONTEND" --model tiny --qps "$TARGET" --connections 2 \
    --duration-s "$DURATION" --warmup-s "$WARMUP" --timeout-ms "$TIMEOUT_MS" --seed "$SEED" \
    --quiet --json "$TMP/$policy.json"
  ember_stop_all
  times > "$TMP/times.txt"; busy1=$(cpu_busy_s); kids1=$(children_cpu_s)
  jq -n --argjson b "$(jq -n --argjson a "$busy0" --argjson b "$busy1" '$b - $a')" \
    --argjson k "$(jq -n --argjson a "$kids0" --argjson b "$kids1" '$b - $a')" \
    '{busy_cpu_s: $b, bench_cpu_s: $k, other_cpu_s: ([$b - $k, 0] | max)}' > "$TMP/cpu-$policy.json"
  echo "done: $policy ($(jq -c . "$TMP/cpu-$policy.json"))" >&2
done

mkdir -p "$(dirname "$JSON")"
jq -n --arg cores "$(nproc)" --arg cpu "$(lscpu | sed -n 's/^Model name: *//p' | head -1)" \
  --argjson capacity "$CAPACITY" --argjson target "$TARGET" --argjson load "$LOAD" \
  --argjson duration "$DURATION" --argjson warmup "$WARMUP" --argjson max_batch "$MAX_BATCH" \
  --argjson slowdown "$SLOWDOWN" --argjson timeout "$TIMEOUT_MS" \
  '{machine: {cores: ($cores | tonumber), cpu: $cpu},
    settings: {workers: 3, slow_worker: "w3", slowdown: $slowdown, max_batch_size: $max_batch,
               worker_threads: 1, worker_capacity: 256, capacity_qps: $capacity, load: $load,
               target_qps: $target, duration_s: $duration, warmup_s: $warmup,
               timeout_ms: $timeout, wrr_weights: {w1: 3, w2: 3, w3: 1}}}' > "$TMP/head.json"
for p in $POLICIES; do
  jq --arg p "$p" '{
      policy: $p, qps: .qps, offered_qps: .offered_qps, sent: .sent, replies: .replies,
      errors: .errors, error_total: .error_total, missing: .missing, latency_ms: .latency_ms,
      max_send_lag_ms: .max_send_lag_ms,
      slow_share: ((.workers.w3.replies // 0) / (if .replies > 0 then .replies else 1 end)),
      workers: .workers, router_status: .router_status} + {cpu: $cpu[0]}' \
    --slurpfile cpu "$TMP/cpu-$p.json" "$TMP/$p.json" > "$TMP/summary-$p.json"
done
jq -s '.[0] + {policies: .[1:]}' "$TMP/head.json" \
  $(for p in $POLICIES; do echo "$TMP/summary-$p.json"; done) > "$TMP/all.json"
rr=$(jq '[.policies[] | select(.policy == "round_robin") | .latency_ms.p99][0] // null' "$TMP/all.json")
ad=$(jq '[.policies[] | select(.policy == "adaptive") | .latency_ms.p99][0] // null' "$TMP/all.json")
jq --argjson rr "$rr" --argjson ad "$ad" \
  '. + {adaptive_over_round_robin_p99: (if $rr != null and $ad != null and $rr > 0 then $ad / $rr else null end)}' \
  "$TMP/all.json" > "$JSON"

printf '\n%-22s %9s %9s %9s %9s %9s %9s %7s %9s %9s\n' policy "QPS" "p50 ms" "p90 ms" "p99 ms" \
  "max ms" errors missing "w3 share" "other CPU"
jq -r '.policies[] | [.policy, .qps, .latency_ms.p50, .latency_ms.p90, .latency_ms.p99,
        .latency_ms.max, .error_total, .missing, .slow_share * 100, .cpu.other_cpu_s] | @tsv' "$JSON" |
  while IFS=$'\t' read -r p q p50 p90 p99 mx e m s o; do
    printf '%-22s %9.1f %9.2f %9.2f %9.2f %9.2f %9d %7d %8.1f%% %8.1fs\n' "$p" "$q" "$p50" "$p90" "$p99" \
      "$mx" "$e" "$m" "$s" "$o"
  done
ratio=$(jq -r '.adaptive_over_round_robin_p99 // "n/a"' "$JSON")
echo "adaptive p99 / round_robin p99 = $ratio"
echo "(capacity $CAPACITY QPS, load $TARGET QPS; JSON: $JSON)"
