# Sourced by the bench scripts: bench_model BUILD PRESET TYPE [SYNTH_ARGS] prints the path of the
# synthetic model BUILD/bench-models/PRESET-TYPE[-TAG].gguf, made with BUILD's `graft synth` if it
# is not there yet (TAG: SYNTH_ARGS as a file-name part); on a failed synth it says why on stderr
# and returns 1.
bench_model() {
  local build=$1 preset=$2 type=$3 synth_args=${4:-}
  local tag m
  tag=$(tr -c 'A-Za-z0-9_.-' '_' <<< "$synth_args" | sed 's/_*$//')
  m="$build/bench-models/$preset-$type${tag:+-$tag}.gguf"
  if [[ ! -f $m ]]; then
    mkdir -p "$build/bench-models"
    # shellcheck disable=SC2086
    "$build/bin/graft" synth --preset "$preset" --type "$type" $synth_args --out "$m.tmp" > "$m.log" 2>&1 ||
      { echo "synth $preset $type failed: $(tail -1 "$m.log")" >&2; rm -f "$m.tmp"; return 1; }
    mv "$m.tmp" "$m"
  fi
  echo "$m"
}
