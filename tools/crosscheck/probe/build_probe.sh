#!/usr/bin/env bash
# Builds tools/crosscheck/probe/graft_logits.cpp against an existing graft build tree (its
# libgraft_core.a and the compile flags CMake recorded), into BUILD/bin/graft_logits, where graft's
# plugin search (exe/../lib/graft/plugins) finds the build's plugins.
#
#   tools/crosscheck/probe/build_probe.sh [BUILD]      (default: <repo>/build)
#
# Investigation tool for greedy mismatches (docs/crosscheck.md); compare.sh uses it when present.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
BUILD="$(cd "${1:-$ROOT/build}" && pwd)"
[[ -f "$BUILD/compile_commands.json" && -f "$BUILD/lib/libgraft_core.a" ]] ||
  { echo "build_probe.sh: $BUILD is not a built graft tree (need compile_commands.json and lib/libgraft_core.a)" >&2; exit 2; }
# Compile flags of a CLI source file (include dirs, defines, -std), from CMake's database.
FLAGS=$(python3 - "$BUILD/compile_commands.json" <<'PY'
import json, shlex, sys
for e in json.load(open(sys.argv[1])):
    if e["file"].endswith("core/cli/cmd_perplexity.cpp"):
        args = shlex.split(e["command"])
        keep = [a for a in args if a.startswith(("-I", "-D", "-std=", "-O"))]
        print(" ".join(shlex.quote(a) for a in keep))
        break
PY
)
[[ -n "$FLAGS" ]] || { echo "build_probe.sh: no compile command for core/cli/cmd_perplexity.cpp in $BUILD" >&2; exit 2; }
# Link libraries of bin/graft, from build.ninja.
LIBS=$(awk '/^build bin\/graft:/ { f = 1 } f && /LINK_LIBRARIES/ { sub(/^ *LINK_LIBRARIES = /, ""); print; exit }' "$BUILD/build.ninja")
[[ -n "$LIBS" ]] || { echo "build_probe.sh: no link line for bin/graft in $BUILD/build.ninja" >&2; exit 2; }
mkdir -p "$BUILD/bin"
cd "$BUILD"
eval "c++ $FLAGS -o bin/graft_logits \"$HERE/graft_logits.cpp\" $LIBS"
echo "built $BUILD/bin/graft_logits"
