#!/usr/bin/env bash
# Installs the Debian package that bench/spec/plot.py draws its charts with: python3-matplotlib,
# for the system Python (/usr/bin/python3; a pyenv or venv python3 earlier on PATH does not see
# it). Opt-in: the build, the tests and CI draw no charts, so tools/setup.sh does not install it.
# Idempotent (tools/apt_install.sh: apt-get runs only when the package is missing; root or sudo).
set -euo pipefail
bash "$(dirname "$0")/../../tools/apt_install.sh" "bench/spec plot setup" python3-matplotlib
