#!/usr/bin/env bash
# Fuzzes the GGUF parser with libFuzzer + ASan + UBSan for a bounded time.
#   usage: tools/fuzz_gguf.sh [SECONDS]        (default 60)
# Builds in build-fuzz/ with clang, seeds a corpus from Writer-made files, runs, and exits
# non-zero if the fuzzer found a crash, leak or sanitizer error (the input is saved under
# build-fuzz/fuzz/artifacts/). Environment: GRAFT_FUZZ_JOBS (build parallelism, default 2).
set -euo pipefail

secs="${1:-60}"
if ! [[ "$secs" =~ ^[0-9]+$ ]] || [[ "$secs" -eq 0 ]]; then
  echo "fuzz_gguf.sh: SECONDS must be a positive integer, got '$secs'" >&2
  exit 2
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build-fuzz"
work="$build/fuzz"

CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGRAFT_BUILD_FUZZERS=ON -DGRAFT_BUILD_TESTS=OFF >/dev/null
ninja -C "$build" -j"${GRAFT_FUZZ_JOBS:-2}" gguf_fuzz gguf_fuzz_seeds

mkdir -p "$work/corpus" "$work/artifacts"
"$build/bin/gguf_fuzz_seeds" "$work/corpus"

set +e
"$build/bin/gguf_fuzz" "$work/corpus" \
  -dict="$root/tests/fuzz/gguf.dict" \
  -max_total_time="$secs" -max_len=4096 -rss_limit_mb=2048 -timeout=10 \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 2>&1 | tee "$work/last-run.log"
rc=${PIPESTATUS[0]}
set -e

if [[ $rc -ne 0 ]]; then
  echo "fuzz_gguf.sh: fuzzer failed (exit $rc); reproducer(s) in $work/artifacts/" >&2
  exit 1
fi
execs="$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$work/last-run.log" | grep -oE '[0-9]+$' || true)"
echo "fuzz_gguf.sh: no crash in ${secs}s (${execs:-?} executions); corpus in $work/corpus"
