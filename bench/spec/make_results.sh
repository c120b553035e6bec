#!/usr/bin/env bash
# Runs bench/spec/run.sh and keeps what it measured in one folder, with the command that made it:
#   COMMAND.txt     this command line exactly, the directory it was started in, `git rev-parse HEAD`
#                   (and whether the tree had uncommitted changes), the host, the steps below, the
#                   start and end times and the exit status
#   run.log         run.sh's output (progress lines, mismatches, its own copy of the tables)
#   runs.jsonl.gz   run.sh's jsonl, gzipped (summarize.py and plot.py read it as it is)
#   tables.md       bench/spec/summarize.py --times runs.jsonl.gz
#   *.png           bench/spec/plot.py's charts (README.md in bench/spec says what each shows)
# usage: bench/spec/make_results.sh [--results DIR] [--jsonl FILE.jsonl[.gz]] [--no-plot] [RUN.SH OPTIONS...]
#   --results  the folder (default: bench/results/spec-YYYYmmdd-HHMMSS/ in the repository); created,
#              and it must be empty if it exists
#   --jsonl    run nothing: make the tables and charts from this run.sh output (copied in as
#              runs.jsonl.gz; COMMAND.txt names it)
#   --no-plot  no charts (plot.py needs Debian's python3-matplotlib for /usr/bin/python3:
#              bench/spec/setup_plot.sh); without it a missing matplotlib stops the script before
#              anything runs
#   every other option goes to bench/spec/run.sh as given (--build, --threads, --n, --configs,
#   --category, --limit, --reps, --model, --draft-model, --profile), except --out: the folder's jsonl is its output
# Exit status: 0; 1 when run.sh failed (a graft run failed, or speculative decoding generated other
# tokens than --no-draft; the tables and charts are still made from the runs that finished) or
# summarize.py or plot.py did; 2 for a bad command line. Relative paths are taken from the
# directory the script is started in.
set -euo pipefail
command_line=$(printf '%q ' "$0" "$@")
command_line=${command_line% }
started_in=$PWD
die() { echo "make_results.sh: $*" >&2; exit 2; }
abspath() { [[ $1 == /* ]] && echo "$1" || echo "$PWD/$1"; }
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

results=""
jsonl=""
plot=1
run_args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help)
      sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
      exit 0
      ;;
    --no-plot) plot=0; shift; continue ;;
    --results | --jsonl)
      [[ $# -ge 2 ]] || die "$1 needs a value"
      if [[ $1 == --results ]]; then results=$(abspath "$2"); else jsonl=$(abspath "$2"); fi
      shift 2
      continue
      ;;
    --out) die "--out is not for make_results.sh (the jsonl goes into the results folder; --results DIR)" ;;
    --*)
      [[ $# -ge 2 ]] || die "$1 needs a value"
      # run.sh reads paths relative to the directory it is started in, which is this one.
      run_args+=("$1" "$2")
      shift 2
      ;;
    *) die "unexpected argument $1 (options only; see the usage at the top of the script)" ;;
  esac
done
if [[ -n $jsonl ]]; then
  [[ -f $jsonl ]] || die "no file $jsonl"
  ((${#run_args[@]} == 0)) || die "--jsonl runs nothing: run.sh options (${run_args[*]}) make no sense with it"
fi
if ((plot)) && ! /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  die "no matplotlib for /usr/bin/python3: run bench/spec/setup_plot.sh (Debian's python3-matplotlib), or pass --no-plot"
fi
[[ -n $results ]] || results="$root/bench/results/spec-$(date +%Y%m%d-%H%M%S)"
if [[ -e $results ]]; then
  [[ -d $results ]] || die "$results exists and is not a folder"
  [[ -z $(ls -A "$results") ]] || die "$results is not empty (results are never mixed; pass another --results)"
fi
mkdir -p "$results"

head=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo "unknown (not a git checkout)")
changes=$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null | wc -l)
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)
run_cmd=("$(dirname "$0")/run.sh" "${run_args[@]}" --out "$results/runs.jsonl")
{
  echo "command:  $command_line"
  echo "in:       $started_in"
  echo "git HEAD: $head"
  if ((changes)); then
    echo "git tree: $changes tracked file(s) with uncommitted changes (git status at that time)"
  else
    echo "git tree: no uncommitted changes to tracked files"
  fi
  echo "host:     $(uname -srm), $(nproc) hardware threads, ${cpu:-cpu unknown}"
  echo "started:  $(date '+%Y-%m-%d %H:%M:%S %z')"
  echo
  echo "steps:"
  if [[ -n $jsonl ]]; then
    echo "  no run: runs.jsonl.gz is a copy of $jsonl"
  else
    echo "  (in $started_in) $(printf '%q ' "${run_cmd[@]}")2>&1 | tee run.log; gzip -9 -n runs.jsonl"
  fi
  echo "  (in this folder) $root/bench/spec/summarize.py --times runs.jsonl.gz > tables.md"
  if ((plot)); then
    echo "  (in this folder) /usr/bin/python3 $root/bench/spec/plot.py --out . --title 'bench/spec $(basename "$results")' runs.jsonl.gz"
  fi
} >"$results/COMMAND.txt"

# The verify pass's cost curve on the same model, build and threads (time of k rows / one row,
# k = 1..16): what every speedup in the tables is bought with. Run before the corpus, alone.
if [[ -z $jsonl ]]; then
  vc_build="$root/build" vc_model="$root/models/zoo-qwen3-4x256.gguf" vc_threads=2
  for ((i = 0; i < ${#run_args[@]}; i += 2)); do
    case ${run_args[i]} in
      --build) vc_build=$(cd "$started_in" && realpath "${run_args[i + 1]}") ;;
      --model) vc_model=$(cd "$started_in" && realpath "${run_args[i + 1]}") ;;
      --threads) vc_threads=${run_args[i + 1]} ;;
    esac
  done
  echo "  (in $root) $vc_build/bin/graft bench -m $vc_model -t $vc_threads -f bench/spec/prompts/code_new/02_lru_cache.txt --draft ngram --verify-cost 16 > verify_cost.txt" >>"$results/COMMAND.txt"
  (cd "$root" && "$vc_build/bin/graft" bench -m "$vc_model" -t "$vc_threads" -f bench/spec/prompts/code_new/02_lru_cache.txt \
    --draft ngram --verify-cost 16) >"$results/verify_cost.txt" 2>&1 || echo "make_results.sh: the verify-cost run failed (verify_cost.txt)" >&2
fi

status=0
if [[ -n $jsonl ]]; then
  if [[ $jsonl == *.gz ]]; then cp "$jsonl" "$results/runs.jsonl.gz"; else gzip -9 -n -c "$jsonl" >"$results/runs.jsonl.gz"; fi
else
  echo "make_results.sh: results into $results"
  rc=0
  "${run_cmd[@]}" 2>&1 | tee "$results/run.log" || rc=${PIPESTATUS[0]}
  if ((rc == 2)) && [[ ! -s $results/runs.jsonl ]]; then
    # run.sh refused its options: nothing ran, nothing to keep.
    rm -f "$results/COMMAND.txt" "$results/run.log" "$results/runs.jsonl"
    rmdir "$results" 2>/dev/null || true
    exit 2
  fi
  if [[ ! -s $results/runs.jsonl ]]; then
    echo "finished: $(date '+%Y-%m-%d %H:%M:%S %z'), run.sh exit $rc, no runs" >>"$results/COMMAND.txt"
    echo "make_results.sh: run.sh exited $rc with no runs; its output is in $results/run.log" >&2
    exit 1
  fi
  ((rc == 0)) || { status=1; echo "run.sh: exit $rc (run.log says why)" >>"$results/COMMAND.txt"; }
  gzip -9 -n -f "$results/runs.jsonl"
fi

cd "$results"
rc=0
python3 "$here/summarize.py" --times runs.jsonl.gz >tables.md || rc=$?
if [[ -s verify_cost.txt ]]; then
  { echo; echo "The verify pass on this model (graft bench --verify-cost 16; verify_cost.txt):"; echo;
    grep -E '^(model|threads|decode|verify| {8})' verify_cost.txt | sed 's/^/    /'; } >>tables.md
fi
((rc == 0)) || { status=1; echo "make_results.sh: summarize.py exited $rc (tables.md says why)" >&2; }
if ((plot)); then
  rc=0
  /usr/bin/python3 "$here/plot.py" --out . --title "bench/spec $(basename "$results")" runs.jsonl.gz || rc=$?
  ((rc == 0)) || { status=1; echo "make_results.sh: plot.py exited $rc" >&2; }
fi
echo "finished: $(date '+%Y-%m-%d %H:%M:%S %z'), exit status $status" >>COMMAND.txt
files=(*)
echo "make_results.sh: in $results: ${files[*]}"
exit "$status"
