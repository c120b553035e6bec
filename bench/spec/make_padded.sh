#!/usr/bin/env bash
# The cost-realistic benchmark target: the zoo model plus N inert layers (bench/spec/pad/, the
# tool pad_target). Each inert layer is a copy of the zoo's last layer with attn_output and
# ffn_down all zeros: it reads and multiplies its weights and writes its KV cache like a real layer,
# but adds nothing, so greedy output, the MTP head and the DFlash2 drafter's taps are the zoo's
# while a decode step reads ~N/4 times the zoo's layer weights. With N = 44 the file is ~80 MB
# of f16, bandwidth-bound on a CPU, and a drafter layer is 1/48 of the target: the regime of a
# real model. A benchmark harness, not a model.
#
# usage: bench/spec/make_padded.sh [--build DIR] [--inert N] [--model FILE] [--out FILE]
#   defaults: the repository's build/, N = 44, models/zoo-qwen3-4x256.gguf,
#   BUILD/bench-spec/zoo-padded-N.gguf. Prints the output path last.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build="$root/build"
inert=44
model="$root/models/zoo-qwen3-4x256.gguf"
out=""
while (($#)); do
  case $1 in
    --build) build=$(realpath "$2"); shift 2 ;;
    --inert) inert=$2; shift 2 ;;
    --model) model=$(realpath "$2"); shift 2 ;;
    --out) out=$(realpath -m "$2"); shift 2 ;;
    -h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "make_padded.sh: unknown option $1 (--help)" >&2; exit 2 ;;
  esac
done
[[ $inert =~ ^[0-9]+$ ]] || { echo "make_padded.sh: --inert takes a number, not '$inert'" >&2; exit 2; }
tool="$build/bin/pad_target"
[[ -x $tool ]] || { echo "make_padded.sh: $tool is not built (cmake --build $build --target pad_target)" >&2; exit 1; }
[[ -n $out ]] || out="$build/bench-spec/zoo-padded-$inert.gguf"
mkdir -p "$(dirname "$out")"
"$tool" --in "$model" --out "$out" --inert "$inert" >&2
echo "$out"
