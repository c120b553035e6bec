#!/usr/bin/env bash
# Sets up a fresh Debian machine, builds graft and runs its main job: text generation on the CPU
# with the default profile (the README's first command). BUILD_DIR overrides the build folder.
#
# Until the model zoo lands there is no trained model in the repository, so this writes a
# SYNTHETIC model with random weights (graft synth, deterministic, no download): the pipeline,
# plugins and speeds are real, the text is gibberish. Pass your own GGUF as MODEL=path to use it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$(nproc)"

model=${MODEL:-$build/models/synthetic-qwen3-q8_0.gguf}
if [[ -z ${MODEL:-} && ! -f $model ]]; then
  mkdir -p "$(dirname "$model")"
  "$build/bin/graft" synth --arch qwen3 --n-embd 512 --n-layer 8 --n-head 8 --n-head-kv 4 --n-ff 1536 \
    --n-vocab 8192 --ctx 4096 --tied --type q8_0 --seed 1 --out "$model"
fi
"$build/bin/graft" plugins
"$build/bin/graft" run --profile profiles/cpu.toml --model "$model" --prompt "def fibonacci(n):" -n 64 --seed 1
