#!/usr/bin/env bash
# Installs the pinned node-llama-cpp (exactly 3.21.1, from package-lock.json) into
# tools/crosscheck/node_modules. llama.cpp comes as the prebuilt CPU binary inside the
# @node-llama-cpp/linux-x64 package; nothing is downloaded or built at install or run time:
# install scripts are skipped (node-llama-cpp's postinstall would otherwise look for, and could
# try to download or build, a llama.cpp binary) and NODE_LLAMA_CPP_SKIP_DOWNLOAD is set.
# Idempotent: does nothing when node_modules already holds the locked version (works offline then).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
export NODE_LLAMA_CPP_SKIP_DOWNLOAD=true

want=$(node -p "require('./package-lock.json').packages['node_modules/node-llama-cpp'].version")
have=$(node -p "try { require('./node_modules/node-llama-cpp/package.json').version } catch { '' }" 2>/dev/null || true)
if [[ "$have" == "$want" && -d node_modules/@node-llama-cpp/linux-x64/bins ]]; then
  echo "node-llama-cpp $have already installed"
else
  npm ci --ignore-scripts --no-audit --no-fund
fi

# Check that the prebuilt binary loads (no download, no build).
node check_binary.mjs
