#!/usr/bin/env bash
# The main job, end to end: installs what is missing, builds, starts a router
# and one CPU worker serving a generated model, and embeds sample sentences
# with emberctl. Stops both processes on exit.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${EMBER_BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"

run="$(mktemp -d /tmp/ember-demo-XXXXXX)"
frontend="ipc://$run/frontend"
backend="ipc://$run/backend"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$run"
}
trap cleanup EXIT

"$build/router/ember-router" --frontend "$frontend" --backend "$backend" >"$run/router.log" 2>&1 &
pids+=($!)
# minilm-l6-random: all-MiniLM-L6-v2's architecture with seeded random weights
# and the real bert-base-uncased WordPiece vocabulary (generated at build time).
"$build/worker/ember-worker" --router "$backend" --device cpu --threads "$(nproc)" \
  --model "minilm=$build/models/minilm-l6-random" \
  --model "ember-tiny=$build/models/ember-tiny/model.pt" >"$run/worker.log" 2>&1 &
pids+=($!)

# Wait (bounded) for the worker to register.
for _ in $(seq 1 100); do
  if "$build/client/emberctl" --router "$frontend" --timeout-ms 500 status 2>/dev/null |
     grep -q minilm; then
    break
  fi
  sleep 0.2
done

"$build/client/emberctl" --router "$frontend" status
echo
"$build/client/emberctl" --router "$frontend" embed minilm \
  "The quick brown fox jumps over the lazy dog." \
  "ember turns text into vectors at high throughput." \
  "今天天气很好，我们去公园散步吧。"
