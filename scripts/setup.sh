#!/usr/bin/env bash
# Installs what ember needs to build, test and run, where it is missing. Safe to run again: it
# does nothing when everything is present.
#  1. Debian 12 packages (apt-get, as root or through sudo).
#  2. The project's Python environment: a virtual environment in .venv (EMBER_VENV; git ignores
#     it) with the pinned packages of scripts/requirements.txt. Its torch wheel is the LibTorch
#     every build compiles against (CUDA 13.0; CMake finds it through the environment's
#     python3), and it carries the real all-MiniLM-L6-v2 and the test oracles. The wheels are
#     kept in ${EMBER_CACHE_DIR:-~/.cache/ember}/wheels (2.8 GB, 1.9 GB of it torch's NVIDIA
#     libraries), so a new clone or a rebuilt environment downloads nothing again.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

PACKAGES=(
  build-essential cmake pkg-config ccache git
  # pip fetches the Python packages over HTTPS: it needs the CA store.
  ca-certificates
  # The project's Python environment (step 2); Debian's python3 is its interpreter.
  python3 python3-venv
  libzmq3-dev cppzmq-dev libmsgpack-cxx-dev libcli11-dev libspdlog-dev
  libutf8proc-dev nlohmann-json3-dev libtomlplusplus-dev libgtest-dev libgmock-dev
  # The tokenizer's vocabulary lookups: an open-addressing hash map, header-only (the tokenizer
  # 1.2x as fast as with std::unordered_map, docs/performance.md).
  libtsl-hopscotch-map-dev
  # HF tokenizer.json pipelines (engine/tokenizer/hf_tokenizer.h): ICU for Unicode character
  # properties by age and normalization data, PCRE2 for the files' regular expressions.
  libicu-dev libpcre2-dev
  # ember-gateway (HTTP API), the Python client and its tests (on Debian's python3, as a user
  # of the client would run it), systemd unit checks.
  libcpp-httplib-dev python3-zmq python3-msgpack python3-yaml curl systemd
  # ember-gateway's event-loop HTTP server: Boost.Beast and Asio (headers only).
  libboost-dev
  # The CPU encoder's attention calls sgemm_ directly (engine/encoder/cpu/sgemm.cpp) on OpenBLAS;
  # libblas-dev provides the link-time name, the OpenMP build shares the encoder's threads.
  libopenblas0-openmp libblas-dev
  # The CPU encoder's dense layers run on oneDNN with prepacked weights
  # (engine/encoder/cpu/packed_dense.h): 1.1-1.8x OpenBLAS on one core (docs/performance.md).
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
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} Debian packages present"
else
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# 2. The Python environment. The lock names every package, so pip resolves nothing (--no-deps)
# and `pip check` proves the set complete. PyPI's file host sends no caching headers, so pip's
# own HTTP cache keeps nothing: the wheelhouse is the cache.
venv="${EMBER_VENV:-$root/.venv}"
lock="$root/scripts/requirements.txt"
stamp="$venv/.ember-requirements.txt"
if [ -x "$venv/bin/python3" ] && cmp -s "$lock" "$stamp"; then
  echo "setup: Python environment $venv up to date"
  exit 0
fi
wheels="${EMBER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ember}/wheels"
mkdir -p "$wheels"
[ -x "$venv/bin/python3" ] || /usr/bin/python3 -m venv "$venv"
before=$(du -sm "$wheels" | cut -f1)
echo "setup: downloading the wheels $wheels lacks (scripts/requirements.txt)"
"$venv/bin/pip" download --quiet --no-deps --only-binary=:all: -d "$wheels" -r "$lock"
echo "setup: downloaded $(($(du -sm "$wheels" | cut -f1) - before)) MB; installing into $venv"
"$venv/bin/pip" install --quiet --no-deps --no-index --find-links "$wheels" -r "$lock"
"$venv/bin/pip" check
cp "$lock" "$stamp"
