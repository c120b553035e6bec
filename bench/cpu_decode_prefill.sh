#!/usr/bin/env bash
# Reproduces the CPU figures in docs/benchmarks.md: a synthetic ~250M-parameter llama (d=1024,
# 16 layers) in each weight type, `graft bench` with the given thread count; decode is reported
# as a fraction of the read bandwidth measured in the same process, right before.
# usage: bench/cpu_decode_prefill.sh [BUILD_DIR] [THREADS] [TYPES...]
set -euo pipefail
build=${1:-build}
threads=${2:-2}
shift $(( $# > 2 ? 2 : $# ))
types=("$@")
((${#types[@]})) || types=(q8_0 q4_0)
graft="$build/bin/graft"
models="$build/bench-models"
mkdir -p "$models"
printf "%-6s %12s %12s %10s %14s %10s\n" type prefill_tps decode_tps "bw_GB/s" decode_of_bw "pf/dec"
for t in "${types[@]}"; do
  m="$models/bench-250m-$t.gguf"
  [[ -f $m ]] || "$graft" synth --preset bench-250m --type "$t" --out "$m" >/dev/null 2>&1
  "$graft" bench --model "$m" -t "$threads" --prompt-tokens 256 --gen-tokens 64 --reps 3 --json 2>/dev/null |
    python3 -c '
import json, sys
r = json.load(sys.stdin)
print("%-6s %12.1f %12.2f %10.2f %13.1f%% %10.2f" % (sys.argv[1], r["prefill_mean"], r["decode_mean"],
      r["read_bandwidth_bytes_per_second"] / 1e9, 100 * r["decode_fraction_of_bandwidth"], r["prefill_over_decode"]))' "$t"
done
