#!/usr/bin/env bash
# Installs every Debian package that building, testing and running graft needs.
# Idempotent: packages already present are not touched; apt-get runs only when something is missing.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config git
  libboost-dev libboost-program-options-dev libboost-filesystem-dev
  libtomlplusplus-dev libspdlog-dev libfmt-dev
  libpcre2-dev nlohmann-json3-dev
  libgtest-dev googletest
  clang libclang-rt-14-dev   # libFuzzer target for the GGUF parser
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "graft setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "graft setup: all ${#packages[@]} packages present"
fi
