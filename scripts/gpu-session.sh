#!/usr/bin/env bash
# One lent GPU session's measurements in one command, on the GPU machine (issue 24): the
# carried Debian packages unpacked, then scripts/gpu-bench.sh on the carried bundle (fp16, no
# peers, twice the one-text load too) as variants side by side, each a full run:
#   base      the defaults (and the CUDA tests first);
#   clients   EMBER_GPU_BENCH_CLIENTS1=32x32: the same 1,024 one-text requests in flight on
#             8x fewer load generator threads;
#   tok4      the worker with --tokenizer-threads 4 (one per core by default).
# Each variant's logs and JSON go to OUT/VARIANT.tar.gz, its table to OUT/VARIANT.txt (the
# device tool brings back 8 files: three variants fit); the comparison
# (bench/gpu/compare_variants.py) is printed last and kept in OUT/compare.txt. Not yet run on a
# GPU; estimated from gpu-bench's ~90 s for fp16 without peers: 2-3 minutes per variant, plus
# 1-2 for the first's tests, so the default two fit one device call (10 minutes) and tok4 goes
# in a second one if time is left. A variant's files are written as soon as it ends, so a device
# call cut short still brings back the variants before it.
#
# Prepared here: scripts/gpu-bundle.sh (build-device/), scripts/device-debs.sh (.device-debs/),
# .venv/bin/python3 scripts/real_model.py --vocab .device-models/vocab.txt; carried with the
# checkout (the device tool's carry: .device-debs, build-device, .device-models). There:
#
#   scripts/gpu-session.sh OUT [VARIANT ...]       # default: base clients
#   EMBER_GPU_BENCH_DRY=1 scripts/gpu-session.sh /tmp/s base   # the same on the CPU, to check it
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:?usage: gpu-session.sh OUT [VARIANT ...]}"; shift
variants=("$@"); [[ ${#variants[@]} == 0 ]] && variants=(base clients)
out="$(mkdir -p "$out" && cd "$out" && pwd)" || exit 2
cd "$root" || exit 2
if [[ ${EMBER_GPU_BENCH_DRY:-0} != 1 ]]; then
  if [[ -f .device-debs/unpack-debs.sh ]]; then
    # shellcheck disable=SC1091
    source .device-debs/unpack-debs.sh .device-debs
  fi
  EMBER_TORCH_PREFIX="${EMBER_TORCH_PREFIX:-$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')}"
  export EMBER_TORCH_PREFIX
  export EMBER_GPU_BENCH_PREBUILT="${EMBER_GPU_BENCH_PREBUILT:-build-device}"
fi
export EMBER_GPU_BENCH_DTYPES="${EMBER_GPU_BENCH_DTYPES:-fp16}" EMBER_GPU_BENCH_PEERS=0 \
  EMBER_GPU_BENCH_DEEP=1
compare=()
for v in "${variants[@]}"; do
  env=()
  case "$v" in
    base) ;;
    clients) env=(EMBER_GPU_BENCH_CLIENTS1=32x32 EMBER_GPU_BENCH_TESTS=0) ;;
    tok4) env=(EMBER_GPU_BENCH_WORKER_ARGS="--tokenizer-threads 4" EMBER_GPU_BENCH_TESTS=0) ;;
    *) echo "gpu-session: unknown variant $v (base, clients, tok4)" >&2; exit 2 ;;
  esac
  dir="/tmp/gpu-session/$v"; rm -rf "$dir"
  echo "gpu-session: $v ${env[*]}"
  limit=360; [[ $v == base ]] && limit=480  # base runs the CUDA tests first
  env "${env[@]}" EMBER_GPU_BENCH_OUT="$dir" timeout "$limit" scripts/gpu-bench.sh > "$out/$v.log" 2>&1
  echo "gpu-session: $v exit $?"
  cp "$dir/summary.txt" "$out/$v.txt" 2>/dev/null
  mkdir -p "$dir" && mv "$out/$v.log" "$dir/gpu-bench.log"
  tar czf "$out/$v.tar.gz" -C /tmp/gpu-session "$v"
  compare+=("$v=$dir")
done
py=python3; [[ ${EMBER_GPU_BENCH_DRY:-0} == 1 ]] && py="$root/.venv/bin/python3"  # as gpu-bench.sh
"$py" "$root/bench/gpu/compare_variants.py" "${compare[@]}" | tee "$out/compare.txt"
