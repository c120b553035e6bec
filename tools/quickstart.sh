#!/usr/bin/env bash
# Sets up a fresh Debian machine, builds graft and runs its main job: text generation on the CPU
# with the default profile, then the same with speculative decoding (the README's first command).
# BUILD_DIR overrides the build folder; MODEL=path runs another GGUF instead of the zoo model.
#
# The default model is models/zoo-qwen3-4x256.gguf: a 4.5M-parameter qwen3 trained in this
# repository on Python's standard library (docs/models.md). It is a toy: it writes Python-looking
# code, not correct code.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$(nproc)"

model=${MODEL:-models/zoo-qwen3-4x256.gguf}
prompt=$'import os\nimport sys\n\n\ndef main(argv):\n    '
"$build/bin/graft" plugins
"$build/bin/graft" run --profile profiles/cpu.toml --model "$model" -n 96 --seed 3 --prompt "$prompt"

# Speculative decoding, all three drafters fused: the n-gram drafter, the model's own MTP head and
# the DFlash2 block drafter (the zoo model has both; for another model only ngram) propose tokens,
# their proposals merge into one tree and the model verifies it, one forward pass per round; the
# round policy learns which drafter pays where (and skips one whose cost exceeds its gain). Greedy, on a prompt
# from bench/spec; the text is exactly what --no-draft prints, and each drafter's acceptance, its
# share of the accepted tokens and the time split are printed at the end.
draft=(--draft "ngram,mtp,dflash2" --draft-model models/zoo-dflash2-2x256.gguf)
[[ -z ${MODEL:-} ]] || draft=(--draft ngram)
# First the same prompt without drafters, for the speed to compare with: the policy prints each
# drafter's proposal cost in decode steps and the tokens it expects it to add, and its own
# estimate of the speedup. On the zoo model a neural drafter's proposal costs about as much as a
# decode step of this 4-layer toy, so the policy soon asks mostly the n-gram drafter; on a real
# model (or bench/spec/make_padded.sh's cost-realistic target) it asks the others where they pay.
prompt_file=bench/spec/prompts/code_repeat/02_point_vector.txt
echo
echo "== plain decoding (--no-draft), greedy, for comparison =="
"$build/bin/graft" run --profile profiles/cpu.toml --model "$model" -n 256 --temp 0 --prompt-file "$prompt_file" \
  --no-draft >/dev/null
echo
echo "== speculative decoding (${draft[*]}), greedy =="
"$build/bin/graft" run --profile profiles/cpu.toml --model "$model" -n 256 --temp 0 \
  --prompt-file "$prompt_file" "${draft[@]}"
