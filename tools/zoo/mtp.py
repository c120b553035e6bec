"""The zoo target's MTP head (one `nextn` block, DeepSeek-V3 / Qwen3.5 style, as llama.cpp runs it).

Entry i (i = 0..T-1) of the head reads the target's final hidden state AFTER output_norm at
position i (h_i) and the embedding of token i+1 (the target's token_embd):
  x = eh_proj(concat(enorm(embed(t_{i+1})), hnorm(h_i)))      embedding half first
  -> one qwen3 block (attn_norm, q/k/v, q/k RMSNorm, NEOX RoPE at position i+1, causal attention
     over the head's own earlier entries, o, residual, ffn_norm, SwiGLU, residual)
  -> g = shared_head_norm(x) -> logits = g @ token_embd^T (the tied lm_head): token i+2.
Chained drafting (K > 1) from base position t: step s >= 2 feeds (d_{s-1}, g_{s-1}) instead of
(t_{i+1}, h_i), at position t+s; its attention reads the head's entries 0..t (computed from the
target) plus the chain's own earlier steps s' = 2..s at t (a KV cache the drafter extends).
"""
import torch
import torch.nn as nn

from layers import rope_at, qkv, attend, ffn, expand_kv
from model import Block, RMSNorm


class MTP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        d = cfg.n_embd
        self.enorm = RMSNorm(d, cfg.eps)
        self.hnorm = RMSNorm(d, cfg.eps)
        self.eh_proj = nn.Linear(2 * d, d, bias=False)
        self.block = Block(cfg)
        self.shared_head_norm = RMSNorm(d, cfg.eps)

    def init_from(self, target, gen):
        """Warm start: the block copies the target's last block; eh_proj random (std 0.02)."""
        self.block.load_state_dict(target.blocks[-1].state_dict())
        self.shared_head_norm.load_state_dict(target.norm.state_dict())
        with torch.no_grad():
            self.eh_proj.weight.copy_(torch.randn(self.eh_proj.weight.shape, generator=gen) * 0.02)

    def _input(self, embed_w, tokens, h):
        return self.eh_proj(torch.cat([self.enorm(embed_w[tokens]), self.hnorm(h)], -1))

    def _rest(self, x, y, embed_w):
        b = self.block
        x = x + b.o(y)
        x = x + ffn(b, b.ffn_norm(x))
        g = self.shared_head_norm(x)
        return g @ embed_w.t(), g

    def forward(self, embed_w, h, nxt):
        """h (B, T, d) normed target hidden, nxt (B, T) tokens i+1 -> logits for token i+2, g, (k, v)."""
        T = h.shape[1]
        x = self._input(embed_w, nxt, h)
        cos, sin = rope_at(self.cfg, torch.arange(T) + 1, x.dtype)
        q, k, v = qkv(self.block, self.block.attn_norm(x), cos, sin)
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        logits, g = self._rest(x, attend(self.block, q, k, v, causal), embed_w)
        return logits, g, (k, v)

    def chain(self, embed_w, h, nxt, K):
        """Greedy K-token drafts from every base position t: drafts (B, T, K), logits [K x (B, T, V)]."""
        T = h.shape[1]
        logits, g, (k1, v1) = self.forward(embed_w, h, nxt)
        d = logits.argmax(-1)
        drafts, all_logits = [d], [logits]
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        own_k, own_v = [], []
        b = self.block
        for s in range(2, K + 1):
            x = self._input(embed_w, d, g)
            cos, sin = rope_at(self.cfg, torch.arange(T) + s, x.dtype)
            q, k, v = qkv(b, b.attn_norm(x), cos, sin)
            own_k.append(expand_kv(b, k))
            own_v.append(expand_kv(b, v))
            scale = self.cfg.head_dim ** -0.5
            main = (q @ expand_kv(b, k1).transpose(-1, -2)) * scale
            main = main.masked_fill(~causal, float("-inf"))
            own = torch.stack([(q * kk).sum(-1) * scale for kk in own_k], -1)  # (B, H, T, s-1)
            att = torch.cat([main, own], -1).softmax(-1)
            y = att[..., :T] @ expand_kv(b, v1)
            for m, vv in enumerate(own_v):
                y = y + att[..., T + m, None] * vv
            Bn, H, _, D = y.shape
            logits, g = self._rest(x, y.transpose(1, 2).reshape(Bn, T, H * D), embed_w)
            d = logits.argmax(-1)
            drafts.append(d)
            all_logits.append(logits)
        return torch.stack(drafts, -1), all_logits
