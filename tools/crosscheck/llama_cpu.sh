# Sourced by compare.sh and bench/llamacpp_side_by_side.sh: restricts llama.cpp to one ggml CPU
# variant. llama_cpu_select DIR NAME CALLER: DIR is tools/crosscheck; NAME a variant (haswell,
# zen4, ...), "all" (ggml picks the best for this CPU) or empty (haswell, the AVX2 build, when the
# CPU has AVX2/FMA/F16C, so llama.cpp computes the same bits on any such machine; else all).
# For a variant it makes (once) a copy of node_modules, without the GPU packages, whose prebuilt
# package keeps a single libggml-cpu-NAME.so, so ggml's loader cannot pick another; cached in
# DIR/.llama-cpu/NAME (git-ignored), and exports CROSSCHECK_NODE_MODULES for lib.mjs.
# Sets LLAMA_CPU to the variant chosen; returns 2 (with a message naming CALLER) for an unknown one.
llama_cpu_select() {
  local dir=$1 caller=$3
  LLAMA_CPU=$2
  if [[ -z "$LLAMA_CPU" ]]; then
    if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo && grep -qw f16c /proc/cpuinfo; then LLAMA_CPU=haswell; else LLAMA_CPU=all; fi
  fi
  [[ "$LLAMA_CPU" == all ]] && return 0
  local vdir="$dir/.llama-cpu/$LLAMA_CPU"
  local bins=node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
  if [[ ! -f "$vdir/.complete" ]]; then
    [[ -f "$dir/$bins/libggml-cpu-$LLAMA_CPU.so" ]] || {
      echo "$caller: --llama-cpu $LLAMA_CPU: no $bins/libggml-cpu-$LLAMA_CPU.so (have: $(cd "$dir/$bins" && ls libggml-cpu-*.so | sed 's/libggml-cpu-//; s/\.so//' | tr '\n' ' '))" >&2
      return 2
    }
    rm -rf "$vdir" && mkdir -p "$vdir"
    (cd "$dir" && tar cf - --exclude='node_modules/@node-llama-cpp/linux-x64-*' \
        --exclude='node_modules/@node-llama-cpp/linux-arm*' node_modules) | tar xf - -C "$vdir"
    find "$vdir/$bins" -name 'libggml-cpu-*.so' ! -name "libggml-cpu-$LLAMA_CPU.so" -delete
    touch "$vdir/.complete"
  fi
  export CROSSCHECK_NODE_MODULES="$vdir/node_modules"
}
