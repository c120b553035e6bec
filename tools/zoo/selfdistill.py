"""The target's side of drafter training and measurement: its hidden states, and its own greedy
continuations (KV-cached, batched), which the drafters learn from (self-distillation) and are
measured against (greedy chain verification on held-out text)."""
import hashlib
import os

import numpy as np
import torch

from common import WORK
from layers import rope_at, qkv, attend, ffn

CTX = 32        # tokens of corpus text before each greedy continuation (training data)
NEW = 96        # greedy tokens generated after them
EVAL_PROMPTS = 48
EVAL_CTX = 64
EVAL_NEW = 64


def target_states(model, ids):
    """ids (B, T) -> logits (B, T, V), per-layer outputs [n_layer x (B, T, d)], final normed hidden."""
    logits, hidden = model(ids, return_hidden=True)
    return logits, hidden, model.norm(hidden[-1])


@torch.no_grad()
def greedy(model, ids, n_new):
    """Greedy continuation of every row of ids (B, T0) by n_new tokens, with a KV cache."""
    cfg = model.cfg
    caches = [None] * cfg.n_layer
    x_ids, pos0, out = ids, 0, []
    for _ in range(n_new):
        T = x_ids.shape[1]
        pos = torch.arange(pos0, pos0 + T)
        cos, sin = rope_at(cfg, pos, model.embed.weight.dtype)
        x = model.embed(x_ids)
        for i, b in enumerate(model.blocks):
            q, k, v = qkv(b, b.attn_norm(x), cos, sin)
            if caches[i] is not None:
                k, v = torch.cat([caches[i][0], k], 2), torch.cat([caches[i][1], v], 2)
            caches[i] = (k, v)
            allowed = torch.arange(k.shape[2])[None, :] <= pos[:, None]
            x = x + b.o(attend(b, q, k, v, allowed))
            x = x + ffn(b, b.ffn_norm(x))
        nxt = (model.norm(x[:, -1]) @ model.embed.weight.t()).argmax(-1)
        out.append(nxt)
        x_ids, pos0 = nxt[:, None], pos0 + T
    return torch.stack(out, 1)


def _target_tag():
    """Caches below are keyed on the target checkpoint's bytes, so a retrained target never
    reuses another target's continuations."""
    with open(os.path.join(WORK, "target.pt"), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:12]


def training_sequences(model, n_seq, seed, batch=128):
    """n_seq rows of [CTX corpus tokens, NEW greedy tokens] (bf16 matmuls), cached in work/."""
    path = os.path.join(WORK, f"greedy_train_{n_seq}_{seed}_{_target_tag()}.npy")
    if os.path.exists(path):
        return np.load(path)
    train = np.load(os.path.join(WORK, "train.npy"))
    gen = torch.Generator().manual_seed(seed)
    starts = torch.randint(0, len(train) - CTX - 1, (n_seq,), generator=gen).tolist()
    rows = []
    for i in range(0, n_seq, batch):
        ctx = torch.from_numpy(np.stack([train[s:s + CTX].astype(np.int64) for s in starts[i:i + batch]]))
        with torch.autocast("cpu", dtype=torch.bfloat16):
            cont = greedy(model, ctx, NEW)
        rows.append(torch.cat([ctx, cont], 1).numpy())
        print(f"selfdistill: {i + len(ctx)}/{n_seq} greedy sequences", flush=True)
    arr = np.concatenate(rows).astype(np.uint16)
    np.save(path, arr)
    return arr


def heldout_sequences(model):
    """EVAL_PROMPTS rows of [EVAL_CTX held-out tokens, EVAL_NEW greedy tokens], float32 target."""
    path = os.path.join(WORK, f"greedy_heldout_{_target_tag()}.npy")
    if os.path.exists(path):
        return np.load(path)
    val = np.load(os.path.join(WORK, "val.npy"))
    starts = np.linspace(0, len(val) - EVAL_CTX - 1, EVAL_PROMPTS).astype(np.int64)
    ctx = torch.from_numpy(np.stack([val[s:s + EVAL_CTX].astype(np.int64) for s in starts]))
    arr = torch.cat([ctx, greedy(model, ctx, EVAL_NEW)], 1).numpy().astype(np.uint16)
    np.save(path, arr)
    return arr
