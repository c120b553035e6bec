"""Building blocks shared by the zoo drafters: a qwen3 block split at its attention, so that the
MTP head and the DFlash2 drafter can attend over keys/values the plain causal block never sees
(their own KV cache, injected target features), with RoPE at arbitrary positions."""
import math

import torch
import torch.nn.functional as F

from model import rope_tables


def rope_at(cfg, positions, dtype):
    """cos/sin tables for an integer position tensor of any shape: (..., head_dim / 2)."""
    n = int(positions.max()) + 1
    cos, sin = rope_tables(cfg, n, dtype)
    return cos[positions], sin[positions]


def rope_heads(x, cos, sin):
    """x: (B, H, T, D); cos/sin: (B, T, D/2) or (T, D/2). NEOX pairs (i, i + D/2)."""
    if cos.dim() == 3:
        cos, sin = cos[:, None], sin[:, None]
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def qkv(block, h, cos, sin):
    """Normed input h (B, T, d) -> q (B, H, T, D), k/v (B, Hkv, T, D); q/k RMS-normed and roped."""
    cfg = block.cfg
    B, T, _ = h.shape
    q = block.q_norm(block.q(h).view(B, T, cfg.n_head, cfg.head_dim)).transpose(1, 2)
    k = block.k_norm(block.k(h).view(B, T, cfg.n_head_kv, cfg.head_dim)).transpose(1, 2)
    v = block.v(h).view(B, T, cfg.n_head_kv, cfg.head_dim).transpose(1, 2)
    return rope_heads(q, cos, sin), rope_heads(k, cos, sin), v


def kv_only(block, h, cos, sin):
    """Keys/values from features that have no query (DFlash context injection): no attn_norm."""
    cfg = block.cfg
    B, T, _ = h.shape
    k = block.k_norm(block.k(h).view(B, T, cfg.n_head_kv, cfg.head_dim)).transpose(1, 2)
    v = block.v(h).view(B, T, cfg.n_head_kv, cfg.head_dim).transpose(1, 2)
    return rope_heads(k, cos, sin), v


def expand_kv(block, t):
    """GQA: query head j reads kv head j // (n_head / n_head_kv), as llama.cpp."""
    return t.repeat_interleave(block.cfg.n_head // block.cfg.n_head_kv, dim=1)


def attend(block, q, k, v, allowed):
    """Softmax attention; allowed: bool, broadcastable to (B, H, Tq, Tk). Returns (B, Tq, H * D)."""
    att = (q @ expand_kv(block, k).transpose(-1, -2)) / math.sqrt(block.cfg.head_dim)
    att = att.masked_fill(~allowed, float("-inf")).softmax(-1)
    y = att @ expand_kv(block, v)
    B, H, T, D = y.shape
    return y.transpose(1, 2).reshape(B, T, H * D)


def ffn(block, h):
    return block.down(F.silu(block.gate(h)) * block.up(h))
