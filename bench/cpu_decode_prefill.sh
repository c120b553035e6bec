#!/usr/bin/env bash
# Reproduces the CPU figures in docs/benchmarks.md: a synthetic model (default the ~250M-parameter
# llama bench-250m: d=1024, 16 layers) in each weight type, `graft bench` with the given thread
# count; decode is reported as a fraction of the read bandwidth measured in the same process,
# right before.
# usage: bench/cpu_decode_prefill.sh [--preset NAME] [--synth-args "..."] [BUILD_DIR] [THREADS] [TYPES...]
#   --preset NAME   any `graft synth` preset, e.g. bench-250m (default) or qwen3-1.7b
#   --synth-args S  extra `graft synth` flags (e.g. "--output-type q8_0"); part of the cached file name
set -euo pipefail
preset=bench-250m
synth_args=""
while [[ $# -gt 0 && $1 == --* ]]; do
  case "$1" in
    --preset) preset=$2; shift 2 ;;
    --synth-args) synth_args=$2; shift 2 ;;
    *) echo "cpu_decode_prefill.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
build=${1:-build}
threads=${2:-2}
shift $(( $# > 2 ? 2 : $# ))
types=("$@")
((${#types[@]})) || types=(q8_0 q4_0)
graft="$build/bin/graft"
# shellcheck source=bench_model.sh
source "$(dirname "$0")/bench_model.sh"
printf "%-12s %-6s %9s %12s %12s %10s %14s %10s\n" preset type "GiB" prefill_tps decode_tps "bw_GB/s" decode_of_bw "pf/dec"
for t in "${types[@]}"; do
  m=$(bench_model "$build" "$preset" "$t" "$synth_args") || continue
  "$graft" bench --model "$m" -t "$threads" --prompt-tokens 256 --gen-tokens 64 --reps 3 --json 2>/dev/null |
    python3 -c '
import json, os, sys
r = json.load(sys.stdin)
print("%-12s %-6s %9.2f %12.1f %12.2f %10.2f %13.1f%% %10.2f" % (sys.argv[1], sys.argv[2], os.path.getsize(sys.argv[3]) / 2**30,
      r["prefill_mean"], r["decode_mean"], r["read_bandwidth_bytes_per_second"] / 1e9,
      100 * r["decode_fraction_of_bandwidth"], r["prefill_over_decode"]))' "$preset" "$t" "$m"
done
