#!/usr/bin/env bash
# Runs on the device machine's GPU (tools/device/README.md), from the repository root, with what
# tools/device/gpu_bundle.sh lists carried along. Issue 37's GPU check: the device as the driver
# and as graft see it; the CUDA backend's and kernel library's tests (each op, format kernel and
# the KV store against the CPU's); the conformance suite on cuda (forward passes of every type
# against the CPU, graphs, speculation equal to plain greedy); then decode and prefill tok/s with
# the achieved fraction of the device's copy bandwidth on Qwen3-8B-shaped Q1_0, Q4_K and Q8_0
# models made there by `graft synth`, and speculative decoding of the zoo model. Each step writes
# its file in $OUT when it ends and is bounded by `timeout`, so a run cut short still returns the
# steps done.
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
for t in test_cuda_backend test_conformance; do
  timeout 150 build/bin/$t --gtest_brief=1 > "/tmp/$t.log" 2>&1
  rc=$?
  ((rc == 0)) || status=1
  { echo "== $t: exit $rc"; cat "/tmp/$t.log"; } >> "$out/tests.log"
  note "$t: exit $rc, $(grep -E '^\[ +(PASSED|FAILED|SKIPPED) +\] [0-9]+ test' "/tmp/$t.log" | tr '\n' ' ')"
done

# Decode and prefill on 8B shapes: weight bytes x tok/s against the device's copy bandwidth. Q1_0
# and Q8_0 should synthesize in seconds on the machine's 16 cores; Q4_K's quantizer takes minutes
# (10% of an 8B in 150 s on 2 shared cores here), so it goes last, after the zoo, with what time is left.
printf '[backend]\nname = "cuda"\n' > /tmp/cuda.toml
bench_8b() {  # type, synth timeout
  local type=$1 model=/tmp/qwen3-8b-$1.gguf
  if ! timeout "$2" build/bin/graft synth --preset qwen3-8b --type "$type" --out "$model" > "$out/synth-$type.log" 2>&1; then
    status=1
    note "synth qwen3-8b $type: failed at ${SECONDS}s ($(tail -c 200 "$out/synth-$type.log" | tr '\r\n' '  '))"
    rm -f "$model"
    return
  fi
  timeout 90 build/bin/graft bench --model "$model" --profile /tmp/cuda.toml --prompt-tokens 512 --gen-tokens 64 \
    --reps 2 --bandwidth-mib 2048 --json > "$out/bench-$type.json" 2> "$out/bench-$type.log" || status=1
  note "bench qwen3-8b $type: $(python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); print("decode %.1f tok/s, prefill %.0f tok/s, %.1f%% of %.0f GB/s" % (o["decode_mean"], o["prefill_mean"], 100*o["decode_fraction_of_bandwidth"], o["read_bandwidth_bytes_per_second"]/1e9))' "$out/bench-$type.json" 2>/dev/null || tail -1 "$out/bench-$type.log") at ${SECONDS}s"
  rm -f "$model"
}
bench_8b q1_0 60
bench_8b q8_0 60

# Speculative decoding of the zoo model on the GPU: plain, then ngram + mtp (the same tokens);
# greedy (ids come back), then sampled (temperature 0.8, top_k 40: candidates come back).
for sampling in "" "--temp 0.8 --seed 1"; do
  for draft in "" "--draft ngram,mtp"; do
    f="$out/zoo${draft:+-spec}${sampling:+-sampled}.txt"
    timeout 45 build/bin/graft bench --model models/zoo-qwen3-4x256.gguf --profile /tmp/cuda.toml \
      -f bench/spec/prompts/code_repeat/01_read_lines_words.txt --gen-tokens 256 --reps 2 \
      --bandwidth-mib 256 $draft $sampling > "$f" 2>&1 || status=1
    note "zoo ${draft:-plain}${sampling:+ sampled}: $(grep -E '^decode:' "$f" || tail -1 "$f")"
  done
done

bench_8b q4_k 240
note "done at ${SECONDS}s"
exit $status
