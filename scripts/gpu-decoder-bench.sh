#!/usr/bin/env bash
# Issue 37 on a GPU in one command: the decoder embedders' CUDA tests, then Qwen3-Embedding-0.6B's
# and -8B's shapes (seeded random bf16 weights, written here) through ember's packed CUDA decoder
# (cuda-decoder-kernels), ember's ATen forward and transformers' forward (AutoModel, SDPA, padded
# batches sorted by length: its best case) on the same ids, ending with one table
# (bench/gpu/decoder_summary.py): texts/s, tokens/s, share of the card's bf16 matmul rate, GPU
# memory, load time and load peak, and each ember path's cosine to transformers' vectors.
#
# Steps, each within its own time limit so that a device call cut short still brings back the
# ones before it (logs and JSON under OUT; the table in OUT/summary.txt):
#   1. the families' test decoders (qwen3-tiny, its bidirectional twin, qwen2-tiny in bf16 shards,
#      mistral-tiny with a window of 64) and the bge-m3-shaped XLM-R, made from the carried
#      tokenizers; cuda_kernels_test, then cuda_encoder_test's CudaDecoder and CudaEncoderRoberta
#      (the packed decoder and the CUDA encoder's typed <pad> and token states against the CPU);
#   2. Qwen3-Embedding-0.6B's shapes (1.2 GB), 1,024 texts of 32-512 tokens plus 16 of 2,048-8,192;
#   3. Qwen3-Embedding-8B's shapes (15.1 GB, ~1 min to write), 256 texts of 32-512 tokens: the
#      load (seconds, peak GPU allocation against the weights: a float32 copy would double it),
#      then the same three forwards.
#
# Prepared here: scripts/gpu-bundle.sh (build-device/, with ember-gpu-model-bench and the test
# tokenizers) and scripts/device-debs.sh (.device-debs/); carried with the checkout. There:
#
#   scripts/gpu-decoder-bench.sh OUT
#   EMBER_GPU_BENCH_DRY=1 scripts/gpu-decoder-bench.sh /tmp/d    # the same on this CPU (the
#     existing build/, tiny shapes instead of 0.6B and 8B, fp32): every step but the GPU's
#
# Not yet run on a GPU. Estimated on an H200: 1-2 min of tests, ~1 min for 0.6B, 3-4 min for 8B
# (writing and reading 15 GB twice, ember's and transformers' loads).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:?usage: gpu-decoder-bench.sh OUT}"
out="$(mkdir -p "$out" && cd "$out" && pwd)" || exit 2
dry="${EMBER_GPU_BENCH_DRY:-0}"
cd "$root" || exit 2
export HF_HUB_OFFLINE=1 TRANSFORMERS_VERBOSITY=error TQDM_DISABLE=1
start=$(date +%s)
source "$root/scripts/lib/gpu_steps.sh"
: > "$out/steps.txt"

if [[ $dry == 1 ]]; then
  build="$root/build" py="$root/.venv/bin/python3" device=cpu dtype=fp32
  tokenizers="$build/testdata/tokenizers" small=qwen3-tiny large=""
  echo "dry run on the CPU" > "$out/gpu.txt"
else
  [[ -f .device-debs/unpack-debs.sh ]] && source .device-debs/unpack-debs.sh .device-debs
  build="$root/${EMBER_GPU_BENCH_PREBUILT:-build-device}" py=python3 device=cuda:0 dtype=bf16
  tokenizers="$build/tokenizers" small=qwen3-0.6b large=qwen3-8b
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$out/gpu.txt" ||
    { echo "gpu-decoder-bench: no GPU here" >&2; exit 2; }
  # LibTorch's libraries from this machine's torch (the binaries' RUNPATH names the other's), and
  # the Debian ones the bundle carries, as scripts/gpu-bench.sh.
  torch_lib="$("$py" -c 'import os, torch; print(os.path.dirname(torch.__file__))')/lib"
  [[ -f $build/lib.tar.xz && ! -d $build/lib ]] && mkdir "$build/lib" && tar xJf "$build/lib.tar.xz" -C "$build/lib"
  export LD_LIBRARY_PATH="$torch_lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}:$build/lib"
fi
models="${EMBER_GPU_DECODER_MODELS:-/tmp/ember-decoders}"
mkdir -p "$models"
make_model() {  # NAME TOKENIZER ARGS...: once per machine
  local name="$1" tok="$2"; shift 2
  [[ -f "$models/$name/config.json" ]] && return 0
  "$py" scripts/make_encoder_model.py "$models/$name" --tokenizer "$tokenizers/$tok" "$@" \
    >> "$out/make-models.log" 2>&1
}

# 1. CUDA tests on the families' test models (tests/CMakeLists.txt makes the same).
t=$(date +%s)
make_model qwen3-tiny qwen --family qwen3 --shape qwen3-tiny --max-seq-length 8192 --seed 7 &&
  make_model qwen3-bidirectional qwen --family qwen3 --shape qwen3-tiny --bidirectional \
    --max-seq-length 8192 --seed 8 &&
  make_model qwen2-tiny qwen --family qwen2 --shape qwen2-tiny --max-seq-length 8192 \
    --dtype bfloat16 --shard-size 20MB --seed 9 &&
  make_model mistral-tiny mistral --family mistral --shape mistral-tiny --sliding-window 64 \
    --max-seq-length 8192 --seed 10 &&
  make_model xlmr-m3-1layer xlmr_v5 --family xlm-roberta --shape m3 --layers 1 --pooling cls \
    --max-seq-length 8192 --token-heads --seed 2
step "test models" "$([[ $? == 0 ]] && echo ok || echo FAIL)" "$(elapsed "$t")" "make-models.log"
if [[ $dry != 1 ]]; then
  export EMBER_REQUIRE_CUDA=1 EMBER_QWEN3_DIR="$models/qwen3-tiny" \
    EMBER_QWEN3_BIDIRECTIONAL_DIR="$models/qwen3-bidirectional" EMBER_QWEN2_DIR="$models/qwen2-tiny" \
    EMBER_MISTRAL_DIR="$models/mistral-tiny" EMBER_XLMR_M3_DIR="$models/xlmr-m3-1layer"
  for test in "cuda_kernels_test" "cuda_encoder_test --gtest_filter=CudaDecoder.*:CudaEncoderRoberta.*"; do
    t=$(date +%s)
    name="${test%% *}"
    # shellcheck disable=SC2086
    if timeout 240 "$build/tests/"$test > "$out/$name.log" 2>&1; then
      step "$name" ok "$(elapsed "$t")" "$(grep -m1 -E '^\[  PASSED' "$out/$name.log")"
    else
      step "$name" FAIL "$(elapsed "$t")" "$(grep -m2 -E 'Failure|FAILED' -A3 "$out/$name.log" | tr '\n' ' ' | cut -c1-300)"
    fi
  done
fi

# 2-3. The benches: ember packed, ember ATen, transformers; the same ids.
bench="$build/bench/ember-gpu-model-bench"
run() {  # NAME LIMIT COMMAND...: one timed measurement, its line appended to bench.log
  local name="$1" limit="$2"; shift 2
  if timeout "$limit" "$@" >> "$out/bench.log" 2>&1; then return 0; fi
  echo "FAILED: $name" >> "$out/bench.log"
  failed=1
}
"$py" bench/gpu/make_ids.py "$out/ids-mix.json" --kind mix --count 1024 > /dev/null &&
  "$py" bench/gpu/make_ids.py "$out/ids-mix256.json" --kind mix --count 256 > /dev/null &&
  "$py" bench/gpu/make_ids.py "$out/ids-long.json" --kind long --count 16 > /dev/null ||
  step "ids" FAIL 0 "make_ids.py"
[[ $dry != 1 ]] && { timeout 60 "$py" bench/gpu/hf_forward.py --peak --json "$out/peak.json" >> "$out/bench.log" 2>&1 || true; }
for shape in $small $large; do
  t=$(date +%s)
  make_model "$shape" qwen --family qwen3 --shape "$shape" --streamed --dtype bfloat16 \
    --shard-size 4GB --seed 0 ||
    { step "$shape model" FAIL "$(elapsed "$t")" "make-models.log"; continue; }
  step "$shape model" ok "$(elapsed "$t")" "$(du -sh "$models/$shape" | cut -f1)"
  t=$(date +%s)
  sets=(mix); [[ $shape == "$small" ]] && sets=(mix long); [[ $shape == "$large" ]] && sets=(mix256)
  limit=150; [[ $shape == "$large" ]] && limit=240
  for ids in "${sets[@]}"; do
    common=(--model "$models/$shape" --ids "$out/ids-$ids.json" --precision "$dtype" --device "$device"
            --batch-texts 64 --min-seconds 3)
    run "$shape ember packed $ids" "$limit" "$bench" "${common[@]}" --decoder-kernels \
      --json "$out/$shape-$ids-packed.json" --vectors "$out/$shape-$ids-packed.f32"
    # The padded ATen forward's scores take [texts, heads, L, L]: not tried on the long texts.
    [[ $ids != long ]] && run "$shape ember aten $ids" "$limit" "$bench" "${common[@]}" --encoder aten \
      --json "$out/$shape-$ids-aten.json" --vectors "$out/$shape-$ids-aten.f32"
    run "$shape hf $ids" "$limit" "$py" bench/gpu/hf_forward.py "$models/$shape" "$out/ids-$ids.json" \
      --dtype "$dtype" --device "${device%%:*}" --batch-texts 64 --min-seconds 3 \
      --json "$out/$shape-$ids-hf.json" --vectors "$out/$shape-$ids-hf.f32"
  done
  step "$shape bench" "$([[ $failed == 0 ]] && echo ok || echo FAIL)" "$(elapsed "$t")" "bench.log"
  # 15 GB of disk back before anything else needs it.
  [[ $shape == "$large" ]] && rm -rf "${models:?}/$shape"
done

"$py" bench/gpu/decoder_summary.py "$out" > "$out/summary.txt" 2>&1 || failed=1
ember_steps_finish
