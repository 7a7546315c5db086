#!/usr/bin/env bash
# Configures and builds ember in ./build (or $EMBER_BUILD_DIR). Extra
# arguments go to cmake's configure step, e.g. -DCMAKE_PREFIX_PATH=... for a
# CUDA LibTorch (docs/cuda.md).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${EMBER_BUILD_DIR:-$root/build}"
cmake -S "$root" -B "$build" "$@" >/dev/null
cmake --build "$build" -j "$(nproc)"
