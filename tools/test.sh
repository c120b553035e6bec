#!/usr/bin/env bash
# Sets up a fresh Debian machine (tools/setup.sh; tools/test_setup.sh for what the tests need
# beyond the build: chromium, Node.js, the npm clients), builds graft and runs the whole test
# suite (the README's test command; CI runs exactly this). BUILD_DIR overrides the build folder
# (default: build).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
bash tools/test_setup.sh
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$(nproc)"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
