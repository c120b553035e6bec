#!/usr/bin/env bash
# Prepares tools/device/gpu_checks.sh for the device machine (tools/device/README.md): that machine
# has CUDA's driver and toolkit but none of graft's libraries and no package registry, so the
# binaries built here travel with the shared libraries they load (bundle_libs.sh; the CUDA runtime
# is linked statically into the cuda plugin, the driver is the machine's).
# usage: tools/device/gpu_bundle.sh [BUILD]   (default build; BUILD must be build for the carry list)
set -euo pipefail
build=${1:-build}
[[ -f $build/lib/graft/plugins/libgraft_backend_cuda.so ]] ||
  { echo "gpu_bundle.sh: no cuda plugin in $build: was nvcc found at configure time?" >&2; exit 1; }
# The conformance suite loads the emulated device's plugins and the script drafter from their
# build folders (their paths are compiled into it).
EXTRA_CARRY="$build/tests/emulated_device/plugins $build/tests/speculative/chaos_plugin" \
  exec bash "$(dirname "${BASH_SOURCE[0]}")/bundle_libs.sh" "$build" tools/device/gpu_checks.sh 480 \
  graft test_cuda_backend test_conformance
