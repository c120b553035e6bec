#!/usr/bin/env bash
# Rebuilds the whole model zoo deterministically (fixed seeds, fixed step counts, 2 threads,
# torch deterministic algorithms):
#   corpus -> BPE tokenizer -> qwen3 target training
#   -> MTP head (self-distilled on the target's greedy continuations)
#   -> DFlash2 drafter (same data; then its top-k selector)
#   -> models/zoo-qwen3-4x256.gguf (target + nextn block), models/zoo-dflash2-2x256.gguf
#   -> tests/fixtures/zoo-* (target logits and greedy continuations, tokenizer ids,
#      MTP K=3 drafts, DFlash2 block drafts with their context features)
# Usage: tools/zoo/build_zoo.sh [extra train.py flags, e.g. --stop-at N]
# Scratch files go to tools/zoo/work/ (ignored by git), or $ZOO_WORK; outputs go to the
# repository, or under $ZOO_OUT (models/, tests/fixtures/) to compare rebuilds.
set -euo pipefail
cd "$(dirname "$0")"
PY=/usr/bin/python3  # Debian's python (python3-torch, python3-numpy), not a pyenv one
export OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 MKL_NUM_THREADS=2 PYTHONHASHSEED=0
start=$(date +%s)
stage() { local t=$(date +%s); "$PY" "$@"; echo "zoo: $1 took $(( $(date +%s) - t )) s"; }
./setup.sh
stage prepare.py
stage train.py "$@"
stage train_mtp.py
stage train_dflash.py
stage export.py
stage export_dflash.py
stage fixtures.py
stage drafter_fixtures.py
echo "zoo: built in $(( $(date +%s) - start )) s"
sha256sum "${ZOO_OUT:-../..}"/models/*.gguf
