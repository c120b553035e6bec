#!/usr/bin/env bash
# graft against llama.cpp on the same synthetic GGUF files: `graft bench` and
# tools/crosscheck/llamacpp_bench.mjs (node-llama-cpp's prebuilt CPU llama.cpp, pinned 3.21.1)
# alternating run for run, same prompt length, decode length, repetitions, thread count and KV type
# (f16), so the shared machine's swings hit both alike. Prints each run, then per type the median
# of graft/llama.cpp for prefill and decode over the pairs.
# usage: bench/llamacpp_side_by_side.sh [--preset NAME] [--pairs N] [--threads T] [--llama-cpu NAME|all]
#                                       [BUILD_DIR] [TYPES...]
#   --llama-cpu  the ggml CPU variant llama.cpp may load: "all" (the default) lets ggml pick the
#                best variant for this CPU, as a user's llama.cpp does; a name (haswell, zen4, ...)
#                pins one (e.g. haswell beside GRAFT_CPU_SIMD=avx2). Each llama.cpp run reports the
#                variant it loaded (read from its own memory map) in the "variant" column.
#   --llama-native  run llama.cpp's own llama-bench built natively for this CPU
#                (tools/crosscheck/build_llama_native.sh, from the same pinned release's sources)
#                instead of the prebuilt library under node: no JavaScript round trip per token and
#                no node threads beside ggml's; prefill of 256 tokens, decode of 64 at depth 256,
#                3 repetitions, its defaults otherwise ("variant" column: native, or native-noamx where the
#                build left ggml's AMX kernels out)
#   --llama-native-avx2  the same built for AVX2/FMA/F16C only (build_llama_native.sh avx2), to set
#                beside GRAFT_CPU_SIMD=avx2 ("variant" column: native-avx2)
#   needs: tools/crosscheck/setup.sh run once (npm ci of the pinned package, offline afterwards)
set -euo pipefail
preset=bench-250m
pairs=3
threads=2
llama_cpu=all
llama_native=0
while [[ $# -gt 0 && $1 == --* ]]; do
  case "$1" in
    --preset) preset=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --llama-cpu) llama_cpu=$2; shift 2 ;;
    --llama-native) llama_native=1; shift ;;
    --llama-native-avx2) llama_native=2; shift ;;
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
if ((llama_native)); then
  level=native suffix=""
  ((llama_native == 2)) && level=avx2 suffix=-avx2
  llama_bench="$xc/.llama-native$suffix/bin/llama-bench"
  [[ -x $llama_bench ]] || { echo "llamacpp_side_by_side.sh: run tools/crosscheck/build_llama_native.sh $level first" >&2; exit 2; }
  # A native build on an AMX CPU leaves ggml's AMX kernels out (build_llama_native.sh says why).
  grep -q mno-amx "$llama_bench.flags" 2>/dev/null && suffix+=-noamx
fi
# shellcheck source=bench_model.sh
source "$here/bench_model.sh"
results=$(mktemp)
trap 'rm -f "$results"' EXIT
printf "%-12s %-6s %-9s %4s %12s %12s %8s %s\n" preset type engine pair prefill_tps decode_tps pf/dec variant
for t in "${types[@]}"; do
  m=$(bench_model "$build" "$preset" "$t") || exit 1
  for i in $(seq "$pairs"); do
    for engine in graft llama.cpp; do
      if [[ $engine == graft ]]; then
        out=$("$build/bin/graft" bench --model "$m" -t "$threads" --prompt-tokens 256 --gen-tokens 64 --reps 3 --json 2>/dev/null)
      elif ((llama_native)); then
        out=$("$llama_bench" -m "$m" -t "$threads" -p 256 -n 64 -d 0,256 -r 3 -o json 2>/dev/null | python3 -c '
import json, sys
rows = json.load(sys.stdin)
pf = [r["avg_ts"] for r in rows if r["n_prompt"] == 256 and r["n_gen"] == 0 and r["n_depth"] == 0]
dec = [r["avg_ts"] for r in rows if r["n_gen"] == 64 and r["n_prompt"] == 0 and r["n_depth"] == 256]
print(json.dumps({"prefill_mean": pf[0], "decode_mean": dec[0], "cpu_variant": "native" + sys.argv[1]}))' "$suffix")
      else
        out=$(node "$xc/llamacpp_bench.mjs" --model "$m" --threads "$threads" --prompt-tokens 256 --gen-tokens 64 --reps 3 \
          --kv-type f16)
      fi
      python3 -c '
import json, os, sys
r = json.loads(sys.argv[5])
print("%-12s %-6s %-9s %4s %12.1f %12.2f %8.2f %s" % (sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4],
      r["prefill_mean"], r["decode_mean"], r["prefill_mean"] / r["decode_mean"],
      r.get("cpu_variant", "GRAFT_CPU_SIMD=" + os.environ.get("GRAFT_CPU_SIMD", "auto"))))' \
        "$preset" "$t" "$engine" "$i" "$out" | tee -a "$results"
    done
  done
done
echo
python3 - "$results" <<'PY'
import statistics, sys
runs, variants = {}, set()
for line in open(sys.argv[1]):
    f = line.split()
    runs.setdefault((f[0], f[1], f[3]), {})[f[2]] = (float(f[4]), float(f[5]))
    if f[2] == "llama.cpp" and len(f) > 7: variants.add(f[7])
print("llama.cpp ran its CPU variant(s): " + (", ".join(sorted(variants)) or "unknown"))
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
