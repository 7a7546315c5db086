# Shared by scripts/demo.sh and the bench/*.sh scripts (source it): a scratch
# directory and the processes started in it, both gone when the script
# exits, and a bounded wait for a router to list its workers' models.
#
#   source "$ROOT/scripts/lib/cluster.sh"
#   ember_scratch batching        # sets TMP; add started processes to PIDS
#   "$ROUTER" ... & PIDS+=($!)
#   ember_wait_for "$CTL" "$FRONTEND" minilm || exit 1

# ember_scratch NAME: a fresh /tmp/ember-NAME-XXXXXX in TMP, removed on exit
# together with every process in PIDS.
ember_scratch() {
  TMP="$(mktemp -d "/tmp/ember-$1-XXXXXX")"
  PIDS=()
  trap 'ember_stop_all; rm -rf "$TMP"' EXIT
}

# Stops (SIGTERM, then waits for) every process in PIDS and empties it.
ember_stop_all() {
  local pid
  for pid in "${PIDS[@]:-}"; do [[ -n "$pid" ]] && kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]:-}"; do [[ -n "$pid" ]] && wait "$pid" 2>/dev/null || true; done
  PIDS=()
}

# ember_wait_for CTL FRONTEND PATTERN [COUNT] [TRIES]: polls `emberctl status`
# every 0.2 s, at most TRIES times (default 150), until COUNT lines (default
# 1) match the extended regex PATTERN. Returns 1 if they never do.
ember_wait_for() {
  local ctl="$1" frontend="$2" pattern="$3" count="${4:-1}" tries="${5:-150}" n=0
  for _ in $(seq 1 "$tries"); do
    n=$("$ctl" --router "$frontend" --timeout-ms 500 status 2>/dev/null | grep -cE "$pattern" || true)
    [[ "$n" -ge "$count" ]] && return 0
    sleep 0.2
  done
  return 1
}
