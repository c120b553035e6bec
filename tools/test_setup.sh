#!/usr/bin/env bash
# Installs what the tests need beyond building graft (tools/test.sh runs it after tools/setup.sh):
# Debian's chromium (the chat page's headless-browser test, tests/web), Node.js and npm when
# missing (the npm-client tests, tests/npm), then `npm ci` in every tests/*/ folder with a
# package.json, from its committed package-lock.json. Idempotent and quiet when nothing is
# missing: npm ci runs only where node_modules is absent or older than package-lock.json.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(chromium)
# A Node.js from elsewhere (NodeSource's bundles npm) counts: only what is missing is installed.
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)
bash tools/apt_install.sh "graft test setup" "${packages[@]}"

for lock in tests/*/package-lock.json; do
  [[ -e $lock ]] || continue
  dir=$(dirname "$lock")
  [[ -f $dir/package.json ]] || continue
  if [[ -d $dir/node_modules && ! $lock -nt $dir/node_modules ]]; then
    continue
  fi
  echo "graft test setup: npm ci in $dir"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  # npm ci leaves node_modules' time as it was when only its contents changed: mark it current.
  touch "$dir/node_modules"
done
