#!/usr/bin/env bash
# Builds examples/phrase_drafter the way a third party would: against an installed graft SDK.
# usage: build_example_out_of_tree.sh GRAFT_BUILD_DIR EXAMPLE_SOURCE_DIR WORK_DIR
set -euo pipefail
build=$1 src=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
test -f "$work/prefix/lib/cmake/graft_sdk/graft_sdkConfig.cmake" || test -n "$(find "$work/prefix" -name graft_sdkConfig.cmake)"
cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/configure.log"
cmake --build "$work/build" >"$work/build.log"
test -f "$work/build/libgraft_drafter_phrase.so"
# The installed graft finds its own plugins at <exe>/../lib/graft/plugins and the new one through
# GRAFT_PLUGIN_PATH.
out=$(GRAFT_PLUGIN_PATH="$work/build" "$work/prefix/bin/graft" plugins -v)
echo "$out"
grep -q "^drafter  phrase         1.0.0    2    $work/build/libgraft_drafter_phrase.so" <<<"$out"
grep -q "^backend  cpu .*$work/prefix/lib/graft/plugins/libgraft_backend_cpu.so" <<<"$out"
grep -q "key phrases .*(required)" <<<"$out"
echo "out-of-tree plugin OK"
