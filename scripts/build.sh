#!/usr/bin/env bash
# Configures and builds ember in ./build (or $EMBER_BUILD_DIR), with warnings as errors as CI
# has them: scripts/demo.sh and scripts/test.sh both build through here with the same
# configuration, so running one after the other builds once. Extra arguments go to cmake's
# configure step, e.g. -DEMBER_SANITIZE=address (in another EMBER_BUILD_DIR), or
# -DEMBER_WERROR=OFF for a compiler newer than CI's.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${EMBER_BUILD_DIR:-$root/build}"
cmake -S "$root" -B "$build" -DEMBER_WERROR=ON "$@" >/dev/null
cmake --build "$build" -j "$(nproc)"
