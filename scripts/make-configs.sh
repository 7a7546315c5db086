#!/usr/bin/env bash
# Writes config/router.toml, config/worker.toml and config/gateway.toml from the programs' own
# settings tables (`--print-config`), so the shipped files list every setting with its real
# default, range-checked key and comment. tests/config_test.cpp fails when they are stale.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${EMBER_BUILD_DIR:-$root/build}"
"$build/router/ember-router" --print-config >"$root/config/router.toml"
"$build/worker/ember-worker" --print-config >"$root/config/worker.toml"
"$build/gateway/ember-gateway" --print-config >"$root/config/gateway.toml"
echo "wrote config/router.toml, config/worker.toml, config/gateway.toml"
