#!/usr/bin/env bash
# Rebuilds the whole model zoo deterministically (fixed seeds, fixed step counts, 2 threads,
# torch deterministic algorithms):
#   corpus -> BPE tokenizer -> qwen3 target training -> models/zoo-qwen3-4x256.gguf
#   -> tests/fixtures/zoo-* (reference logits, greedy continuations, tokenizer ids)
# Usage: tools/zoo/build_zoo.sh [extra train.py flags, e.g. --stop-at N]
# Scratch files go to tools/zoo/work/ (ignored by git), or $ZOO_WORK.
# Later stages (MTP head, DFlash2 drafter) will be added here as further scripts that read
# work/target.pt and write their own GGUF/fixtures.
set -euo pipefail
cd "$(dirname "$0")"
PY=/usr/bin/python3  # Debian's python (python3-torch, python3-numpy), not a pyenv one
export OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 MKL_NUM_THREADS=2 PYTHONHASHSEED=0
start=$(date +%s)
./setup.sh
"$PY" prepare.py
"$PY" train.py "$@"
"$PY" export.py
"$PY" fixtures.py
echo "zoo: built in $(( $(date +%s) - start )) s"
sha256sum ../../models/*.gguf
