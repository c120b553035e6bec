#!/usr/bin/env bash
# Reproduces the CPU figures in docs/benchmarks.md: a synthetic model (default the ~250M-parameter
# llama bench-250m: d=1024, 16 layers) in each weight type, `graft bench` with the given thread
# count; decode is reported as a fraction of the read bandwidth measured in the same process,
# right before.
# usage: bench/cpu_decode_prefill.sh [--preset NAME] [--synth-args "..."] [--rounds N] [BUILD_DIR] [THREADS] [TYPES...]
#   --preset NAME   any `graft synth` preset, e.g. bench-250m (default) or qwen3-1.7b
#   --synth-args S  extra `graft synth` flags (e.g. "--output-type q8_0"); part of the cached file name
#   --rounds N      measure every type N times, round by round (each round runs every type once, so
#                   a slow spell of the shared machine falls on all types alike), then print the
#                   median, lowest and highest of each type's decode fraction and prefill / decode
set -euo pipefail
preset=bench-250m
synth_args=""
rounds=1
while [[ $# -gt 0 && $1 == --* ]]; do
  case "$1" in
    --preset) preset=$2; shift 2 ;;
    --synth-args) synth_args=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
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
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "cpu_decode_prefill.sh: --rounds takes a positive whole number" >&2; exit 2; }
models=()
for t in "${types[@]}"; do models+=("$(bench_model "$build" "$preset" "$t" "$synth_args")") || exit 1; done
results=$(mktemp)
trap 'rm -f "$results"' EXIT
printf "%-12s %-6s %5s %9s %12s %12s %10s %14s %10s\n" preset type round "GiB" prefill_tps decode_tps "bw_GB/s" decode_of_bw "pf/dec"
for ((r = 1; r <= rounds; r++)); do
  for i in "${!types[@]}"; do
    t=${types[$i]} m=${models[$i]}
    "$graft" bench --model "$m" -t "$threads" --prompt-tokens 256 --gen-tokens 64 --reps 3 --json 2>/dev/null |
      python3 -c '
import json, os, sys
r = json.load(sys.stdin)
print("%-12s %-6s %5s %9.2f %12.1f %12.2f %10.2f %13.1f%% %10.2f" % (sys.argv[1], sys.argv[2], sys.argv[4],
      os.path.getsize(sys.argv[3]) / 2**30, r["prefill_mean"], r["decode_mean"],
      r["read_bandwidth_bytes_per_second"] / 1e9, 100 * r["decode_fraction_of_bandwidth"], r["prefill_over_decode"]))' \
        "$preset" "$t" "$m" "$r" | tee -a "$results"
  done
done
if ((rounds > 1)); then
  echo
  python3 - "$results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    rows.setdefault((f[0], f[1]), []).append((float(f[7].rstrip("%")), float(f[8])))
print("%-12s %-6s %6s %26s %24s" % ("preset", "type", "rounds", "decode_of_bw med [min-max]", "pf/dec med [min-max]"))
for (preset, t), v in rows.items():
    fr, pd = [x[0] for x in v], [x[1] for x in v]
    print("%-12s %-6s %6d %10.1f%% [%5.1f-%5.1f] %10.2f [%4.2f-%4.2f]" % (preset, t, len(v), statistics.median(fr), min(fr),
          max(fr), statistics.median(pd), min(pd), max(pd)))
PY
fi
