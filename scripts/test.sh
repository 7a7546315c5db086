#!/usr/bin/env bash
# Installs what is missing, builds (warnings are errors, as in CI; the same configuration as
# scripts/demo.sh), and runs every test.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
cd "${EMBER_BUILD_DIR:-$root/build}"
ctest --output-on-failure --timeout 600
