# shellcheck shell=bash
# Sourced by the bench/spec scripts: select_prompts CATEGORIES LIMIT fills the array `prompts`
# with the corpus files (bench/spec/prompts/<category>/*.txt, in name order): the categories
# named (comma-separated; empty: all four), the first LIMIT of each (0: all). Calls the caller's
# die() on an unknown category or an empty selection.
spec_categories=(code_new code_repeat structured free)

select_prompts() {
  local categories=$1 limit=$2 dir c f k
  dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/prompts"
  local -a cats
  if [[ -n $categories ]]; then IFS=, read -r -a cats <<<"$categories"; else cats=("${spec_categories[@]}"); fi
  prompts=()
  for c in "${cats[@]}"; do
    [[ -d $dir/$c ]] || die "no category '$c' (there are: ${spec_categories[*]})"
    k=0
    for f in "$dir/$c"/*.txt; do
      [[ -e $f ]] || continue
      ((limit == 0 || k < limit)) || break
      prompts+=("$f")
      k=$((k + 1))
    done
  done
  ((${#prompts[@]})) || die "no prompts selected"
}
