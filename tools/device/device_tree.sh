# Sourced by cpu_checks.sh and gpu_checks.sh on the device machine: the carried libraries on the
# loader's path, /work/main pointing at this tree (the test binaries hold the paths of the tree they
# were built in), $out and $summary made, and note() to log a line there.
out=${OUT:-device-out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/build/device-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [[ $PWD != /work/main ]]; then
  if [[ -e /work/main && ! -L /work/main ]]; then
    echo "$(basename "$0"): /work/main exists and is not this tree; the tests would read the wrong files" >&2
    exit 1
  fi
  mkdir -p /work && ln -sfn "$PWD" /work/main
fi
summary="$out/summary.txt"
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }
