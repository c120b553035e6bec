#!/usr/bin/env bash
# Cross-check graft against llama.cpp (node-llama-cpp's prebuilt CPU build) on synthetic models:
# greedy tokens, perplexity, tokenizer ids. See docs/crosscheck.md.
#
#   tools/crosscheck/compare.sh [--graft BIN] [--work DIR] [--text FILE] [--ctx N] [--chunks K] [-n N]
#       [--types "f32 q8_0 q4_0"] [--kv f32|f16] [--llama-cpu NAME|all] [--tie-tol-f32 X]
#       [--tie-tol-rounded X] [--strict]
#       [--ppl-tol PCT] [--threads T] [--plugin-dir DIR] [--zoo FILE | --no-zoo]
#
#   --kv        KV-cache type on both sides (default f32: graft's f32 store is exact f32 attention and
#               so is llama.cpp's with f32 K/V; with f16, llama.cpp also rounds Q and the softmax
#               to f16 inside attention, which graft does not, so logits differ by ~1e-3)
#   --llama-cpu the one ggml CPU variant llama.cpp may load (default haswell = AVX2 when the CPU
#               has it, so llama.cpp computes the same bits on any such machine; "all" lets ggml
#               pick the best for this CPU, e.g. an AVX-512 or AMX build, whose f32/f16 results
#               differ from the AVX2 build's by up to ~2e-6 / ~2e-3 nats)
#   --tie-tol-f32, --tie-tol-rounded
#               a greedy mismatch passes only as a near-tie within this many nats: both engines'
#               gaps between the two tokens and their largest log-probability difference there.
#               f32 weights: default 0.001 (0.01 with --kv f16); weights whose kernels round the
#               activations (f16, bf16 to f16/bf16; q8_0, q4_0 to Q8_0 blocks): default 0.1, as
#               that rounding turns ~1e-7 accumulation-order differences into rare jumps of up to
#               ~6e-2 (docs/crosscheck.md)
#   --strict    any greedy mismatch fails
#   --zoo-quant "FTYPES"
#               also check the zoo model quantized BY LLAMA.CPP (llama_model_quantize in the prebuilt
#               libllama, llamacpp_quantize.c) to each llama_ftype: both engines read that file
#               (default "q8_0 q4_0"; e.g. "q8_0 q4_0 q4_k_m q2_k q1_0"; "" for none); FTYPE:pure
#               quantizes every matrix to the base type (llama-quantize --pure)
#   --zoo FILE  also check this trained model (default models/zoo-qwen3-4x256.gguf when present:
#               text prompts, -n 64, perplexity ctx 256 on tests/fixtures/zoo-tokenizer-val.txt)
#
# Exit status: 0 when every greedy run matches (or differs only at a confirmed near-tie), every
# perplexity agrees within --ppl-tol percent (default 1) and the tokenizers agree; 1 otherwise;
# 2 for a usage or setup error.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
GRAFT="$ROOT/build/bin/graft"
WORK=""
TEXT="/usr/lib/python3.11/shlex.py"
CTX=512
CHUNKS=-1
NPRED=32
TYPES="f32 q8_0 q4_0"
KV=f32
LLAMA_CPU=""
TIE_TOL_F32=""
TIE_TOL_ROUNDED=0.1
STRICT=0
PPL_TOL=1
THREADS=2
PLUGIN_ARGS=()
ZOO="$ROOT/models/zoo-qwen3-4x256.gguf"
ZOO_TEXT="$ROOT/tests/fixtures/zoo-tokenizer-val.txt"
ZOO_QUANT="q8_0 q4_0"

usage() {
  sed -n '2,35p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit 2
}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --graft) GRAFT="$2"; shift 2 ;;
    --work) WORK="$2"; shift 2 ;;
    --text) TEXT="$2"; shift 2 ;;
    --ctx) CTX="$2"; shift 2 ;;
    --chunks) CHUNKS="$2"; shift 2 ;;
    -n) NPRED="$2"; shift 2 ;;
    --types) TYPES="$2"; shift 2 ;;
    --kv) KV="$2"; shift 2 ;;
    --llama-cpu) LLAMA_CPU="$2"; shift 2 ;;
    --tie-tol-f32) TIE_TOL_F32="$2"; shift 2 ;;
    --tie-tol-rounded) TIE_TOL_ROUNDED="$2"; shift 2 ;;
    --strict) STRICT=1; shift ;;
    --ppl-tol|--tolerance) PPL_TOL="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --plugin-dir) PLUGIN_ARGS+=(--plugin-dir "$2"); shift 2 ;;
    --zoo) ZOO="$2"; shift 2 ;;
    --no-zoo) ZOO=""; shift ;;
    --zoo-quant) ZOO_QUANT="$2"; shift 2 ;;
    -h|--help) usage ;;
    *) echo "compare.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
[[ "$KV" == f32 || "$KV" == f16 ]] || { echo "compare.sh: --kv must be f32 or f16" >&2; exit 2; }
[[ -n "$TIE_TOL_F32" ]] || { if [[ "$KV" == f16 ]]; then TIE_TOL_F32=0.01; else TIE_TOL_F32=0.001; fi; }
[[ -x "$GRAFT" ]] || { echo "compare.sh: no graft binary at $GRAFT (build it, or pass --graft BIN)" >&2; exit 2; }
[[ -r "$TEXT" ]] || { echo "compare.sh: cannot read text file $TEXT (pass --text FILE)" >&2; exit 2; }
GRAFT="$(cd "$(dirname "$GRAFT")" && pwd)/$(basename "$GRAFT")"
if [[ ! -d "$HERE/node_modules/node-llama-cpp" ]]; then
  "$HERE/setup.sh" >&2 || { echo "compare.sh: setup.sh failed" >&2; exit 2; }
fi
[[ -n "$WORK" ]] || WORK="$(mktemp -d "${TMPDIR:-/tmp}/graft-crosscheck.XXXXXX")"
mkdir -p "$WORK"
WORK="$(cd "$WORK" && pwd)"
export NODE_LLAMA_CPP_SKIP_DOWNLOAD=true NODE_LLAMA_CPP_GPU=false

# llama.cpp CPU variant (tools/crosscheck/llama_cpu.sh): a cached copy of node_modules that offers
# ggml a single libggml-cpu-<variant>.so.
# shellcheck source=llama_cpu.sh
source "$HERE/llama_cpu.sh"
llama_cpu_select "$HERE" "$LLAMA_CPU" compare.sh || exit 2

# The graft side of the probe used to explain mismatches (built once per graft build tree).
GRAFT_LOGITS="$(dirname "$GRAFT")/graft_logits"
if [[ ! -x "$GRAFT_LOGITS" || "$HERE/probe/graft_logits.cpp" -nt "$GRAFT_LOGITS" || "$GRAFT" -nt "$GRAFT_LOGITS" ]]; then
  "$HERE/probe/build_probe.sh" "$(dirname "$(dirname "$GRAFT")")" > "$WORK/probe-build.log" 2>&1 || {
    echo "note: could not build probe/graft_logits (see $WORK/probe-build.log): greedy mismatches cannot be checked for near-ties"
    GRAFT_LOGITS=""
  }
fi

GPROFILE="$WORK/graft-kv-$KV.toml"
printf '[kv]\nstore = "device"\ntype = "%s"\n' "$KV" > "$GPROFILE"
GRAFT_COMMON=(--profile "$GPROFILE" -t "$THREADS" "${PLUGIN_ARGS[@]}")
LLAMA_COMMON=(--kv-type "$KV")

echo "work dir:   $WORK"
echo "graft:      $GRAFT"
echo "llama.cpp:  node-llama-cpp $(node -p "require('$HERE/node_modules/node-llama-cpp/package.json').version") prebuilt, CPU variant: $LLAMA_CPU, 1 thread"
echo "settings:   KV cache $KV on both sides; greedy -n $NPRED; perplexity ctx $CTX on $(basename "$TEXT"); near-tie tolerance $TIE_TOL_F32 nats (f32 weights), $TIE_TOL_ROUNDED (others)$([[ $STRICT == 1 ]] && echo ' (strict: not used)')"
echo

SHAPE=(--n-embd 256 --n-layer 4 --n-head 4 --n-head-kv 2 --n-ff 512 --n-vocab 1000)
# Prompts (raw ids; neither side adds BOS). Synthetic vocabulary: ids 0..255 = bytes, 997 = BOS.
PROMPTS=(
  "1 2 3"
  "997 72 101 108 108 111 44 32 119 111 114 108 100 33"
  "500"
  "$(awk 'BEGIN { for (i = 0; i < 64; i++) printf "%s%d", (i ? " " : ""), (i * 37 + 11) % 990 }')"
)

FAIL=0
ROWS=()
TOKROWS=()
fail() { FAIL=1; echo "  FAIL: $*"; }
ppl_of() { sed -n 's/.*Final estimate: PPL = \([0-9.eE+-]*\).*/\1/p' "$1" | tail -1; }
last_err() { grep -v '^\s*$' "$1" | grep -v 'loading weights' | tail -1; }

check_tokenizer() { check_tokenizer_file "$1" "$2" "$TEXT"; }
check_tokenizer_file() {
  local name="$1" model="$2" TEXT="$3" lmodel="${4:-$2}"  # lmodel: the copy llama.cpp reads
  if ! "$GRAFT" tokenize --model "$model" --prompt-file "$TEXT" --ids > "$WORK/$name.tok.graft" 2> "$WORK/$name.tok.graft.err"; then
    fail "$name: graft tokenize failed: $(last_err "$WORK/$name.tok.graft.err")"; return
  fi
  if ! node "$HERE/llamacpp_tokenize.mjs" --model "$lmodel" --file "$TEXT" > "$WORK/$name.tok.llama" 2> "$WORK/$name.tok.llama.err"; then
    fail "$name: llama.cpp tokenize failed: $(last_err "$WORK/$name.tok.llama.err")"; return
  fi
  local n
  n=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).length)' "$WORK/$name.tok.llama")
  if cmp -s "$WORK/$name.tok.graft" "$WORK/$name.tok.llama"; then
    echo "tokenizer ($name vocabulary) on $(basename "$TEXT"): same $n ids"
    TOKROWS+=("| $name | $(basename "$TEXT") | $n | same |")
  else
    node -e '
      const fs = require("fs");
      const a = JSON.parse(fs.readFileSync(process.argv[1], "utf8")), b = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
      let k = 0; while (k < a.length && k < b.length && a[k] === b[k]) k++;
      console.log(`  graft ${a.length} ids, llama.cpp ${b.length} ids, first difference at ${k}: graft ${a.slice(k, k + 5)} llama.cpp ${b.slice(k, k + 5)}`);
    ' "$WORK/$name.tok.graft" "$WORK/$name.tok.llama"
    fail "$name: tokenizers differ on $TEXT"
    TOKROWS+=("| $name | $(basename "$TEXT") | $n | DIFFER |")
  fi
}

# Explains a greedy mismatch: both engines' log-probabilities along the agreed prefix.
# Prints the tie_check line; returns 0 for a confirmed near-tie.
explain_mismatch() {
  local model="$1" prompt="$2" gj="$3" k="$4" base="$5" tol="$6" lmodel="${7:-$1}"
  [[ -n "$GRAFT_LOGITS" ]] || { echo "no graft probe: near-tie not checked"; return 1; }
  local prefix
  prefix=$(node -e '
    const t = require("fs").readFileSync(process.argv[1], "utf8");
    console.log(JSON.parse(t.slice(t.indexOf("{"))).generated_ids.slice(0, Number(process.argv[2])).join(" "));
  ' "$gj" "$k")
  "$GRAFT_LOGITS" --model "$model" --prompt-ids "$prompt" --continue-ids "$prefix" --full --ctx 2048 \
    "${GRAFT_COMMON[@]}" > "$base.graft_logits.json" 2> "$base.graft_logits.err" ||
    { echo "graft_logits failed: $(last_err "$base.graft_logits.err")"; return 1; }
  local cont=()
  [[ -z "$prefix" ]] || cont=(--continue-ids "$prefix")
  node "$HERE/llamacpp_logits.mjs" --model "$lmodel" --prompt-ids "$prompt" "${cont[@]}" --full "${LLAMA_COMMON[@]}" \
    > "$base.llama_logits.json" 2> "$base.llama_logits.err" ||
    { echo "llamacpp_logits failed: $(last_err "$base.llama_logits.err")"; return 1; }
  node "$HERE/tie_check.mjs" "$base.graft_logits.json" "$base.llama_logits.json" "$tol"
}

run_model() {
  local arch="$1" type="$2" tied="$3"
  local name="${arch}${tied:+-tied}-${type}"
  local label="$arch${tied:+ (tied)}"
  local model="$WORK/$name.gguf"
  # One seed per architecture (and tied layout): every type of it holds the same weights,
  # rounded to that type.
  local seed=1
  [[ "$arch" == qwen3 ]] && seed=2
  [[ -z "$tied" ]] || seed=3
  # qwen35 (the hybrid: 3 gated delta-nets, then gated attention) from its tiny preset's
  # delta-net shapes, widened to SHAPE.
  local arch_args=(--arch "$arch")
  # Its delta-net rows are 64 wide (4 heads of 16): tensors whose rows are not whole blocks of a
  # K-quant or Q1_0 are written as Q8_0 (llama.cpp reads mixed types as they are).
  [[ "$arch" != qwen35 ]] || { arch_args=(--preset qwen35-tiny --fallback-type q8_0); seed=4; }
  echo "== $name"
  if ! "$GRAFT" synth "${arch_args[@]}" --out "$model" "${SHAPE[@]}" ${tied:+--tied} --type "$type" --seed "$seed" \
       "${PLUGIN_ARGS[@]}" > "$WORK/$name.synth.log" 2>&1; then
    fail "$name: graft synth failed: $(last_err "$WORK/$name.synth.log")"
    ROWS+=("| $label | $type | synth failed | | | | |")
    return
  fi
  local matched=0 total=0 ties=0 i=0 tol="$TIE_TOL_ROUNDED"
  [[ "$type" != f32 ]] || tol="$TIE_TOL_F32"
  for prompt in "${PROMPTS[@]}"; do
    i=$((i + 1))
    local base="$WORK/$name.p$i"
    local gj="$base.graft.json" lj="$base.llama.json"
    if ! "$GRAFT" run --model "$model" --prompt-ids "$prompt" --temp 0 -n "$NPRED" --json --ctx 2048 \
         "${GRAFT_COMMON[@]}" > "$gj" 2> "$gj.err"; then
      fail "$name prompt $i: graft run failed: $(last_err "$gj.err")"
      total=$((total + NPRED)); continue
    fi
    if ! node "$HERE/llamacpp_greedy.mjs" --model "$model" --prompt-ids "$prompt" -n "$NPRED" --top2 \
         "${LLAMA_COMMON[@]}" > "$lj" 2> "$lj.err"; then
      fail "$name prompt $i: llama.cpp greedy failed: $(last_err "$lj.err")"
      total=$((total + NPRED)); continue
    fi
    local line m t
    line=$(node "$HERE/compare_ids.mjs" "$gj" "$lj") || true
    echo "  greedy prompt $i ($(wc -w <<< "$prompt") ids): $line"
    m=$(sed -n 's/^[A-Za-z]* \([0-9]*\)\/\([0-9]*\).*/\1/p' <<< "$line")
    t=$(sed -n 's/^[A-Za-z]* \([0-9]*\)\/\([0-9]*\).*/\2/p' <<< "$line")
    matched=$((matched + ${m:-0})); total=$((total + ${t:-NPRED}))
    if [[ "$line" != match* ]]; then
      local k verdict
      k=$(sed -n 's/.*first at position \([0-9]*\).*/\1/p' <<< "$line")
      if verdict=$(explain_mismatch "$model" "$prompt" "$gj" "${k:-0}" "$base" "$tol"); then
        echo "    $verdict"
        ties=$((ties + 1))
        [[ $STRICT == 0 ]] || fail "$name prompt $i: greedy tokens differ (near-tie, --strict)"
      else
        echo "    $verdict"
        fail "$name prompt $i: greedy tokens differ"
      fi
    fi
  done

  local gp="$WORK/$name.ppl.graft" lp="$WORK/$name.ppl.llama" g="" l="" rel=""
  if "$GRAFT" perplexity --model "$model" --file "$TEXT" --ctx "$CTX" --chunks "$CHUNKS" \
       "${GRAFT_COMMON[@]}" > "$gp" 2> "$gp.err"; then
    g=$(ppl_of "$gp")
  else
    fail "$name: graft perplexity failed: $(last_err "$gp.err")"
  fi
  if node "$HERE/llamacpp_perplexity.mjs" --model "$model" --file "$TEXT" --ctx "$CTX" --chunks "$CHUNKS" \
       "${LLAMA_COMMON[@]}" > "$lp" 2> "$lp.err"; then
    l=$(ppl_of "$lp")
  else
    fail "$name: llama.cpp perplexity failed: $(last_err "$lp.err")"
  fi
  if [[ -n "$g" && -n "$l" ]]; then
    rel=$(awk -v g="$g" -v l="$l" 'BEGIN { printf "%+.4f%%", (g - l) / l * 100 }')
    echo "  perplexity ctx $CTX: graft $g, llama.cpp $l, relative difference $rel"
    awk -v g="$g" -v l="$l" -v t="$PPL_TOL" 'BEGIN { d = (g - l) / l * 100; if (d < 0) d = -d; exit !(d <= t) }' ||
      fail "$name: perplexity differs by more than $PPL_TOL%"
  fi
  ROWS+=("| $label | $type | $matched/$total | $ties | ${g:-—} | ${l:-—} | ${rel:-—} |")
}

# The trained zoo model (F16 matrices, qwen3, tied, vocabulary 4096): real, peaked distributions
# instead of random ones. Text prompts tokenized by graft (no BOS: the vocabulary adds none);
# perplexity on the held-out tokenizer fixture with its trained context, 256.
# Its MTP head (the nextn block) is stripped from the copy llama.cpp reads (its qwen3 loader
# refuses unused tensors); graft reads the committed file, whose main layers are the same bytes.
# run_zoo MODEL [LMODEL LABEL NAME TYPE]: LMODEL is what llama.cpp reads (default: MODEL without its
# nextn block); the llama.cpp-quantized runs pass the same file for both.
run_zoo() {
  local model="$1" lmodel="${2:-}" label="${3:-zoo-qwen3-4x256 (trained, tied)}" name="${4:-zoo}" qtype="${5:-f16}" stripped
  echo "== $name: $(basename "$model")"
  if [[ -z "$lmodel" ]]; then
    lmodel="$WORK/zoo-no-nextn.gguf"
    stripped=$(node "$HERE/gguf_strip_nextn.mjs" "$model" "$lmodel" 2> /dev/null) ||
      { fail "zoo: gguf_strip_nextn.mjs failed on $model"; return; }
    echo "  llama.cpp reads a copy without the $stripped nextn (MTP) block(s)"
  fi
  check_tokenizer_file "$name" "$model" "$ZOO_TEXT" "$lmodel"
  local texts=("def fibonacci(n):" "import os" "class Parser:" "    for i in range(")
  local matched=0 total=0 ties=0 i=0 prompt
  for text in "${texts[@]}"; do
    i=$((i + 1))
    prompt=$("$GRAFT" tokenize --model "$model" --prompt "$text" --ids --no-bos | tr -d '[],')
    local base="$WORK/$name.p$i" line m t
    "$GRAFT" run --model "$model" --prompt-ids "$prompt" --temp 0 -n 64 --json --ctx 256 "${GRAFT_COMMON[@]}" \
      > "$base.graft.json" 2> "$base.graft.json.err" || { fail "$name prompt $i: graft run failed: $(last_err "$base.graft.json.err")"; continue; }
    node "$HERE/llamacpp_greedy.mjs" --model "$lmodel" --prompt-ids "$prompt" -n 64 --top2 "${LLAMA_COMMON[@]}" \
      > "$base.llama.json" 2> "$base.llama.json.err" || { fail "$name prompt $i: llama.cpp greedy failed: $(last_err "$base.llama.json.err")"; continue; }
    line=$(node "$HERE/compare_ids.mjs" "$base.graft.json" "$base.llama.json") || true
    echo "  greedy prompt $i ($(wc -w <<< "$prompt") ids, \"$text\"): $line"
    m=$(sed -n 's/^[A-Za-z]* \([0-9]*\)\/\([0-9]*\).*/\1/p' <<< "$line")
    t=$(sed -n 's/^[A-Za-z]* \([0-9]*\)\/\([0-9]*\).*/\2/p' <<< "$line")
    matched=$((matched + ${m:-0})); total=$((total + ${t:-64}))
    if [[ "$line" != match* ]]; then
      local k verdict
      k=$(sed -n 's/.*first at position \([0-9]*\).*/\1/p' <<< "$line")
      if verdict=$(explain_mismatch "$model" "$prompt" "$base.graft.json" "${k:-0}" "$base" "$TIE_TOL_ROUNDED" "$lmodel"); then
        echo "    $verdict"; ties=$((ties + 1))
        [[ $STRICT == 0 ]] || fail "$name prompt $i: greedy tokens differ (near-tie, --strict)"
      else
        echo "    $verdict"; fail "$name prompt $i: greedy tokens differ"
      fi
    fi
  done
  local g="" l="" rel=""
  "$GRAFT" perplexity --model "$model" --file "$ZOO_TEXT" --ctx 256 "${GRAFT_COMMON[@]}" > "$WORK/$name.ppl.graft" 2> "$WORK/$name.ppl.graft.err" &&
    g=$(ppl_of "$WORK/$name.ppl.graft") || fail "$name: graft perplexity failed: $(last_err "$WORK/$name.ppl.graft.err")"
  node "$HERE/llamacpp_perplexity.mjs" --model "$lmodel" --file "$ZOO_TEXT" --ctx 256 "${LLAMA_COMMON[@]}" > "$WORK/$name.ppl.llama" 2> "$WORK/$name.ppl.llama.err" &&
    l=$(ppl_of "$WORK/$name.ppl.llama") || fail "$name: llama.cpp perplexity failed: $(last_err "$WORK/$name.ppl.llama.err")"
  if [[ -n "$g" && -n "$l" ]]; then
    rel=$(awk -v g="$g" -v l="$l" 'BEGIN { printf "%+.4f%%", (g - l) / l * 100 }')
    echo "  perplexity ctx 256 on $(basename "$ZOO_TEXT"): graft $g, llama.cpp $l, relative difference $rel"
    awk -v g="$g" -v l="$l" -v t="$PPL_TOL" 'BEGIN { d = (g - l) / l * 100; if (d < 0) d = -d; exit !(d <= t) }' ||
      fail "$name: perplexity differs by more than $PPL_TOL%"
  fi
  ROWS+=("| $label | $qtype | $matched/$total | $ties | ${g:-—} | ${l:-—} | ${rel:-—} |")
}

for arch in llama qwen3; do
  if "$GRAFT" synth --arch "$arch" --out "$WORK/vocab-$arch.gguf" "${SHAPE[@]}" > /dev/null 2>&1; then
    check_tokenizer "$arch" "$WORK/vocab-$arch.gguf"
  else
    fail "graft synth --arch $arch failed"
  fi
done
echo

for type in $TYPES; do
  run_model llama "$type" ""
  run_model qwen3 "$type" ""
  run_model qwen35 "$type" ""
done
# Tied output (qwen3 presets are tied): f32 and the first quantized type asked for.
run_model qwen3 f32 tied
for type in $TYPES; do
  [[ "$type" == f32 || "$type" == f16 || "$type" == bf16 ]] || { run_model qwen3 "$type" tied; break; }
done
if [[ -n "$ZOO" && -f "$ZOO" && -f "$ZOO_TEXT" ]]; then
  run_zoo "$ZOO"
  if [[ -n "$ZOO_QUANT" ]]; then
    LIBLLAMA=$(ls "$HERE"/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libllama.v*.so 2> /dev/null | head -1)
    if [[ -z "$LIBLLAMA" ]] || ! cc -O1 -o "$WORK/llamacpp_quantize" "$HERE/llamacpp_quantize.c" -ldl 2> "$WORK/quantize-build.log"; then
      fail "cannot build llamacpp_quantize against ${LIBLLAMA:-libllama (not found)} (see $WORK/quantize-build.log)"
    else
      for ft in $ZOO_QUANT; do
        qm="$WORK/zoo-llamacpp-${ft/:/-}.gguf"
        qargs=("${ft%:pure}")
        [[ "$ft" != *:pure ]] || qargs+=(--pure)
        if "$WORK/llamacpp_quantize" "$LIBLLAMA" "$WORK/zoo-no-nextn.gguf" "$qm" "${qargs[@]}" > "$qm.log" 2>&1; then
          run_zoo "$qm" "$qm" "zoo-qwen3-4x256, quantized by llama.cpp" "zoo-${ft/:/-}" "$ft"
        else
          fail "llama.cpp could not quantize the zoo model to $ft: $(last_err "$qm.log")"
        fi
      done
    fi
  fi
fi

{
  echo "KV cache $KV on both sides; llama.cpp CPU variant $LLAMA_CPU; greedy -n $NPRED over ${#PROMPTS[@]} prompts; perplexity ctx $CTX on $(basename "$TEXT")"
  echo
  echo "| model | type | greedy match (tokens) | near-ties | graft PPL | llama.cpp PPL | relative difference |"
  echo "|---|---|---|---|---|---|---|"
  printf '%s\n' "${ROWS[@]}"
  echo
  echo "| vocabulary | text | ids | graft vs llama.cpp |"
  echo "|---|---|---|---|"
  printf '%s\n' "${TOKROWS[@]}"
} > "$WORK/results.md"
echo
cat "$WORK/results.md"
echo
if [[ $FAIL -ne 0 ]]; then
  echo "crosscheck: FAILED (details above; logs in $WORK)"
  exit 1
fi
echo "crosscheck: all checks passed"
