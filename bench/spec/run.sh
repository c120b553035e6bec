#!/usr/bin/env bash
# Speculative decoding on the zoo model over the fixed prompt corpus in bench/spec/prompts/: every
# prompt is decoded greedily with each drafter configuration in turn (prompt 1: none, ngram, mtp,
# dflash2, ngram,mtp, ngram,dflash2, mtp,dflash2, ngram,mtp,dflash2; prompt 2: ...), so the shared
# machine's swings hit all configurations alike. Each run's `graft run --json` object goes to one
# line of the jsonl output with category, prompt, config and rep added; at the end
# bench/spec/summarize.py prints the tables (README.md there).
# Greedy decoding is lossless: every configuration's generated_ids must equal those of `none` for
# the same prompt. A mismatch is reported at once and makes the script exit 1 at the end.
# usage: bench/spec/run.sh [--build DIR] [--threads T] [--n N]
#            [--configs "none ngram mtp dflash2 ngram,mtp ngram,dflash2 mtp,dflash2 ngram,mtp,dflash2"]
#            [--category C[,C...]] [--limit K] [--reps R] [--model FILE] [--draft-model FILE]
#            [--profile FILE.toml] [--policy-dir DIR] [--out FILE.jsonl]
#   --build        build tree with bin/graft (default: the repository's build/)
#   --threads      CPU threads per run (default 2)
#   --n            tokens to generate per run (default 256; the prompts are at most 160 tokens and
#                  the context is 512)
#   --configs      space-separated: `none` runs --no-draft, anything else --draft NAME[,NAME...]
#                  (default: none, each of ngram, mtp and dflash2 alone, every pair, all three)
#   --category     only these categories (code_new, code_repeat, structured, free; comma-separated)
#   --limit        only the first K prompts of each category (a quick check)
#   --reps         passes over the whole corpus (default 1), one after the other
#   --model        the target GGUF (default models/zoo-qwen3-4x256.gguf)
#   --draft-model  the dflash2 drafter's GGUF, passed as --draft-model FILE to the runs whose config
#                  names dflash2, and only to those (default models/zoo-dflash2-2x256.gguf)
#   --profile      a TOML profile passed to every run (e.g. [[drafter]] keys, [speculative] adaptive);
#                  the command line's -m, -c, -n, --temp, -t and --draft override its keys
#   --policy-dir   keep each configuration's round policy across its runs: --spec-policy DIR/CONFIG.json
#                  (docs/speculative.md; the first run of a configuration learns from scratch, the
#                  next start from what the ones before learnt). Default: every run learns afresh
#   --out          the jsonl file (default BUILD/bench-spec/run-YYYYmmdd-HHMMSS.jsonl); it is replaced
# Relative paths are taken from the directory the script is started in.
set -euo pipefail
build=""
threads=2
n=256
configs="none ngram mtp dflash2 ngram,mtp ngram,dflash2 mtp,dflash2 ngram,mtp,dflash2"
categories=""
limit=0
reps=1
model=""
draft_model=""
profile=""
policy_dir=""
out=""
die() { echo "run.sh: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  if [[ $1 == -h || $1 == --help ]]; then
    sed -n '/^# usage:/,/^# Relative paths/s/^# \{0,1\}//p' "$0"
    exit 0
  fi
  [[ $1 == --* ]] || die "unexpected argument $1 (options only; see the usage at the top of the script)"
  [[ $# -ge 2 ]] || die "$1 needs a value"
  case "$1" in
    --build) build=$2 ;;
    --threads) threads=$2 ;;
    --n) n=$2 ;;
    --configs) configs=$2 ;;
    --category) categories=$2 ;;
    --limit) limit=$2 ;;
    --reps) reps=$2 ;;
    --model) model=$2 ;;
    --draft-model) draft_model=$2 ;;
    --profile) profile=$2 ;;
    --policy-dir) policy_dir=$2 ;;
    --out) out=$2 ;;
    *) die "unknown option $1" ;;
  esac
  shift 2
done
for v in threads n limit reps; do
  [[ ${!v} =~ ^[0-9]+$ ]] || die "--$v wants a whole number, not '${!v}'"
done
((n > 0)) || die "--n must be at least 1"
((reps > 0)) || die "--reps must be at least 1"
read -r -a config_list <<<"$configs"
((${#config_list[@]})) || die "--configs is empty"

# Paths given on the command line are relative to the caller's directory; the script then works
# from the repository root.
abspath() { [[ $1 == /* ]] && echo "$1" || echo "$PWD/$1"; }
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
if [[ -n $build ]]; then build=$(abspath "$build"); else build="$root/build"; fi
if [[ -n $model ]]; then model=$(abspath "$model"); else model="$root/models/zoo-qwen3-4x256.gguf"; fi
if [[ -n $draft_model ]]; then
  draft_model=$(abspath "$draft_model")
else
  draft_model="$root/models/zoo-dflash2-2x256.gguf"
fi
if [[ -n $out ]]; then out=$(abspath "$out"); fi
if [[ -n $policy_dir ]]; then policy_dir=$(abspath "$policy_dir"); mkdir -p "$policy_dir"; fi
profile_args=()
if [[ -n $profile ]]; then
  profile=$(abspath "$profile")
  [[ -f $profile ]] || die "no profile at $profile"
  profile_args=(--profile "$profile")
fi
cd "$root"

graft="$build/bin/graft"
[[ -x $graft ]] || die "no graft binary at $graft (build it, or pass --build DIR)"
[[ -f $model ]] || die "no model at $model"
# uses_dflash2 CONFIG: whether the comma-separated drafter list names dflash2.
uses_dflash2() { [[ ,$1, == *,dflash2,* ]]; }
for config in "${config_list[@]}"; do
  if uses_dflash2 "$config"; then
    [[ -f $draft_model ]] || die "no dflash2 drafter model at $draft_model (config $config; pass --draft-model FILE)"
    break
  fi
done
[[ -n $out ]] || out="$build/bench-spec/run-$(date +%Y%m%d-%H%M%S).jsonl"
mkdir -p "$(dirname "$out")"
: >"$out"

# shellcheck source-path=SCRIPTDIR source=select_prompts.sh
source "$here/select_prompts.sh"
select_prompts "$categories" "$limit"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# annotate RAW_JSON_FILE CATEGORY PROMPT CONFIG REP: appends the run's JSON as one line to $out with
# the fields added, prints a one-line progress report, and compares generated_ids with the
# reference (the first `none` run of this prompt, kept in $tmp/ref-CATEGORY-PROMPT.json); prints
# MISMATCH and exits 3 when they differ.
annotate() {
  python3 - "$@" "$out" "$tmp" "$threads" <<'PY'
import json, os, sys
raw, category, prompt, config, rep, out, tmp, threads = sys.argv[1:9]
try:
    with open(raw) as f:
        r = json.load(f)
except ValueError as e:
    sys.exit("run.sh: graft run printed no JSON object (%s) for %s/%s config %s" % (e, category, prompt, config))
r = dict(category=category, prompt=prompt, config=config, rep=int(rep), threads=int(threads), **r)
with open(out, "a") as f:
    f.write(json.dumps(r, sort_keys=False) + "\n")
s = r.get("stats", {})
sp = s.get("speculative")
line = "%-11s %-22s %-17s %3d %5d tok %9.1f tok/s" % (category, prompt, config, int(rep), s.get("generated_tokens", -1),
                                                      s.get("decode_tokens_per_second", float("nan")))
if sp:
    line += "  %5.2f tok/round  acceptance %5.3f" % (sp.get("tokens_per_round", float("nan")), sp.get("acceptance", float("nan")))
ref_path = os.path.join(tmp, "ref-%s-%s.json" % (category, prompt))
ids = r.get("generated_ids")
status = 0
if config == "none" and not os.path.exists(ref_path):
    with open(ref_path, "w") as f:
        json.dump({"config": config, "rep": int(rep), "ids": ids}, f)
elif os.path.exists(ref_path):
    with open(ref_path) as f:
        ref = json.load(f)
    if ids != ref["ids"]:
        a, b = ref["ids"] or [], ids or []
        i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
        mismatch = ("!!!!! MISMATCH: %s/%s config %s rep %s generated %d ids, `none` (rep %d) %d; first difference at "
                    "index %d (%s vs none's %s)" % (category, prompt, config, rep, len(b), ref["rep"], len(a), i,
                                                     b[i] if i < len(b) else "end", a[i] if i < len(a) else "end"))
        status = 3
print(line, flush=True)
if status:
    print(mismatch, file=sys.stderr, flush=True)
sys.exit(status)
PY
}

echo "run.sh: $(basename "$graft") from $build, ${#prompts[@]} prompts x ${#config_list[@]} configs x $reps reps," \
  "n=$n, threads=$threads -> $out"
echo "run.sh: configs ${config_list[*]}${profile:+, profile $profile}"
mismatches=0
for rep in $(seq "$reps"); do
  for f in "${prompts[@]}"; do
    category=$(basename "$(dirname "$f")")
    name=$(basename "$f" .txt)
    for config in "${config_list[@]}"; do
      if [[ $config == none ]]; then
        draft=(--no-draft)
      else
        draft=(--draft "$config")
        if uses_dflash2 "$config"; then draft+=(--draft-model "$draft_model"); fi
        if [[ -n $policy_dir ]]; then draft+=(--spec-policy "$policy_dir/$config.json"); fi
      fi
      cmd=("$graft" run "${profile_args[@]}" -m "$model" -c 512 -f "$f" -n "$n" --temp 0 -t "$threads" --json "${draft[@]}")
      rc=0
      "${cmd[@]}" >"$tmp/out.json" 2>"$tmp/err.txt" || rc=$?
      if ((rc)); then
        {
          echo "run.sh: graft run failed (exit $rc) on $category/$name, config $config:"
          echo "  ${cmd[*]}"
          echo "--- its stderr:"
          cat "$tmp/err.txt"
        } >&2
        exit 1
      fi
      annotate "$tmp/out.json" "$category" "$name" "$config" "$rep" || {
        rc=$?
        ((rc == 3)) || exit 1
        mismatches=$((mismatches + 1))
      }
    done
  done
done
echo
summary_rc=0
python3 "$here/summarize.py" "$out" || summary_rc=$?
echo
echo "run.sh: results in $out"
if ((mismatches || summary_rc)); then
  if ((mismatches || summary_rc == 1)); then
    echo "run.sh: !!!!! runs generated other tokens than --no-draft: greedy speculative decoding is NOT lossless here" >&2
  else
    echo "run.sh: summarize.py failed (exit $summary_rc)" >&2
  fi
  exit 1
fi
if [[ " ${config_list[*]} " != *" none "* ]]; then
  echo "run.sh: note: no \`none\` config ran, so losslessness was not checked" >&2
fi
