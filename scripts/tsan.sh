#!/usr/bin/env bash
# Runs the integration tests under ThreadSanitizer (docs/reliability.md):
#
#   ./scripts/tsan.sh [TEST...]     (default: the tests below)
#
# Builds ember with -DEMBER_SANITIZE=thread in ./build-tsan (or
# $EMBER_TSAN_BUILD_DIR). The routers and workers the tests start inherit
# TSAN_OPTIONS, so every process writes its reports to
# build-tsan/tsan-reports/report.PID; the script lists them and fails if
# there are any. scripts/tsan.supp silences reports with an uninstrumented
# library (libzmq, LibTorch, OpenMP) on one side. Test failures under TSan's
# 5-15x slowdown are reported but are not the point: timing-sensitive
# assertions (heartbeats, latencies) may miss.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${EMBER_TSAN_BUILD_DIR:-$root/build-tsan}"
tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
  tests=(batcher_test cluster_test fault_test text_embedding_test malformed_message_test
         security_test)
fi
cmake -S "$root" -B "$build" -DEMBER_SANITIZE=thread >/dev/null
cmake --build "$build" -j "$(nproc)" --target "${tests[@]}"
reports="$build/tsan-reports"
rm -rf "$reports" && mkdir -p "$reports"
export TSAN_OPTIONS="suppressions=$root/scripts/tsan.supp log_path=$reports/report second_deadlock_stack=1"
for t in "${tests[@]}"; do
  start=$(date +%s)
  rc=0
  "$build/tests/$t" >"$reports/$t.out" 2>&1 || rc=$?
  echo "$t: exit $rc in $(( $(date +%s) - start )) s ($(grep -c '^\[       OK' "$reports/$t.out" || true) passed, $(grep -c '^\[  FAILED  \].*ms)$' "$reports/$t.out" || true) failed)"
done
shopt -s nullglob
files=("$reports"/report.*)
if [ ${#files[@]} -gt 0 ]; then
  echo "ThreadSanitizer reports:"
  grep -h '^SUMMARY' "${files[@]}" | sort | uniq -c | sort -rn
  echo "full reports in $reports"
  exit 1
fi
echo "no ThreadSanitizer reports"
