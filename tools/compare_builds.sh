#!/usr/bin/env bash
# Two graft builds, same outputs? Greedy ids (`graft run --temp 0 --json`) and perplexity of the
# zoo model and of the cross-check's synthetic models (tools/crosscheck/compare.sh's shapes, llama,
# qwen3 and tied qwen3, every weight type given), with f32 and f16 KV. For a change that must not
# change a bit (a refactor): every line must say "same".
#
#   tools/compare_builds.sh OLD_BUILD NEW_BUILD [TYPES...]    (default types: every quant plugin of NEW)
#
# Exit status: 0 when everything is the same, 1 when anything differs, 2 for a usage error.
set -euo pipefail

[[ $# -ge 2 ]] || { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
OLD=$1 NEW=$2
shift 2
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TYPES=("$@")
if [[ ${#TYPES[@]} -eq 0 ]]; then
  for so in "$NEW"/lib/graft/plugins/libgraft_quant_*.so; do
    t=${so##*/libgraft_quant_}
    TYPES+=("${t%.so}")
  done
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
SHAPE=(--n-embd 256 --n-layer 4 --n-head 4 --n-head-kv 2 --n-ff 512 --n-vocab 1000)
TEXT="$ROOT/tests/fixtures/zoo-tokenizer-val.txt"
PROMPT_IDS="1 17 230 5 99 412 8 61"
diffs=0

# One model: greedy ids at both KV types and perplexity, old against new.
check() {
  local label=$1 model=$2 ctx=$3
  for kv in f32 f16; do
    local out=()
    for build in "$OLD" "$NEW"; do
      out+=("$("$build/bin/graft" run --model "$model" --prompt-ids "$PROMPT_IDS" --temp 0 -n 48 -c "$ctx" -t 2 \
        --plugin-dir "$build/lib/graft/plugins" --json 2> /dev/null | python3 -c \
        'import json,sys; print(" ".join(map(str, json.load(sys.stdin)["generated_ids"])))' \
        | sed 's/^/ids /')")
      [[ -n ${out[-1]} ]] || out[-1]="failed"
    done
    if [[ ${out[0]} == "${out[1]}" && ${out[0]} != failed ]]; then
      echo "same      $label kv=$kv greedy ($(wc -w <<< "${out[0]}") words)"
    else
      echo "DIFFERENT $label kv=$kv greedy: old '${out[0]:0:80}' new '${out[1]:0:80}'"
      diffs=$((diffs + 1))
    fi
  done
  local ppl=()
  for build in "$OLD" "$NEW"; do
    ppl+=("$("$build/bin/graft" perplexity --model "$model" --file "$TEXT" --ctx "$ctx" --chunks 4 -t 2 \
      --plugin-dir "$build/lib/graft/plugins" 2> /dev/null | grep 'Final estimate' || echo failed)")
  done
  if [[ ${ppl[0]} == "${ppl[1]}" && ${ppl[0]} != failed ]]; then
    echo "same      $label perplexity: ${ppl[0]}"
  else
    echo "DIFFERENT $label perplexity: old '${ppl[0]}' new '${ppl[1]}'"
    diffs=$((diffs + 1))
  fi
}

check zoo-qwen3-4x256 "$ROOT/models/zoo-qwen3-4x256.gguf" 256
for type in "${TYPES[@]}"; do
  for variant in llama qwen3 qwen3-tied; do
    arch=${variant%-tied}
    seed=1
    [[ $arch == qwen3 ]] && seed=2
    tied=()
    [[ $variant == *-tied ]] && tied=(--tied) && seed=3
    model="$WORK/$variant-$type.gguf"
    if ! "$NEW/bin/graft" synth --arch "$arch" "${SHAPE[@]}" "${tied[@]}" --type "$type" --seed "$seed" \
         --out "$model" > /dev/null 2>&1; then
      echo "skipped   $variant $type: graft synth cannot write this type"
      continue
    fi
    check "$variant-$type" "$model" 256
  done
done
echo "$diffs difference(s)"
[[ $diffs -eq 0 ]]
