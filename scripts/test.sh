#!/usr/bin/env bash
# Installs what is missing, builds (warnings are errors, as in CI), and runs every test.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh" -DEMBER_WERROR=ON
cd "${EMBER_BUILD_DIR:-$root/build}"
ctest --output-on-failure --timeout 600
