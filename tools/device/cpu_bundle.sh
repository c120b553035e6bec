#!/usr/bin/env bash
# Prepares tools/device/cpu_checks.sh for the device machine (tools/device/README.md), which has
# no package registry and none of graft's libraries: copies the shared libraries that the carried
# binaries and plugins load into BUILD/device-libs, and prints the `run` call (bundle_libs.sh).
# usage: tools/device/cpu_bundle.sh [BUILD]   (default build; BUILD must be build for the carry list)
set -euo pipefail
here="$(dirname "${BASH_SOURCE[0]}")"
exec bash "$here/bundle_libs.sh" "${1:-build}" tools/device/cpu_checks.sh 600 \
  graft test_quant test_cpu_ops test_kvstore_device quant_bench
