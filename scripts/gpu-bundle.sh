#!/usr/bin/env bash
# The binaries scripts/gpu-bench.sh runs (and its CUDA tests), stripped, in the build tree's
# layout, so that a GPU machine with the same LibTorch (torch 2.11.0+cu130 here and there) runs
# them without building (EMBER_GPU_BENCH_PREBUILT=DIR; the build costs 3-5 of a session's 15
# device minutes). The build must be CUDA-enabled (the project's .venv torch is the CUDA wheel)
# and compile for sm_90.
#
#   scripts/gpu-bundle.sh [BUILD (default build)] [DIR (default build-device, git-ignored)]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
dir="${2:-$root/build-device}"
grep -q '^EMBER_CUDA_ARCHITECTURES:STRING=.*90' "$build/CMakeCache.txt" ||
  { echo "gpu-bundle: $build does not compile for sm_90" >&2; exit 1; }
cmake --build "$build" -j "$(nproc)" --target ember-worker ember-router ember-gateway ember-loadgen emberctl \
  cuda_kernels_test cuda_encoder_test ember-gpu-model-bench ember_hf_tokenizer_testdata
rm -rf "$dir"
# The tests check the CUDA kernels and encoder before gpu-bench measures them; their models are
# made there (tests/data/bert_test_models.txt), too large to carry.
for f in worker/ember-worker router/ember-router gateway/ember-gateway bench/ember-loadgen \
         client/emberctl tests/cuda_kernels_test tests/cuda_encoder_test bench/ember-gpu-model-bench; do
  mkdir -p "$dir/$(dirname "$f")"
  strip -o "$dir/$f" "$build/$f"
done
# The tokenizers scripts/gpu-decoder-bench.sh makes its decoder and XLM-R test models from (the
# models themselves are too large to carry).
for t in qwen mistral xlmr_v5; do
  mkdir -p "$dir/tokenizers/$t"
  cp "$build/testdata/tokenizers/$t/tokenizer.json" "$dir/tokenizers/$t/"
done
# Debian libraries of the worker's that the GPU machine lacks and ../shared/device's packages do
# not carry (oneDNN 2.6 for the CPU encoder, and the OpenCL loader it links), compressed.
tar cJhf "$dir/lib.tar.xz" -C /usr/lib/x86_64-linux-gnu libdnnl.so.2 libOpenCL.so.1
echo "gpu-bundle: $(du -sh "$dir" | cut -f1) in $dir"
