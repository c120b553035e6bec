#!/usr/bin/env bash
# Runs on the device machine's GPU (tools/device/README.md), from the repository root, with what
# tools/device/gpu_bundle.sh lists carried along. Issue 37's GPU check, as far as the CUDA backend
# goes today: the device as the driver and as graft see it, then the CUDA backend's tests (each op
# against the CPU's, graph capture and replay). Each step writes its file in $OUT when it ends, so
# a run cut short still returns the steps done. (To come with the kernel library: the conformance
# suite, decode/prefill tok/s with achieved bandwidth on 8B-shaped Q1_0/Q4_K/Q8_0 models made there
# by `graft synth`, and speculative decoding on the zoo.)
# usage: bash tools/device/gpu_checks.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_tree.sh"

{
  date -u
  nvidia-smi 2>&1 || echo "nvidia-smi: not found"
  nvcc --version 2>&1 | tail -2
} > "$out/device.txt" 2>&1
if command -v nvidia-smi > /dev/null; then
  note "gpu: $(nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader 2>&1 | head -1)"
else
  note "gpu: no nvidia-smi on this machine"
fi
build/bin/graft plugins -v > "$out/plugins.txt" 2>&1
note "graft plugins: exit $?; $(grep -A1 'libgraft_backend_cuda' "$out/plugins.txt" | tail -1 | sed 's/^ *//')"

status=0
: > "$out/tests.log"
for t in test_cuda_backend; do
  build/bin/$t --gtest_brief=1 > "/tmp/$t.log" 2>&1
  rc=$?
  ((rc == 0)) || status=1
  { echo "== $t: exit $rc"; cat "/tmp/$t.log"; } >> "$out/tests.log"
  note "$t: exit $rc, $(grep -E '^\[ +(PASSED|FAILED|SKIPPED) +\] [0-9]+ test' "/tmp/$t.log" | tr '\n' ' ')"
done
note "done at ${SECONDS}s"
exit $status
