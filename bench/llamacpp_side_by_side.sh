#!/usr/bin/env bash
# graft against llama.cpp on the same synthetic GGUF files: `graft bench` and
# tools/crosscheck/llamacpp_bench.mjs (node-llama-cpp's prebuilt CPU llama.cpp, pinned 3.21.1)
# alternating run for run, same prompt length, decode length, repetitions, thread count and KV type
# (f16), so the shared machine's swings hit both alike. Prints each run, then per type the median
# of graft/llama.cpp for prefill and decode over the pairs.
# usage: bench/llamacpp_side_by_side.sh [--preset NAME] [--pairs N] [--threads T] [--llama-cpu NAME|all]
#                                       [BUILD_DIR] [TYPES...]
#   --llama-cpu  the one ggml CPU variant llama.cpp may load (default: haswell, its AVX2 build,
#                when the CPU has AVX2/FMA/F16C, as tools/crosscheck/compare.sh; "all" lets ggml
#                pick the best variant for this CPU)
#   needs: tools/crosscheck/setup.sh run once (npm ci of the pinned package, offline afterwards)
set -euo pipefail
preset=bench-250m
pairs=3
threads=2
llama_cpu=""
while [[ $# -gt 0 && $1 == --* ]]; do
  case "$1" in
    --preset) preset=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --llama-cpu) llama_cpu=$2; shift 2 ;;
    *) echo "llamacpp_side_by_side.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
build=${1:-build}
shift $(( $# > 0 ? 1 : 0 ))
types=("$@")
((${#types[@]})) || types=(q1_0 q2_k q4_k q8_0)
here=$(cd "$(dirname "$0")" && pwd)
xc="$here/../tools/crosscheck"
[[ -d "$xc/node_modules/node-llama-cpp" ]] || {
  echo "llamacpp_side_by_side.sh: run tools/crosscheck/setup.sh first (node-llama-cpp is not installed)" >&2
  exit 2
}
# shellcheck source=../tools/crosscheck/llama_cpu.sh
source "$xc/llama_cpu.sh"
llama_cpu_select "$xc" "$llama_cpu" llamacpp_side_by_side.sh || exit 2
# shellcheck source=bench_model.sh
source "$here/bench_model.sh"
results=$(mktemp)
trap 'rm -f "$results"' EXIT
printf "%-12s %-6s %-9s %4s %12s %12s %8s\n" preset type engine pair prefill_tps decode_tps pf/dec
for t in "${types[@]}"; do
  m=$(bench_model "$build" "$preset" "$t") || exit 1
  for i in $(seq "$pairs"); do
    for engine in graft llama.cpp; do
      if [[ $engine == graft ]]; then
        out=$("$build/bin/graft" bench --model "$m" -t "$threads" --prompt-tokens 256 --gen-tokens 64 --reps 3 --json 2>/dev/null)
      else
        out=$(node "$xc/llamacpp_bench.mjs" --model "$m" --threads "$threads" --prompt-tokens 256 --gen-tokens 64 --reps 3 \
          --kv-type f16)
      fi
      python3 -c '
import json, sys
r = json.loads(sys.argv[5])
print("%-12s %-6s %-9s %4s %12.1f %12.2f %8.2f" % (sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4],
      r["prefill_mean"], r["decode_mean"], r["prefill_mean"] / r["decode_mean"]))' \
        "$preset" "$t" "$engine" "$i" "$out" | tee -a "$results"
    done
  done
done
echo
python3 - "$results" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    f = line.split()
    runs.setdefault((f[0], f[1], f[3]), {})[f[2]] = (float(f[4]), float(f[5]))
ratios = {}
for (preset, t, _), e in runs.items():
    g, l = e["graft"], e["llama.cpp"]
    ratios.setdefault((preset, t), []).append((g[0] / l[0], g[1] / l[1]))
print("%-12s %-6s %5s %30s %30s" % ("preset", "type", "pairs", "graft/llama.cpp prefill med [min-max]",
                                     "decode med [min-max]"))
for (preset, t), v in ratios.items():
    p, d = [x[0] for x in v], [x[1] for x in v]
    print("%-12s %-6s %5d %18.2f [%4.2f-%4.2f] %18.2f [%4.2f-%4.2f]" % (preset, t, len(v), statistics.median(p), min(p),
          max(p), statistics.median(d), min(d), max(d)))
PY
