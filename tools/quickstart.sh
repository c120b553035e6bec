#!/usr/bin/env bash
# Sets up a fresh Debian machine, builds graft and runs its main job with the default profile
# (the README's first command). BUILD_DIR overrides the build folder (default: build).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$(nproc)"
# Generation (graft run) arrives with the CPU forward pass; until then the main job shows the
# plugin pipeline the default profile wires together.
"$build/bin/graft" plugins
"$build/bin/graft" profile check profiles/cpu.toml
