#!/usr/bin/env bash
# Builds graft with AddressSanitizer and UndefinedBehaviorSanitizer (GRAFT_SANITIZE: every target,
# -O2 with debug info, no recovery from an undefined-behaviour report) in build-sanitize/ and runs
# the whole test suite there. Exits non-zero on a build failure or on any failed test, a sanitizer
# report included (the test that hit it fails). Slow: on 2 cores the suite took 42 min (about 3 min
# without sanitizers); the longest tests are the speculative zoo's, 4-7 min each.
#   usage: tools/sanitize.sh [CTEST_ARGS...]     e.g. tools/sanitize.sh -R Server
# Environment: GRAFT_SANITIZE_JOBS (build and test parallelism, default: the cores).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build-sanitize"
jobs="${GRAFT_SANITIZE_JOBS:-$(nproc)}"
# (The -O0 compile check of the kernels is for the default build; here it would only cost time.)
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRAFT_SANITIZE=ON -DGRAFT_CHECK_O0_KERNELS=OFF >/dev/null
cmake --build "$build" -j "$jobs"
# Leaks are reported at exit (LeakSanitizer, part of ASan); halt_on_error makes a report fail the test.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=0:detect_stack_use_after_return=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
ctest --test-dir "$build" --output-on-failure -j "$jobs" "$@"
