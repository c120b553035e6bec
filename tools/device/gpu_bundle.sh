#!/usr/bin/env bash
# Prepares tools/device/gpu_checks.sh for the device machine (tools/device/README.md): that machine
# has CUDA's driver and toolkit but none of graft's libraries and no package registry, so the
# binaries built here travel with the shared libraries they load (glibc's own excepted; the CUDA
# runtime is linked statically into the cuda plugins, the driver is the machine's). Copies them
# into BUILD/device-libs and prints the `run` call (its carry list and command).
# usage: tools/device/gpu_bundle.sh [BUILD]   (default build; BUILD must be build for the carry list)
set -euo pipefail
build=${1:-build}
bins=(graft test_cuda_backend test_cpu_ops)
libs="$build/device-libs"
for b in "${bins[@]}"; do
  [[ -x $build/bin/$b ]] || { echo "gpu_bundle.sh: $build/bin/$b is missing: build first (ninja -C $build)" >&2; exit 1; }
done
[[ -f $build/lib/graft/plugins/libgraft_backend_cuda.so ]] ||
  { echo "gpu_bundle.sh: no cuda plugin in $build: was nvcc found at configure time?" >&2; exit 1; }
rm -rf "$libs"
mkdir -p "$libs"
objects=()
for b in "${bins[@]}"; do objects+=("$build/bin/$b"); done
objects+=("$build"/lib/graft/plugins/*.so)
ldd "${objects[@]}" 2>/dev/null |
  awk '$2 == "=>" && $3 ~ /^\// {print $3}' |
  grep -vE '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*|libcuda)\.so' |
  sort -u |
  while read -r lib; do cp -L "$lib" "$libs/"; done
echo "copied into $libs: $(ls "$libs" | tr '\n' ' ')($(du -sh "$libs" | cut -f1))"
carry="\"$build/lib/graft\", \"$libs\""
for b in "${bins[@]}"; do carry+=", \"$build/bin/$b\""; done
cat <<EOT
device run call:
  carry:     [$carry]
  command:   bash tools/device/gpu_checks.sh
  timeout_s: 480
EOT
