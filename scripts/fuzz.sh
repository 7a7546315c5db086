#!/usr/bin/env bash
# Fuzzes ember's wire decoders, tokenizer (texts and tokenizer.json files) and the gateway's
# HTTP request parsers with libFuzzer (clang-14, ASan + UBSan), for a bounded time per target:
#
#   ./scripts/fuzz.sh [SECONDS_PER_TARGET]      (default 60)
#
# Builds in ./build-fuzz (or $EMBER_FUZZ_BUILD_DIR); corpora grow in
# build-fuzz/corpus/TARGET across runs. A crash leaves
# build-fuzz/crash-TARGET-* and makes the script fail; replay one with
# `build-fuzz/fuzz/TARGET FILE`. Needs the Debian packages clang-14 and
# libclang-rt-14-dev.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${EMBER_FUZZ_BUILD_DIR:-$root/build-fuzz}"
seconds="${1:-60}"
cmake -S "$root" -B "$build" -DCMAKE_CXX_COMPILER=clang++-14 -DEMBER_FUZZ=ON \
  -DEMBER_SANITIZE=address -DEMBER_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target protocol_fuzzer tokenizer_fuzzer gateway_fuzzer \
  ember_fuzz_seeds
status=0
for kind in protocol tokenizer gateway; do
  target="${kind}_fuzzer"
  corpus="$build/corpus/$target"
  "$build/fuzz/ember_fuzz_seeds" "$kind" "$corpus"
  echo "== $target for ${seconds}s"
  # -rss_limit_mb: decoders bound their allocations; 2 GB catches a leak or
  # an unbounded allocation. -max_len 65536 lets lengths and counts matter.
  log="$build/$target.log"
  if ! "$build/fuzz/$target" "$corpus" -max_total_time="$seconds" -max_len=65536 \
      -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$build/crash-$target-" \
      2>"$log"; then
    tail -n 60 "$log" >&2
    echo "!! $target found a crash: see $build/crash-$target-* and $log" >&2
    status=1
  fi
  grep -E '^(Done|stat::(number_of_executed_units|new_units_added|peak_rss_mb))' "$log" || true
done
exit "$status"
