#!/usr/bin/env bash
# Installs the Debian packages that the model-zoo tool (tools/zoo) needs: PyTorch, NumPy and the
# pthread OpenBLAS (Debian's torch is ~7x slower on the generic reference BLAS).
# Only the zoo tool needs these; building and running graft does not.
# Idempotent: apt-get runs only when something is missing. Use Debian's /usr/bin/python3.
set -euo pipefail

packages=(python3 python3-torch python3-numpy libopenblas0-pthread)

bash "$(dirname "$0")/../apt_install.sh" "zoo setup" "${packages[@]}"
