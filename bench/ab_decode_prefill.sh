#!/usr/bin/env bash
# Two builds side by side on the same synthetic models: `graft bench` of OLD and NEW alternating,
# run for run, so the shared machine's swings hit both alike (compare within a pair, not across).
# Decode is reported as a fraction of the read bandwidth each run measures right before.
# usage: bench/ab_decode_prefill.sh [--preset NAME] [--pairs N] [--threads T] OLD_BUILD NEW_BUILD TYPES...
#   OLD_BUILD / NEW_BUILD: build folders (bin/graft and lib/graft/plugins inside), e.g. a second
#   worktree of an older commit built with tools/test.sh's cmake line
#   models: NEW_BUILD/bench-models/PRESET-TYPE.gguf, made with NEW_BUILD's `graft synth` if missing
set -euo pipefail
preset=bench-250m
pairs=3
threads=2
while [[ $# -gt 0 && $1 == --* ]]; do
  case "$1" in
    --preset) preset=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    *) echo "ab_decode_prefill.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
if [[ $# -lt 3 ]]; then
  echo "usage: bench/ab_decode_prefill.sh [--preset NAME] [--pairs N] [--threads T] OLD_BUILD NEW_BUILD TYPES..." >&2
  exit 2
fi
old=$1 new=$2
shift 2
# shellcheck source=bench_model.sh
source "$(dirname "$0")/bench_model.sh"
printf "%-12s %-6s %-4s %4s %12s %12s %13s %8s\n" preset type side pair prefill_tps decode_tps decode_of_bw pf/dec
for t in "$@"; do
  m=$(bench_model "$new" "$preset" "$t") || continue
  for i in $(seq "$pairs"); do
    for side in old new; do
      build=$old
      [[ $side == new ]] && build=$new
      "$build/bin/graft" bench --model "$m" -t "$threads" --prompt-tokens 256 --gen-tokens 64 --reps 3 --json 2>/dev/null |
        python3 -c '
import json, sys
r = json.load(sys.stdin)
print("%-12s %-6s %-4s %4s %12.1f %12.2f %12.1f%% %8.2f" % (sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4],
      r["prefill_mean"], r["decode_mean"], 100 * r["decode_fraction_of_bandwidth"], r["prefill_over_decode"]))' \
        "$preset" "$t" "$side" "$i"
    done
  done
done
