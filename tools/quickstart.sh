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

# Speculative decoding: the n-gram drafter and the model's own MTP head (the zoo model has one; for
# another model only ngram) propose tokens and the model verifies them, one forward pass per
# round. Greedy, on a prompt from bench/spec; the text is exactly what --no-draft prints, and the
# drafters' acceptance and the time split are printed at the end.
drafters=ngram,mtp
[[ -z ${MODEL:-} ]] || drafters=ngram
echo
echo "== speculative decoding (--draft $drafters), greedy =="
"$build/bin/graft" run --profile profiles/cpu.toml --model "$model" -n 128 --temp 0 \
  --prompt-file bench/spec/prompts/code_repeat/02_point_vector.txt --draft "$drafters"
