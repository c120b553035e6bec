#!/usr/bin/env bash
# What fusing the three drafters could gain at best on a target (bench/spec/ceiling.py says how):
# per prompt of the corpus, four greedy runs one after the other (all three drafters with every
# proposal verified and traced; ngram alone; all three with the default policy; plain decoding),
# then ceiling.py's table, into a folder of bench/results/ with the command that made it.
# usage: bench/spec/ceiling.sh [--build DIR] [--model FILE] [--draft-model FILE] [--threads T]
#            [--n N] [--limit K] [--results DIR]
#   defaults: build/, BUILD/bench-spec/zoo-padded-44.gguf (bench/spec/make_padded.sh), the zoo
#   dflash2 drafter, 2 threads, 256 tokens, every prompt, bench/results/spec-ceiling-YYYYmmdd-HHMM/
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
command_line=$(printf '%q ' "$0" "$@")
build="$root/build"
model=""
draft_model="$root/models/zoo-dflash2-2x256.gguf"
threads=2
n=256
limit=0
results=""
die() { echo "ceiling.sh: $*" >&2; exit 2; }
while (($#)); do
  [[ $1 == -h || $1 == --help ]] && { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0; }
  (($# >= 2)) || die "$1 needs a value"
  case $1 in
    --build) build=$(realpath "$2") ;;
    --model) model=$(realpath "$2") ;;
    --draft-model) draft_model=$(realpath "$2") ;;
    --threads) threads=$2 ;;
    --n) n=$2 ;;
    --limit) limit=$2 ;;
    --results) results=$(realpath -m "$2") ;;
    *) die "unknown option $1 (--help)" ;;
  esac
  shift 2
done
[[ -n $model ]] || model="$build/bench-spec/zoo-padded-44.gguf"
[[ -f $model ]] || die "no model $model (bench/spec/make_padded.sh makes the default)"
graft="$build/bin/graft"
[[ -x $graft ]] || die "no graft binary at $graft"
[[ -n $results ]] || results="$root/bench/results/spec-ceiling-$(date +%Y%m%d-%H%M)"
mkdir -p "$results"
[[ -z $(ls -A "$results") ]] || die "$results is not empty"
{
  echo "command: $command_line"
  echo "in: $PWD"
  echo "commit: $(git -C "$root" rev-parse HEAD)$(git -C "$root" diff --quiet HEAD -- . ':!bench/results' || echo ' (uncommitted changes)')"
  echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
  echo "model: $model"
  echo "started: $(date -Is)"
} >"$results/COMMAND.txt"
common=(-m "$model" -c 512 -n "$n" --temp 0 -t "$threads" --json)
mix=(--draft ngram,mtp,dflash2 --draft-model "$draft_model")
for dir in "$here"/prompts/*/; do
  category=$(basename "$dir")
  count=0
  for f in "$dir"*.txt; do
    ((limit == 0 || count < limit)) || break
    count=$((count + 1))
    key="$category-$(basename "$f" .txt)"
    "$graft" run --profile "$here/profiles/every_round.toml" "${common[@]}" -f "$f" "${mix[@]}" \
      --spec-trace "$results/full-$key.jsonl" >"$results/full-$key.json" 2>/dev/null
    "$graft" run "${common[@]}" -f "$f" --draft ngram --spec-trace "$results/ng-$key.jsonl" >"$results/ng-$key.json" 2>/dev/null
    "$graft" run "${common[@]}" -f "$f" "${mix[@]}" --spec-trace "$results/mix-$key.jsonl" >"$results/mix-$key.json" 2>/dev/null
    "$graft" run "${common[@]}" -f "$f" --no-draft >"$results/none-$key.json" 2>/dev/null
    echo "ceiling.sh: $key" >&2
  done
done
echo "finished: $(date -Is)" >>"$results/COMMAND.txt"
python3 "$here/ceiling.py" "$results" | tee "$results/tables.md"
# The runs and their traces are the evidence: one archive, so the folder stays small.
(cd "$results" && tar -czf runs.tar.gz full-* ng-* mix-* none-* && rm -f full-* ng-* mix-* none-*)
