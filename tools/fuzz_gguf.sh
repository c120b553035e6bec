#!/usr/bin/env bash
# Fuzzes what graft reads from GGUF files with libFuzzer + ASan + UBSan for a bounded time.
#   usage: tools/fuzz_gguf.sh [SECONDS] [TARGET]      (default 60, gguf_fuzz)
#   TARGET: gguf_fuzz           the parser: header, metadata, tensor table, views
#           gguf_vocab_fuzz     the model header and the tokenizer read from a parsed file's metadata
#           chat_template_fuzz  the chat template (tokenizer.chat_template) parsed and rendered over
#                               fuzzed messages, under a render budget (seeds: tests/data/chat_templates)
#           request_fuzz        a request body as graft serve reads it: the JSON bounds, the object
#                               parse, the generation fields and logit_bias, the error bodies
# Builds in build-fuzz/ with clang, seeds a corpus from Writer-made files, runs, and exits
# non-zero if the fuzzer found a crash, leak, timeout or sanitizer error (the input is saved under
# build-fuzz/fuzz/artifacts/). Environment: GRAFT_FUZZ_JOBS (build parallelism, default 2).
set -euo pipefail

secs="${1:-60}"
target="${2:-gguf_fuzz}"
if ! [[ "$secs" =~ ^[0-9]+$ ]] || [[ "$secs" -eq 0 ]]; then
  echo "fuzz_gguf.sh: SECONDS must be a positive integer, got '$secs'" >&2
  exit 2
fi
case "$target" in
  gguf_fuzz) max_len=4096 ;;
  gguf_vocab_fuzz) max_len=16384 ;;  # the tokenizer seeds hold 256 byte tokens (3-7 KB)
  chat_template_fuzz) max_len=16384 ;;  # real templates are 1-10 KB
  request_fuzz) max_len=4096 ;;
  *) echo "fuzz_gguf.sh: TARGET must be gguf_fuzz, gguf_vocab_fuzz, chat_template_fuzz or request_fuzz, got '$target'" >&2; exit 2 ;;
esac
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build-fuzz"
work="$build/fuzz"
corpus="$work/corpus-$target"

CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGRAFT_BUILD_FUZZERS=ON -DGRAFT_BUILD_TESTS=OFF >/dev/null
ninja -C "$build" -j"${GRAFT_FUZZ_JOBS:-2}" "$target" gguf_fuzz_seeds

mkdir -p "$corpus" "$work/artifacts"
dict=(-dict="$root/tests/fuzz/gguf.dict")
if [[ $target == chat_template_fuzz ]]; then
  # Each real template, a zero byte, then bytes for the messages (the harness's input layout).
  for t in "$root"/tests/data/chat_templates/*.jinja; do
    { cat "$t"; printf '\0\3hello world\1\2'; } > "$corpus/seed-$(basename "$t" .jinja)"
  done
  dict=(-dict="$root/tests/fuzz/chat_template.dict")
elif [[ $target == request_fuzz ]]; then
  # Requests as clients send them (the OpenAI and llama.cpp field names).
  i=0
  for body in '{"prompt":"x","max_tokens":16,"temperature":0}' \
    '{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}' \
    '{"prompt":"x","top_p":0.9,"top_k":40,"min_p":0.05,"seed":7,"stop":["\n","END"],"logit_bias":{"15":-100,"7":3.5}}' \
    '{"prompt":"x","max_completion_tokens":1e20,"repeat_penalty":1.1,"presence_penalty":-2,"n":2,"logprobs":true}'; do
    printf '%s' "$body" > "$corpus/seed-$((i++))"
  done
  dict=(-dict="$root/tests/fuzz/request.dict")
else
  "$build/bin/gguf_fuzz_seeds" "$corpus"
fi

set +e
"$build/bin/$target" "$corpus" \
  "${dict[@]}" \
  -max_total_time="$secs" -max_len="$max_len" -rss_limit_mb=2048 -timeout=10 \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 2>&1 | tee "$work/last-run-$target.log"
rc=${PIPESTATUS[0]}
set -e

if [[ $rc -ne 0 ]]; then
  echo "fuzz_gguf.sh: $target failed (exit $rc); reproducer(s) in $work/artifacts/" >&2
  exit 1
fi
execs="$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$work/last-run-$target.log" | grep -oE '[0-9]+$' || true)"
echo "fuzz_gguf.sh: $target: no crash in ${secs}s (${execs:-?} executions); corpus in $corpus"
