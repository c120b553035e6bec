#!/usr/bin/env bash
# Builds llama.cpp's own llama-bench natively for this CPU (GGML_NATIVE: -march=native, the build a
# user compiling llama.cpp gets), from the llama.cpp sources the pinned node-llama-cpp package
# ships (node_modules/node-llama-cpp/llama/gitRelease.bundle: the same release as its prebuilt
# binaries; no download). For speed comparisons without node's per-token round trip and its
# threads (bench/llamacpp_side_by_side.sh --llama-native). Output: DIR/.llama-native/bin/llama-bench
# (git-ignored); reused when present.
#   usage: tools/crosscheck/build_llama_native.sh   (after tools/crosscheck/setup.sh)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bundle="$here/node_modules/node-llama-cpp/llama/gitRelease.bundle"
out="$here/.llama-native"
[[ -x "$out/bin/llama-bench" ]] && { echo "$out/bin/llama-bench"; exit 0; }
[[ -f "$bundle" ]] || { echo "build_llama_native.sh: run tools/crosscheck/setup.sh first (no $bundle)" >&2; exit 2; }
rm -rf "$out/src" "$out/build"
mkdir -p "$out"
git clone -q "$bundle" "$out/src"
cmake -S "$out/src" -B "$out/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF \
  -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF > "$out/configure.log"
cmake --build "$out/build" --target llama-bench > "$out/build.log"
mkdir -p "$out/bin"
cp "$out/build/bin/llama-bench" "$out/bin/llama-bench"
git -C "$out/src" rev-parse HEAD > "$out/bin/llama-bench.commit"
echo "$out/bin/llama-bench"
