"""Shared setup for the zoo tool: paths, determinism, tokenizer (de)serialization."""
import json
import os
import random

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
WORK = os.environ.get("ZOO_WORK", os.path.join(HERE, "work"))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
# Where models/ and tests/fixtures/ are written: the repository, or $ZOO_OUT (a scratch tree, to
# compare two rebuilds byte for byte without touching the committed files).
OUT = os.environ.get("ZOO_OUT", REPO)
SEED = 1234


def deterministic(seed=SEED):
    torch.set_num_threads(2)
    torch.use_deterministic_algorithms(True)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def param_hash(module):
    """sha256 (12 hex digits) of every parameter's bytes: two runs at the same step either hold
    bit-identical weights or print different hashes."""
    import hashlib
    h = hashlib.sha256()
    for _, p in sorted(module.state_dict().items()):
        h.update(p.detach().float().contiguous().numpy().tobytes())
    return h.hexdigest()[:12]


def save_tokenizer(path, tokens, merges, types):
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"tokens": tokens, "merges": [list(m) for m in merges], "types": types}, f, ensure_ascii=False)


def load_tokenizer(path):
    import bpe
    with open(path, encoding="utf-8") as f:
        d = json.load(f)
    return bpe.Tokenizer(d["tokens"], [tuple(m) for m in d["merges"]]), d
