#!/usr/bin/env bash
# Cross-check graft against llama.cpp (node-llama-cpp's prebuilt CPU build) on synthetic models:
# greedy tokens, perplexity, tokenizer ids. See docs/crosscheck.md.
#
#   tools/crosscheck/compare.sh [--graft BIN] [--work DIR] [--text FILE] [--ctx N] [--chunks K]
#                               [-n N] [--types "f32 q8_0 q4_0"] [--threads T] [--plugin-dir DIR]
#                               [--tolerance PCT]
#
# Exit status: 0 when every greedy run matches token for token, every perplexity agrees within
# the tolerance (default 1%) and the tokenizers agree; 1 otherwise; 2 for a usage or setup error.
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
THREADS=2
TOL=1
PLUGIN_ARGS=()

usage() {
  sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
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
    --threads) THREADS="$2"; shift 2 ;;
    --tolerance) TOL="$2"; shift 2 ;;
    --plugin-dir) PLUGIN_ARGS+=(--plugin-dir "$2"); shift 2 ;;
    -h|--help) usage ;;
    *) echo "compare.sh: unknown argument '$1'" >&2; usage ;;
  esac
done

[[ -x "$GRAFT" ]] || { echo "compare.sh: no graft binary at $GRAFT (build it, or pass --graft BIN)" >&2; exit 2; }
[[ -r "$TEXT" ]] || { echo "compare.sh: cannot read text file $TEXT (pass --text FILE)" >&2; exit 2; }
if [[ ! -d "$HERE/node_modules/node-llama-cpp" ]]; then
  "$HERE/setup.sh" >&2 || { echo "compare.sh: setup.sh failed" >&2; exit 2; }
fi
if [[ -z "$WORK" ]]; then
  WORK="$(mktemp -d "${TMPDIR:-/tmp}/graft-crosscheck.XXXXXX")"
fi
mkdir -p "$WORK"
echo "work dir: $WORK"
echo "graft: $GRAFT"
echo "llama.cpp: node-llama-cpp $(node -p "require('$HERE/node_modules/node-llama-cpp/package.json').version") (prebuilt CPU binary)"
echo

export NODE_LLAMA_CPP_SKIP_DOWNLOAD=true NODE_LLAMA_CPP_GPU=false
SHAPE=(--n-embd 256 --n-layer 4 --n-head 4 --n-head-kv 2 --n-ff 512 --n-vocab 1000)

# Prompts (raw ids, no BOS added by either side). The synthetic vocabulary has ids 0..255 = bytes,
# BOS/EOS <|endoftext|> = n_vocab - 3 = 997.
PROMPTS=(
  "1 2 3"
  "997 72 101 108 108 111 44 32 119 111 114 108 100 33"
  "500"
  "$(awk 'BEGIN { for (i = 0; i < 64; i++) printf "%d ", (i * 37 + 11) % 990 }')"
)

FAIL=0
ROWS=()
fail() { FAIL=1; echo "  FAIL: $*"; }

ppl_of() { sed -n 's/.*Final estimate: PPL = \([0-9.eE+-]*\).*/\1/p' "$1" | tail -1; }

# Tokenizer check, once per vocabulary (llama: llama-bpe pre-tokenizer, BOS added; qwen3: qwen2,
# no BOS).
check_tokenizer() {
  local name="$1" model="$2"
  "$GRAFT" tokenize --model "$model" --prompt-file "$TEXT" --ids > "$WORK/$name.tok.graft" 2> "$WORK/$name.tok.graft.err" || {
    fail "$name: graft tokenize failed: $(tail -1 "$WORK/$name.tok.graft.err")"; return; }
  node "$HERE/llamacpp_tokenize.mjs" --model "$model" --file "$TEXT" > "$WORK/$name.tok.llama" 2> "$WORK/$name.tok.llama.err" || {
    fail "$name: llama.cpp tokenize failed: $(tail -1 "$WORK/$name.tok.llama.err")"; return; }
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

run_model() {
  local arch="$1" type="$2" tied="$3"
  local name="${arch}${tied:+-tied}-${type}"
  local model="$WORK/$name.gguf"
  local seed=$(( ${#name} * 7 + 3 ))
  echo "== $name"
  if ! "$GRAFT" synth --arch "$arch" --out "$model" "${SHAPE[@]}" ${tied:+--tied} --type "$type" --seed "$seed" \
       "${PLUGIN_ARGS[@]}" > "$WORK/$name.synth.log" 2>&1; then
    fail "$name: graft synth failed: $(tail -1 "$WORK/$name.synth.log")"
    ROWS+=("| $arch${tied:+ (tied)} | $type | synth failed | | | |")
    return
  fi
  local matched=0 total=0 i=0
  for prompt in "${PROMPTS[@]}"; do
    i=$((i + 1))
    local gj="$WORK/$name.p$i.graft.json" lj="$WORK/$name.p$i.llama.json"
    if ! "$GRAFT" run --model "$model" --prompt-ids "$prompt" --temp 0 -n "$NPRED" --json -t "$THREADS" \
         "${PLUGIN_ARGS[@]}" > "$gj" 2> "$gj.err"; then
      fail "$name prompt $i: graft run failed: $(grep -v '^$' "$gj.err" | tail -1)"
      total=$((total + NPRED)); continue
    fi
    if ! node "$HERE/llamacpp_greedy.mjs" --model "$model" --prompt-ids "$prompt" -n "$NPRED" --top2 \
         --threads "$THREADS" > "$lj" 2> "$lj.err"; then
      fail "$name prompt $i: llama.cpp greedy failed: $(tail -1 "$lj.err")"
      total=$((total + NPRED)); continue
    fi
    local line
    line=$(node "$HERE/compare_ids.mjs" "$gj" "$lj") || true
    echo "  greedy prompt $i ($(wc -w <<< "$prompt") ids): $line"
    local m t
    m=$(sed -n 's/^[A-Z]* *\([0-9]*\)\/\([0-9]*\).*/\1/p' <<< "$line")
    t=$(sed -n 's/^[A-Z]* *\([0-9]*\)\/\([0-9]*\).*/\2/p' <<< "$line")
    matched=$((matched + ${m:-0})); total=$((total + ${t:-0}))
    [[ "$line" == match* ]] || fail "$name prompt $i: greedy tokens differ"
  done

  local gp="$WORK/$name.ppl.graft" lp="$WORK/$name.ppl.llama" g="" l="" rel=""
  if "$GRAFT" perplexity --model "$model" --file "$TEXT" --ctx "$CTX" --chunks "$CHUNKS" -t "$THREADS" \
       "${PLUGIN_ARGS[@]}" > "$gp" 2> "$gp.err"; then
    g=$(ppl_of "$gp")
  else
    fail "$name: graft perplexity failed: $(grep -v '^$' "$gp.err" | tail -1)"
  fi
  if node "$HERE/llamacpp_perplexity.mjs" --model "$model" --file "$TEXT" --ctx "$CTX" --chunks "$CHUNKS" \
       --threads "$THREADS" > "$lp" 2> "$lp.err"; then
    l=$(ppl_of "$lp")
  else
    fail "$name: llama.cpp perplexity failed: $(tail -1 "$lp.err")"
  fi
  if [[ -n "$g" && -n "$l" ]]; then
    rel=$(awk -v g="$g" -v l="$l" 'BEGIN { d = (g - l) / l * 100; printf "%+.4f%%", d }')
    echo "  perplexity ctx $CTX: graft $g, llama.cpp $l, relative difference $rel"
    if ! awk -v g="$g" -v l="$l" -v t="$TOL" 'BEGIN { d = (g - l) / l * 100; if (d < 0) d = -d; exit !(d <= t) }'; then
      fail "$name: perplexity differs by more than $TOL%"
    fi
  fi
  ROWS+=("| $arch${tied:+ (tied)} | $type | $matched/$total | ${g:-—} | ${l:-—} | ${rel:-—} |")
}

TOKROWS=()
for arch in llama qwen3; do
  "$GRAFT" synth --arch "$arch" --out "$WORK/vocab-$arch.gguf" "${SHAPE[@]}" > /dev/null 2>&1 ||
    { fail "graft synth --arch $arch failed"; continue; }
  check_tokenizer "$arch" "$WORK/vocab-$arch.gguf"
done
echo

for type in $TYPES; do
  run_model llama "$type" ""
  run_model qwen3 "$type" ""
done
run_model qwen3 f32 tied
for type in $TYPES; do
  [[ "$type" == f32 ]] || { run_model qwen3 "$type" tied; break; }
done

{
  echo "| model | type | greedy match (tokens) | graft PPL | llama.cpp PPL | relative difference |"
  echo "|---|---|---|---|---|---|"
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
