#!/usr/bin/env bash
# Builds examples/phrase_drafter the way a third party would: against an installed graft SDK.
# usage: build_example_out_of_tree.sh GRAFT_BUILD_DIR EXAMPLE_SOURCE_DIR WORK_DIR
set -euo pipefail
build=$1 src=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
config=$(find "$work/prefix" -name graft_sdkConfig.cmake)
test -n "$config"
pkg=$(dirname "$config")
# The installed SDK carries the build's header hash and version, and nothing of Boost.
gen="$work/prefix/include/graft/sdk_generated.hpp"
value() { sed -n "s/^#define $1 \"\(.*\)\"$/\1/p" "$2"; }
hash=$(value GRAFT_SDK_HEADER_HASH "$gen")
test -n "$hash"
test "$hash" = "$(value GRAFT_SDK_HEADER_HASH "$build/sdk/include/graft/sdk_generated.hpp")"
grep -q "^set(GRAFT_SDK_HEADER_HASH \"$hash\")$" "$config"
# The hash covers the installed headers' bytes only, the generated one excluded (sdk/abi_hash.txt).
recomputed=$(cd "$work/prefix/include/graft" && ls *.hpp | grep -vx sdk_generated.hpp | LC_ALL=C sort |
  xargs sha256sum | cut -c1-64 | sha256sum | cut -c1-16)
test "$hash" = "$recomputed" || { echo "installed headers hash to $recomputed, sdk_generated.hpp says $hash"; exit 1; }
version=$(value GRAFT_SDK_VERSION_STRING "$gen")
grep -q "^set(PACKAGE_VERSION \"$version\")$" "$pkg/graft_sdkConfigVersion.cmake"
if grep -rqi boost "$work/prefix/include/graft" "$pkg"; then echo "the installed SDK mentions Boost"; exit 1; fi
cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/configure.log"
cmake --build "$work/build" >"$work/build.log"
so="$work/build/libgraft_drafter_phrase.so"
test -f "$so"
# The entry point is a plain C symbol.
nm -D --defined-only "$so" | grep -q " T graft_plugin$"
# The installed graft finds its own plugins at <exe>/../lib/graft/plugins and the new one through
# GRAFT_PLUGIN_PATH.
out=$(GRAFT_PLUGIN_PATH="$work/build" "$work/prefix/bin/graft" plugins -v)
echo "$out"
abi=$(sed -n 's/^#define GRAFT_ABI_VERSION \([0-9]*\)$/\1/p' "$work/prefix/include/graft/version.hpp")
test -n "$abi"
grep -Eq "^drafter  phrase +1\.0\.0 +$abi +$work/build/libgraft_drafter_phrase\.so" <<<"$out"
grep -q "^backend  cpu .*$work/prefix/lib/graft/plugins/libgraft_backend_cpu.so" <<<"$out"
grep -q "key phrases .*(required)" <<<"$out"
grep -q "SDK headers $hash$" <<<"$out"
echo "out-of-tree plugin OK"
