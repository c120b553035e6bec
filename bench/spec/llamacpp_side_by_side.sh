#!/usr/bin/env bash
# Speculative decoding, graft against llama.cpp (node-llama-cpp's prebuilt CPU build, pinned 3.21.1,
# tools/crosscheck/) on the corpus of bench/spec/prompts/ with the zoo model. Per prompt, in this
# order: llama.cpp plain, llama.cpp with node-llama-cpp's n-gram token predictor (one node process,
# tools/crosscheck/llamacpp_spec_bench.mjs), graft --no-draft, graft --draft ngram; all greedy, -n N,
# the same threads, context 512 and f16 KV cache. Then bench/spec/llamacpp_summarize.py prints one
# markdown table per category and an overall one: decode tok/s of the four, graft-ngram /
# llama-ngram, each engine's ngram over its own plain, tokens per round, and whether the four
# generated the same ids. README.md (here) says what llama.cpp's side can and cannot run.
#
# usage: bench/spec/llamacpp_side_by_side.sh [--build DIR] [--threads T] [--limit K] [--category C[,C...]]
#            [--n N] [--reps R] [--model FILE] [--out DIR] [--llama-cpu NAME|all]
#            [--llama-lookup prompt|context] [--llama-args "ARGS"] [--llama-fix-predictions]
#   --build     build tree with bin/graft (default: the repository's build/)
#   --threads   CPU threads per run, both engines (default 2)
#   --limit     only the first K prompts of each category (default: all 12)
#   --category  only these categories (code_new, code_repeat, structured, free; comma-separated)
#   --n         tokens to generate (default 256)
#   --reps      passes over the selection, one after the other (default 1)
#   --model     the GGUF graft runs (default models/zoo-qwen3-4x256.gguf); llama.cpp reads a copy
#               without its MTP (nextn) block (tools/crosscheck/gguf_strip_nextn.mjs), made in --out
#   --out       directory for every run's raw output and the summary (default
#               BUILD/bench-spec/llamacpp-YYYYmmdd-HHMMSS; reused if it exists, old runs removed)
#   --llama-cpu the one ggml CPU variant llama.cpp may load (default haswell when the CPU has
#               AVX2/FMA/F16C; "all": ggml picks its best, as a user's llama.cpp does: use it for
#               speed figures, as docs/benchmarks.md does)
#   --llama-lookup
#               prompt (default): node-llama-cpp's InputLookupTokenPredictor with its defaults
#               (looks up the prompt only); context: the predictor of llamacpp_spec_bench.mjs that
#               looks up prompt + generated tokens with graft's ngram defaults (2..8, 16 tokens)
#   --llama-args extra arguments for llamacpp_spec_bench.mjs (e.g. "--predict-max 1")
#   --llama-fix-predictions
#               run llama.cpp through a copy of node-llama-cpp with the one-line fix to its
#               speculative loop (3.21.1 validates at most one predicted token per round; see
#               README.md), cached next to the CPU-variant copy
#
# Measurement: on a 2-core machine any other running process (even a parser starting up) slows a
# 2-thread decode several-fold, so every engine writes its JSON to a file and nothing is parsed
# until all runs are done; do not run it next to a build.
set -euo pipefail
build=""
threads=2
limit=0
categories=""
n=256
reps=1
model=""
out=""
llama_cpu=""
llama_lookup=prompt
llama_args=""
llama_fix=0
die() { echo "llamacpp_side_by_side.sh: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  [[ $1 == --* ]] || die "unexpected argument $1 (options only; see the usage at the top of the script)"
  if [[ $1 == --llama-fix-predictions ]]; then llama_fix=1; shift; continue; fi
  [[ $# -ge 2 ]] || die "$1 needs a value"
  case "$1" in
    --build) build=$2 ;;
    --threads) threads=$2 ;;
    --limit) limit=$2 ;;
    --category) categories=$2 ;;
    --n) n=$2 ;;
    --reps) reps=$2 ;;
    --model) model=$2 ;;
    --out) out=$2 ;;
    --llama-cpu) llama_cpu=$2 ;;
    --llama-lookup) llama_lookup=$2 ;;
    --llama-args) llama_args=$2 ;;
    *) die "unknown option $1" ;;
  esac
  shift 2
done
for v in threads limit n reps; do
  [[ ${!v} =~ ^[0-9]+$ ]] || die "--$v wants a whole number, not '${!v}'"
done
((threads > 0 && n > 1 && reps > 0)) || die "need --threads >= 1, --n >= 2, --reps >= 1"
[[ $llama_lookup == prompt || $llama_lookup == context ]] || die "--llama-lookup must be prompt or context"
read -r -a extra_llama_args <<<"$llama_args"

abspath() { [[ $1 == /* ]] && echo "$1" || echo "$PWD/$1"; }
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
xc="$root/tools/crosscheck"
if [[ -n $build ]]; then build=$(abspath "$build"); else build="$root/build"; fi
if [[ -n $model ]]; then model=$(abspath "$model"); else model="$root/models/zoo-qwen3-4x256.gguf"; fi
if [[ -n $out ]]; then out=$(abspath "$out"); else out="$build/bench-spec/llamacpp-$(date +%Y%m%d-%H%M%S)"; fi
cd "$root"

graft="$build/bin/graft"
[[ -x $graft ]] || die "no graft binary at $graft (build it, or pass --build DIR)"
[[ -f $model ]] || die "no model at $model"
[[ -d $xc/node_modules/node-llama-cpp ]] || die "run tools/crosscheck/setup.sh first (node-llama-cpp is not installed)"
# shellcheck source-path=SCRIPTDIR source=../../tools/crosscheck/llama_cpu.sh
source "$xc/llama_cpu.sh"
llama_cpu_select "$xc" "$llama_cpu" llamacpp_side_by_side.sh || exit 2

if ((llama_fix)); then
  # A copy of the module tree in use with LlamaContextSequence._speculativeEvaluate fixed: it
  # compares prediction i with the output sampled at i - 1 through `validatedTokens`, an array
  # nothing ever fills, so every prediction after the first is refuted. The fix reads the output
  # of the prediction validated just before instead.
  src_nm=${CROSSCHECK_NODE_MODULES:-$xc/node_modules}
  fdir="$xc/.llama-cpu/${LLAMA_CPU}-fixed-predictions"
  if [[ ! -f $fdir/.complete ]]; then
    rm -rf "$fdir" && mkdir -p "$fdir"
    (cd "$(dirname "$src_nm")" && tar cf - --exclude='node_modules/@node-llama-cpp/linux-x64-*' \
        --exclude='node_modules/@node-llama-cpp/linux-arm*' node_modules) | tar xf - -C "$fdir"
    js="$fdir/node_modules/node-llama-cpp/dist/evaluator/LlamaContext/LlamaContext.js"
    sed -i 's/: validatedTokens\.at(-1)?\.\[1\];/: this._loadedTokenPredictions.at(-1)?.[1]?.[0];/' "$js"
    grep -q 'this\._loadedTokenPredictions\.at(-1)?\.\[1\]?\.\[0\];' "$js" ||
      die "--llama-fix-predictions: the line to fix is not in $js (another node-llama-cpp version?)"
    touch "$fdir/.complete"
  fi
  export CROSSCHECK_NODE_MODULES="$fdir/node_modules"
fi

# shellcheck source-path=SCRIPTDIR source=select_prompts.sh
source "$here/select_prompts.sh"
select_prompts "$categories" "$limit"

mkdir -p "$out"
rm -f "$out"/*.json "$out"/*.err "$out/runs.tsv" "$out/summary.md"
lmodel="$out/$(basename "$model" .gguf)-no-nextn.gguf"
node "$xc/gguf_strip_nextn.mjs" "$model" "$lmodel" >"$out/strip.log" 2>&1 ||
  { cat "$out/strip.log" >&2; die "gguf_strip_nextn.mjs failed on $model"; }

{
  echo "llamacpp_side_by_side.sh: ${#prompts[@]} prompts x $reps reps, n=$n, threads=$threads -> $out"
  echo "  graft:     $graft"
  echo "  llama.cpp: node-llama-cpp $(node -p "require('$xc/node_modules/node-llama-cpp/package.json').version")," \
    "CPU variant $LLAMA_CPU, lookup $llama_lookup${llama_args:+, args: $llama_args}$( ((llama_fix)) && echo ', predictions fix applied')"
} | tee "$out/settings.txt"
printf 'rep\tcategory\tprompt\tfile\n' >"$out/runs.tsv"

# run NAME CMD...: the command's stdout to $out/NAME.json, stderr to $out/NAME.err; stops the
# script on failure.
run() {
  local name=$1 rc=0 t0 t1
  shift
  t0=${EPOCHREALTIME/./}
  "$@" >"$out/$name.json" 2>"$out/$name.err" || rc=$?
  t1=${EPOCHREALTIME/./}
  if ((rc)); then
    { echo "llamacpp_side_by_side.sh: failed (exit $rc): $*"; echo "--- stderr:"; tail -20 "$out/$name.err"; } >&2
    exit 1
  fi
  printf ' %s %d.%03ds' "${name##*.}" $(((t1 - t0) / 1000000)) $((((t1 - t0) / 1000) % 1000))
}

for rep in $(seq "$reps"); do
  for f in "${prompts[@]}"; do
    category=$(basename "$(dirname "$f")")
    name=$(basename "$f" .txt)
    base="r$rep.$category.$name"
    printf '%s\t%s\t%s\t%s\n' "$rep" "$category" "$name" "$f" >>"$out/runs.tsv"
    printf '%-11s %-22s rep %d:' "$category" "$name" "$rep"
    run "$base.llama" node "$xc/llamacpp_spec_bench.mjs" --model "$lmodel" --file "$f" -n "$n" --threads "$threads" \
      --ctx 512 --batch 256 --kv-type f16 --modes "plain ngram" --lookup "$llama_lookup" "${extra_llama_args[@]}"
    run "$base.graft-none" "$graft" run -m "$model" -c 512 -f "$f" -n "$n" --temp 0 -t "$threads" --json --no-draft
    run "$base.graft-ngram" "$graft" run -m "$model" -c 512 -f "$f" -n "$n" --temp 0 -t "$threads" --json --draft ngram
    echo
  done
done
echo
rc=0
python3 "$here/llamacpp_summarize.py" "$out" >"$out/summary.md" || rc=$?
cat "$out/summary.md"
echo
echo "llamacpp_side_by_side.sh: raw outputs and summary.md in $out"
exit "$rc"
