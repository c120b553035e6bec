#!/usr/bin/env bash
# The part of cpu_bundle.sh and gpu_bundle.sh they share: copies the shared libraries that the
# carried binaries and plugins load (glibc's own and the CUDA driver excepted: the device machine
# has them; libstdc++ and libgcc_s travel because its image's may be older than the compiler's
# here) into BUILD/device-libs, and prints the `run` call.
# usage: [EXTRA_CARRY="DIR..."] tools/device/bundle_libs.sh BUILD CHECKS_SCRIPT TIMEOUT_S BINARY...
# (EXTRA_CARRY: more plugin folders to carry; their libraries' dependencies are copied too)
set -euo pipefail
build=$1 checks=$2 timeout_s=$3
shift 3
bins=("$@")
libs="$build/device-libs"
for b in "${bins[@]}"; do
  [[ -x $build/bin/$b ]] || { echo "bundle_libs.sh: $build/bin/$b is missing: build first (ninja -C $build)" >&2; exit 1; }
done
rm -rf "$libs"
mkdir -p "$libs"
objects=()
for b in "${bins[@]}"; do objects+=("$build/bin/$b"); done
objects+=("$build"/lib/graft/plugins/*.so)
extra=(${EXTRA_CARRY:-})
for d in "${extra[@]}"; do objects+=("$d"/*.so); done
ldd "${objects[@]}" 2>/dev/null |
  awk '$2 == "=>" && $3 ~ /^\// {print $3}' |
  grep -vE '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*|libcuda)\.so' |
  sort -u |
  while read -r lib; do cp -L "$lib" "$libs/"; done
echo "copied into $libs: $(ls "$libs" | tr '\n' ' ')($(du -sh "$libs" | cut -f1))"
carry="\"$build/lib/graft\", \"$libs\""
for b in "${bins[@]}"; do carry+=", \"$build/bin/$b\""; done
for d in "${extra[@]}"; do carry+=", \"$d\""; done
cat <<EOT
device run call:
  carry:     [$carry]
  command:   bash $checks
  timeout_s: $timeout_s
EOT
