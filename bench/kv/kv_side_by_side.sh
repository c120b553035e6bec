#!/usr/bin/env bash
# Decode speed at depth with quantized KV caches, graft beside llama.cpp (issue 38's benchmark):
# the same synthetic model (bench-250m, Q8_0 weights, made by `graft synth`), the same threads,
# decode of G tokens after D tokens of context, the same K/V types (-ctk/-ctv on both), graft and
# llama.cpp alternating run for run. llama.cpp is its own llama-bench built natively from the pinned
# release (tools/crosscheck/build_llama_native.sh; the AVX2 build by default, which decodes fastest
# on the AVX-512 Xeon this was written on: docs/benchmarks.md), with flash attention on (llama.cpp
# needs it for a quantized V) and, with an f16 V, also off, the faster run kept. tq3 is graft's own
# type: llama.cpp has no column there.
# Prints every run, then per depth and K/V the medians, graft/llama.cpp, and graft's speed against
# its own f16 cache.
# usage: bench/kv/kv_side_by_side.sh [--depths 1024,4096,16384,32768] [--pairs N] [--threads T] [--gen G]
#                                    [--llama-build native|avx2] [BUILD_DIR] [K/V ...]
#   K/V defaults: f16/f16 q8_0/q8_0 q8_0/q4_0 q8_0/tq3
set -euo pipefail
depths=1024,4096,16384,32768
pairs=2
threads=2
gen=32
llama_build=avx2
while [[ $# -gt 0 && $1 == --* ]]; do
  case "$1" in
    --depths) depths=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --gen) gen=$2; shift 2 ;;
    --llama-build) llama_build=$2; shift 2 ;;
    *) echo "kv_side_by_side.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
build=${1:-build}
shift $(( $# > 0 ? 1 : 0 ))
kvs=("$@")
((${#kvs[@]})) || kvs=(f16/f16 q8_0/q8_0 q8_0/q4_0 q8_0/tq3)
here=$(cd "$(dirname "$0")" && pwd)
xc="$here/../../tools/crosscheck"
suffix=""
[[ $llama_build == avx2 ]] && suffix=-avx2
llama_bench="$xc/.llama-native$suffix/bin/llama-bench"
[[ -x $llama_bench ]] || { echo "kv_side_by_side.sh: run tools/crosscheck/build_llama_native.sh $llama_build first" >&2; exit 2; }
# shellcheck source=../bench_model.sh
source "$here/../bench_model.sh"
m=$(bench_model "$build" bench-250m q8_0) || exit 1
results=$(mktemp)
trap 'rm -f "$results"' EXIT
printf "%-7s %-10s %-9s %4s %10s\n" depth kv engine pair decode_tps
IFS=, read -r -a depth_list <<< "$depths"
for d in "${depth_list[@]}"; do
  for i in $(seq "$pairs"); do
    for kv in "${kvs[@]}"; do
      k=${kv%/*} v=${kv#*/}
      for engine in graft llama.cpp; do
        if [[ $engine == graft ]]; then
          tps=$("$build/bin/graft" bench --model "$m" -t "$threads" --prompt-tokens "$d" --gen-tokens "$gen" --reps 1 \
                  -ctk "$k" -ctv "$v" --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["decode_mean"])')
        else
          [[ $k == tq3 || $v == tq3 ]] && continue
          # At its best: with an f16 V both attention paths (flash attention off and on), the faster
          # kept; a quantized V needs flash attention.
          tps=0
          for fa in $([[ $v == f16 ]] && echo "0 1" || echo 1); do
            t=$("$llama_bench" -m "$m" -t "$threads" -p 0 -n "$gen" -d "$d" -r 1 -fa "$fa" -ctk "$k" -ctv "$v" -o json \
                  2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["avg_ts"])')
            tps=$(python3 -c "print(max($tps, $t))")
          done
        fi
        printf "%-7s %-10s %-9s %4s %10.2f\n" "$d" "$kv" "$engine" "$i" "$tps" | tee -a "$results"
      done
    done
  done
done
echo
python3 - "$results" <<'EOF'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    d, kv, engine, _, tps = line.split()
    runs[(int(d), kv, engine)].append(float(tps))
print(f"{'depth':>7} {'kv':<10} {'graft':>9} {'llama.cpp':>9} {'graft/llama':>11} {'vs graft f16':>12}")
for d in sorted({k[0] for k in runs}):
    f16 = statistics.median(runs[(d, "f16/f16", "graft")]) if runs[(d, "f16/f16", "graft")] else None
    for kv in dict.fromkeys(k[1] for k in runs if k[0] == d):
        g = statistics.median(runs[(d, kv, "graft")])
        l = statistics.median(runs[(d, kv, "llama.cpp")]) if runs[(d, kv, "llama.cpp")] else None
        print(f"{d:>7} {kv:<10} {g:>9.2f} {l if l is None else round(l, 2)!s:>9} "
              f"{'' if l is None else f'{g / l:.2f}x':>11} {'' if f16 is None else f'{g / f16:.2f}x':>12}")
EOF
