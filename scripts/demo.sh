#!/usr/bin/env bash
# The main job, end to end: installs what is missing, builds, starts a router
# and one CPU worker serving a generated model, and embeds sample sentences
# with emberctl. Stops both processes on exit.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${EMBER_BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"

source "$root/scripts/lib/cluster.sh"
ember_scratch demo
run="$TMP"
frontend="ipc://$run/frontend"
backend="ipc://$run/backend"

"$build/router/ember-router" --frontend "$frontend" --backend "$backend" >"$run/router.log" 2>&1 &
PIDS+=($!)
# minilm-l6-random: all-MiniLM-L6-v2's architecture with seeded random weights
# and the real bert-base-uncased WordPiece vocabulary (generated at build time).
"$build/worker/ember-worker" --router "$backend" --device cpu --threads "$(nproc)" \
  --model "minilm=$build/models/minilm-l6-random" \
  --model "ember-tiny=$build/models/ember-tiny/model.pt" >"$run/worker.log" 2>&1 &
PIDS+=($!)

# Wait (bounded) for the worker to register.
ember_wait_for "$build/client/emberctl" "$frontend" minilm 1 100 ||
  { echo "demo.sh: the worker did not register; its log:" >&2; cat "$run/worker.log" >&2; exit 1; }

"$build/client/emberctl" --router "$frontend" status
echo
"$build/client/emberctl" --router "$frontend" embed minilm \
  "The quick brown fox jumps over the lazy dog." \
  "ember turns text into vectors at high throughput." \
  "今天天气很好，我们去公园散步吧。"
