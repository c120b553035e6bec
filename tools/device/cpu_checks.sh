#!/usr/bin/env bash
# Runs on the device machine's CPU (tools/device/README.md), from the repository root, with the
# binaries and libraries that tools/device/cpu_bundle.sh lists carried along:
#   1. the CPU tests, at the SIMD levels this project's AVX2-only machine skips (AVX-512, AMX);
#   2. the kernels alone against the read probe (quant_bench, 1 and 2 threads);
#   3. issue 5's CPU benchmark with 2 threads (bench/cpu_decode_prefill.sh): the 250M model, then
#      the Qwen3-1.7B shapes if enough of the time limit is left.
# Each step writes its file in $OUT when it ends, so a run cut short still returns the steps done.
# usage: bash tools/device/cpu_checks.sh [LIMIT_SECONDS]   (default 570: the run's timeout_s less
#        a margin). The 1.7B step starts only with 330 s left, a guess: it synthesizes ~3.6 GB of
#        models first (`graft synth` uses every core; the Q2_K one alone took 4 min 54 s on this
#        project's 2 cores), then runs 8 benchmarks of ~15 s.
set -uo pipefail
limit=${1:-570}
source "$(dirname "${BASH_SOURCE[0]}")/device_tree.sh"

{
  date -u
  echo "cores: $(nproc)"
  lscpu
  echo "flags: $(grep -m1 '^flags' /proc/cpuinfo | grep -owE 'avx2|avx512f|avx512bw|avx512vl|avx512_vnni|avx512vbmi|amx_tile|amx_int8|amx_bf16' | tr '\n' ' ')"
} > "$out/cpu.txt" 2>&1
note "cpu: $(grep -m1 'Model name' "$out/cpu.txt" | sed 's/.*: *//'); $(grep '^flags:' "$out/cpu.txt")"

status=0
: > "$out/tests.log"
for t in test_cpu_ops test_quant test_kvstore_device; do
  build/bin/$t --gtest_brief=1 > "/tmp/$t.log" 2>&1
  rc=$?
  ((rc == 0)) || status=1
  { echo "== $t: exit $rc"; cat "/tmp/$t.log"; } >> "$out/tests.log"
  note "$t: exit $rc, $(grep -E '^\[ +(PASSED|FAILED|SKIPPED) +\] [0-9]+ test' "/tmp/$t.log" | tr '\n' ' ')"
done

build/bin/quant_bench --threads 1,2 --formats q1_0,q2_k,q4_k,q8_0 --k 1024,2816 --m 2048 --mib 64 --reps 5 \
  --prefill 64 > "$out/quant_bench.txt" 2>&1 || status=1
note "quant_bench: done at ${SECONDS}s"

bench/cpu_decode_prefill.sh --rounds 3 build 2 q1_0 q2_k q4_k q8_0 > "$out/bench_250m.txt" 2>&1 || status=1
note "bench 250m: done at ${SECONDS}s"

if ((limit - SECONDS >= 330)); then
  bench/cpu_decode_prefill.sh --preset qwen3-1.7b --rounds 2 build 2 q1_0 q2_k q4_k q8_0 > "$out/bench_1.7b.txt" 2>&1 ||
    status=1
  note "bench qwen3-1.7b: done at ${SECONDS}s"
else
  note "bench qwen3-1.7b: skipped (needs 330 s; $((limit - SECONDS)) s of the ${limit} s left)"
fi
exit $status
