#!/usr/bin/env bash
# Installs every Debian package that building, testing and running graft needs.
# Idempotent: packages already present are not touched; apt-get runs only when something is missing.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config git
  libboost-dev libboost-program-options-dev libboost-filesystem-dev
  libtomlplusplus-dev libspdlog-dev libfmt-dev
  libpcre2-dev nlohmann-json3-dev libcpp-httplib-dev   # graft serve
  libgtest-dev googletest
  clang libclang-rt-14-dev   # libFuzzer target for the GGUF parser
)

bash "$(dirname "$0")/apt_install.sh" "graft setup" "${packages[@]}"
