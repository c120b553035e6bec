#!/usr/bin/env bash
# Installs the Debian packages that the model-zoo tool (tools/zoo) needs: PyTorch, NumPy and the
# pthread OpenBLAS (Debian's torch is ~7x slower on the generic reference BLAS).
# Only the zoo tool needs these; building and running graft does not.
# Idempotent: apt-get runs only when something is missing. Use Debian's /usr/bin/python3.
set -euo pipefail

packages=(python3 python3-torch python3-numpy libopenblas0-pthread)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "zoo setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "zoo setup: all ${#packages[@]} packages present"
fi
