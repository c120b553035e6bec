#!/usr/bin/env bash
# graft serve against graft run on the same model and prompt, and aggregate throughput with
# --parallel 1, 2, 4, 8 (issue 25's benchmark). Greedy, --no-draft, 2 threads by default;
# --draft LIST speculates with those drafters in both (e.g. ngram,mtp,dflash2 with --draft-model).
# usage: bench/serve/run.sh [--build DIR] [--model FILE] [--prompt-file FILE] [--n N] [--threads T] [--reps R]
#                           [--draft LIST [--draft-model FILE]] [--parallel "1 2 4 8"]
# Prints one line per measurement and a summary; the server is started on a free port each time.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build="$root/build"
model="$root/models/zoo-qwen3-4x256.gguf"
prompt="$root/bench/spec/prompts/code_new/02_lru_cache.txt"
n=128
threads=2
reps=3
draft_list=""
draft_model=""
parallel="1 2 4 8"
while [[ $# -gt 0 ]]; do
  [[ $# -ge 2 ]] || { echo "run.sh: $1 needs a value" >&2; exit 2; }
  case "$1" in
    --build) build=$2 ;; --model) model=$2 ;; --prompt-file) prompt=$2 ;;
    --n) n=$2 ;; --threads) threads=$2 ;; --reps) reps=$2 ;; --parallel) parallel=$2 ;;
    --draft) draft_list=$2 ;; --draft-model) draft_model=$2 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
draft=(--no-draft)
[[ -n $draft_list ]] && draft=(--draft "$draft_list")
[[ -n $draft_model ]] && draft+=(--draft-model "$draft_model")
graft="$build/bin/graft"
[[ -x $graft ]] || { echo "run.sh: no graft at $graft" >&2; exit 2; }
tmp=$(mktemp -d)
pid=""
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

# start_server PARALLEL: starts graft serve on a free port, sets $url.
start_server() {
  "$graft" serve -m "$model" -c 512 -t "$threads" "${draft[@]}" --port 0 --parallel "$1" 2>"$tmp/serve.err" &
  pid=$!
  for _ in $(seq 100); do
    if grep -q "listening on" "$tmp/serve.err"; then break; fi
    sleep 0.1
  done
  url=$(sed -n 's/.*listening on \(http:[^ ]*\) .*/\1/p' "$tmp/serve.err")
  [[ -n $url ]] || { cat "$tmp/serve.err" >&2; exit 1; }
}
stop_server() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""; }

echo "bench/serve: $(basename "$model"), prompt $(basename "$prompt"), n=$n, threads=$threads, reps=$reps, ${draft[*]}"
# 1. graft run and the server, alternating, one request at a time.
start_server 1
for r in $(seq "$reps"); do
  # To a file first: a reader started beside it (python in a pipe) takes a core from its threads.
  "$graft" run -m "$model" -c 512 -f "$prompt" -n "$n" --temp 0 -t "$threads" "${draft[@]}" --json 2>/dev/null >"$tmp/run.json"
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["stats"]; print("run    decode_tps %.1f prefill_s %.4f" % (s["decode_tokens_per_second"], s["prefill_seconds"]))' "$tmp/run.json"
  python3 "$here/client.py" --url "$url" --prompt-file "$prompt" --n "$n" --clients 1 --no-stream |
    python3 -c 'import json,sys; s=json.load(sys.stdin); print("serve  whole    decode_tps %.1f" % s["server_decode_tps_median"])'
  python3 "$here/client.py" --url "$url" --prompt-file "$prompt" --n "$n" --clients 1 |
    python3 -c 'import json,sys; s=json.load(sys.stdin); print("serve  streamed decode_tps %.1f ttft_s %.4f" % (s["server_decode_tps_median"], s["ttft_median_s"]))'
done
stop_server
# 2. Aggregate tok/s: C clients on --parallel C, each sending `reps` requests, whole answers (the
# clients sleep in recv) and then streamed (the clients parse every event on the same cores).
for p in $parallel; do
  start_server "$p"
  python3 "$here/client.py" --url "$url" --prompt-file "$prompt" --n "$n" --clients "$p" --reps "$reps" --no-stream |
    python3 -c 'import json,sys; s=json.load(sys.stdin); print("parallel %d whole    aggregate_tps %.1f per_request_decode_tps %.1f" % (s["clients"], s["aggregate_tokens_per_second"], s["server_decode_tps_median"]))'
  python3 "$here/client.py" --url "$url" --prompt-file "$prompt" --n "$n" --clients "$p" --reps "$reps" |
    python3 -c 'import json,sys; s=json.load(sys.stdin); print("parallel %d streamed aggregate_tps %.1f ttft_median_s %.4f per_request_decode_tps %.1f" % (s["clients"], s["aggregate_tokens_per_second"], s["ttft_median_s"], s["server_decode_tps_median"]))'
  stop_server
done
