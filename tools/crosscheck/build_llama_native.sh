#!/usr/bin/env bash
# Builds llama.cpp's own llama-bench natively for this CPU (GGML_NATIVE: -march=native, the build a
# user compiling llama.cpp gets), from the llama.cpp sources the pinned node-llama-cpp package
# ships (node_modules/node-llama-cpp/llama/gitRelease.bundle: the same release as its prebuilt
# binaries; no download). For speed comparisons without node's per-token round trip and its
# threads (bench/llamacpp_side_by_side.sh --llama-native). With "avx2": AVX2/FMA/F16C only, no
# AVX-512 (beside graft's GRAFT_CPU_SIMD=avx2; --llama-native-avx2). Output:
# DIR/.llama-native[-amx|-avx2]/bin/llama-bench (git-ignored; llama-bench.flags beside it records
# the CMake flags); reused when present.
#   usage: tools/crosscheck/build_llama_native.sh [native|native-amx|avx2]   (after tools/crosscheck/setup.sh)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bundle="$here/node_modules/node-llama-cpp/llama/gitRelease.bundle"
level=${1:-native}
# ggml's AMX kernels in this release die of SIGILL on the one AMX machine tried (a KVM guest of a
# Sapphire Rapids, 2026-12-06: tilezero in tinygemm_kernel_amx during prefill, although the process
# asked for the tile state and graft's AMX kernels run there), so "native" leaves AMX out on a CPU
# that has it, as its user would have to; "native-amx" keeps it, for machines where it runs.
amx_flags=(-mno-amx-tile -mno-amx-int8 -mno-amx-bf16)
case "$level" in
  native) out="$here/.llama-native"; flags=(-DGGML_NATIVE=ON)
          if grep -qw amx_tile /proc/cpuinfo; then
            flags+=("-DCMAKE_C_FLAGS=${amx_flags[*]}" "-DCMAKE_CXX_FLAGS=${amx_flags[*]}")
            echo "build_llama_native.sh: building without AMX (see the comment above; native-amx keeps it)" >&2
          fi ;;
  native-amx) out="$here/.llama-native-amx"; flags=(-DGGML_NATIVE=ON) ;;
  avx2) out="$here/.llama-native-avx2"
        flags=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON) ;;
  *) echo "build_llama_native.sh: level $level is not native, native-amx or avx2" >&2; exit 2 ;;
esac
[[ -x "$out/bin/llama-bench" ]] && { echo "$out/bin/llama-bench"; exit 0; }
[[ -f "$bundle" ]] || { echo "build_llama_native.sh: run tools/crosscheck/setup.sh first (no $bundle)" >&2; exit 2; }
rm -rf "$out/src" "$out/build"
mkdir -p "$out"
git clone -q "$bundle" "$out/src"
cmake -S "$out/src" -B "$out/build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${flags[@]}" -DBUILD_SHARED_LIBS=OFF \
  -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF > "$out/configure.log"
cmake --build "$out/build" --target llama-bench > "$out/build.log"
mkdir -p "$out/bin"
cp "$out/build/bin/llama-bench" "$out/bin/llama-bench"
git -C "$out/src" rev-parse HEAD > "$out/bin/llama-bench.commit"
printf '%s\n' "${flags[@]}" > "$out/bin/llama-bench.flags"
echo "$out/bin/llama-bench"
