"""The zoo target in PyTorch: a qwen3 decoder that matches graft's (and llama.cpp's) forward pass.

RMSNorm(eps) -> q/k/v (no bias) -> per-head RMSNorm on q and k -> NEOX RoPE (pairs i, i + d/2)
-> causal GQA attention, scale 1/sqrt(head_dim) -> o -> residual -> RMSNorm -> SwiGLU -> residual;
final RMSNorm, lm_head tied to the token embedding.
"""
import math
from dataclasses import dataclass, asdict

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Config:
    n_vocab: int = 4096
    n_embd: int = 256
    n_layer: int = 4
    n_head: int = 4
    n_head_kv: int = 2
    head_dim: int = 64
    n_ff: int = 768
    ctx: int = 512
    rope_base: float = 10000.0
    eps: float = 1e-6

    def to_dict(self):
        return asdict(self)


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(cfg, n, dtype=torch.float32, device=None):
    half = cfg.head_dim // 2
    inv = cfg.rope_base ** (-torch.arange(0, half, dtype=torch.float64) * 2.0 / cfg.head_dim)
    ang = torch.arange(n, dtype=torch.float64)[:, None] * inv[None, :]
    return ang.cos().to(dtype), ang.sin().to(dtype)


def apply_rope(x, cos, sin):
    # x: (B, H, T, D); NEOX: rotate pairs (i, i + D/2)
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        d, hd = cfg.n_embd, cfg.head_dim
        self.attn_norm = RMSNorm(d, cfg.eps)
        self.q = nn.Linear(d, cfg.n_head * hd, bias=False)
        self.k = nn.Linear(d, cfg.n_head_kv * hd, bias=False)
        self.v = nn.Linear(d, cfg.n_head_kv * hd, bias=False)
        self.q_norm = RMSNorm(hd, cfg.eps)
        self.k_norm = RMSNorm(hd, cfg.eps)
        self.o = nn.Linear(cfg.n_head * hd, d, bias=False)
        self.ffn_norm = RMSNorm(d, cfg.eps)
        self.gate = nn.Linear(d, cfg.n_ff, bias=False)
        self.up = nn.Linear(d, cfg.n_ff, bias=False)
        self.down = nn.Linear(cfg.n_ff, d, bias=False)

    def forward(self, x, cos, sin, mask):
        cfg = self.cfg
        B, T, _ = x.shape
        h = self.attn_norm(x)
        q = self.q_norm(self.q(h).view(B, T, cfg.n_head, cfg.head_dim)).transpose(1, 2)
        k = self.k_norm(self.k(h).view(B, T, cfg.n_head_kv, cfg.head_dim)).transpose(1, 2)
        v = self.v(h).view(B, T, cfg.n_head_kv, cfg.head_dim).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        rep = cfg.n_head // cfg.n_head_kv
        k = k.repeat_interleave(rep, dim=1)  # query head j uses kv head j // rep (as llama.cpp)
        v = v.repeat_interleave(rep, dim=1)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(cfg.head_dim)
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, cfg.n_head * cfg.head_dim)
        x = x + self.o(y)
        h = self.ffn_norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Qwen3(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.n_vocab, cfg.n_embd)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.norm = RMSNorm(cfg.n_embd, cfg.eps)

    def init_weights(self, gen):
        std = 0.02
        for name, p in self.named_parameters():
            if p.dim() == 2:
                s = std / math.sqrt(2 * self.cfg.n_layer) if name.endswith(("o.weight", "down.weight")) else std
                with torch.no_grad():
                    p.copy_(torch.randn(p.shape, generator=gen) * s)

    def forward(self, ids, return_hidden=False):
        B, T = ids.shape
        dt = self.embed.weight.dtype
        cos, sin = rope_tables(self.cfg, T, dt)
        mask = torch.ones(T, T, dtype=torch.bool).triu(1)
        x = self.embed(ids)
        hidden = []
        for b in self.blocks:
            x = b(x, cos, sin, mask)
            hidden.append(x)
        logits = self.norm(x) @ self.embed.weight.t()
        return (logits, hidden) if return_hidden else logits
