#!/usr/bin/env bash
# Fills .device-debs/ (git-ignored) for a build on the GPU machine, which reaches no package
# registry: ../shared/device/fetch-debs.sh's Debian 12 packages, plus the ones ember's build
# has needed since that list was written. Run on a Debian 12 machine in any folder; then carry
# .device-debs with the checkout and, there, `source .device-debs/unpack-debs.sh .device-debs`
# (../shared/device/README.md). Not needed to run a bundle built here (scripts/gpu-bundle.sh).
#
#   scripts/device-debs.sh [PACKAGE...]   # more packages, e.g. a new -dev dependency
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
fetch="${EMBER_SHARED_DIR:-$root/../shared}/device/fetch-debs.sh"
[[ -x $fetch ]] || { echo "device-debs: no $fetch" >&2; exit 1; }
extra=(
  libtsl-hopscotch-map-dev  # the tokenizer's vocabulary map (header-only)
  # the tokenizer.json pipelines: ICU (Unicode data) and PCRE2 (regular expressions)
  libicu-dev libicu72 libpcre2-dev libpcre2-8-0 libpcre2-16-0 libpcre2-32-0 libpcre2-posix3
)
cd "$root"
"$fetch" "${extra[@]}" "$@"
ls .device-debs/libtsl-hopscotch-map-dev_*.deb > /dev/null
