#!/usr/bin/env bash
# Prepares tools/device/cpu_checks.sh for the device machine (tools/device/README.md), which has
# no package registry and none of graft's libraries: copies the shared libraries that the carried
# binaries and plugins load, glibc's own excepted, into BUILD/device-libs, and prints the `run`
# call (its carry list and command).
# usage: tools/device/cpu_bundle.sh [BUILD]   (default build; BUILD must be build for the carry list)
set -euo pipefail
build=${1:-build}
bins=(graft test_quant test_cpu_ops test_kvstore_device quant_bench)
libs="$build/device-libs"
for b in "${bins[@]}"; do
  [[ -x $build/bin/$b ]] || { echo "cpu_bundle.sh: $build/bin/$b is missing: build first (ninja -C $build)" >&2; exit 1; }
done
rm -rf "$libs"
mkdir -p "$libs"
objects=()
for b in "${bins[@]}"; do objects+=("$build/bin/$b"); done
objects+=("$build"/lib/graft/plugins/*.so)
# glibc comes with the machine (the binaries need GLIBC_2.34 at most); libstdc++ and libgcc_s travel
# because the image's may be older than the compiler's here.
ldd "${objects[@]}" 2>/dev/null |
  awk '$2 == "=>" && $3 ~ /^\// {print $3}' |
  grep -vE '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*)\.so' |
  sort -u |
  while read -r lib; do cp -L "$lib" "$libs/"; done
echo "copied into $libs: $(ls "$libs" | tr '\n' ' ')($(du -sh "$libs" | cut -f1))"
carry="\"$build/lib/graft\", \"$libs\""
for b in "${bins[@]}"; do carry+=", \"$build/bin/$b\""; done
cat <<EOF
device run call:
  carry:     [$carry]
  command:   bash tools/device/cpu_checks.sh
  timeout_s: 600
EOF
