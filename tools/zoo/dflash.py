"""The zoo's DFlash2 drafter (block diffusion, z-lab arXiv 2602.06036; data flow as llama.cpp's
`dflash` model runs it, so the GGUF uses its names).

Context: for target positions j < p, the target's hidden states entering layers target_layers
(llama.cpp convention: id i = the residual stream after i target layers) are concatenated,
projected by fc and RMS-normed (enc.output_norm): c_j. In every drafter layer, c_j gives extra
keys/values: k = k_norm(W_k c_j) roped at position j, v = W_v c_j (no attn_norm, no query).
Block: tokens [t_p, MASK x (B-1)] at positions p..p+B-1, embedded with the target's token_embd.
Each layer: h = attn_norm(x) -> DFlash2 conv (side 0) -> q/k/v, q/k RMSNorm, NEOX RoPE ->
attention over all context keys j < p plus every key of the block (bidirectional) -> o ->
conv (side 1) -> residual; h = ffn_norm(x) -> conv (side 0) -> SwiGLU -> conv (side 1) -> residual.
Then output_norm and the target's tied lm_head: block slot k (1..B-1) predicts token p+k.

DFlash2 dynamic causal conv (kernel K, groups of G channels), per slot j inside its block:
  dyn_j = conv_proj(h_j) viewed as [side][tap][group];  w[tap, c] = base[side][tap][c] + dyn_j[side][tap][c / G]
  out_j[c] = sum_tap w[tap, c] * in_{j - tap}[c]   (zero before the block's first slot)
DFlash2 selector: candidates = top-k of each slot's logits; the score of candidate b after
predecessor a at slot k is logit_k[b] + sum_r prev[a][r] * gate_k[r] * next[b][r], with
gate_k = selector_hidden(final normed hidden of slot k); slot 1's predecessor is t_p; drafts walk
left to right taking the best-scoring candidate after the previous pick.
"""
from dataclasses import dataclass, asdict, field

import torch
import torch.nn as nn

from layers import rope_at, qkv, kv_only, attend, ffn
from model import Block, RMSNorm


@dataclass
class DConfig:
    n_layer: int = 2
    block_size: int = 8
    target_layers: list = field(default_factory=lambda: [1, 2, 3])
    mask_token: str = "<think>"
    conv_kernel: int = 2
    conv_group: int = 16
    selector_rank: int = 32
    selector_top_k: int = 8

    def to_dict(self):
        return asdict(self)


class DLayer(Block):
    def __init__(self, cfg, dc):
        super().__init__(cfg)
        d = cfg.n_embd
        n_dyn = 2 * dc.conv_kernel * (d // dc.conv_group)
        self.attn_conv_base = nn.Parameter(torch.zeros(2, dc.conv_kernel, d))
        self.attn_conv_proj = nn.Linear(d, n_dyn, bias=False)
        self.ffn_conv_base = nn.Parameter(torch.zeros(2, dc.conv_kernel, d))
        self.ffn_conv_proj = nn.Linear(d, n_dyn, bias=False)


def causal_conv(x, dyn, base, side, dc, bs):
    """x (B, N, d), N = n_blocks * bs; dyn (B, N, 2 * kernel * groups); base (2, kernel, d)."""
    B, N, d = x.shape
    xb = x.view(B, N // bs, bs, d)
    coef = dyn.view(B, N // bs, bs, 2, dc.conv_kernel, d // dc.conv_group)[..., side, :, :]
    w = base[side] + coef.repeat_interleave(dc.conv_group, -1)           # (B, nb, bs, kernel, d)
    out = w[..., 0, :] * xb
    for tap in range(1, dc.conv_kernel):
        shifted = torch.cat([torch.zeros_like(xb[:, :, :tap]), xb[:, :, :bs - tap]], 2)
        out = out + w[..., tap, :] * shifted
    return out.reshape(B, N, d)


class DFlash(nn.Module):
    def __init__(self, cfg, dc):
        super().__init__()
        self.cfg, self.dc = cfg, dc
        d = cfg.n_embd
        self.fc = nn.Linear(len(dc.target_layers) * d, d, bias=False)
        self.hidden_norm = RMSNorm(d, cfg.eps)
        self.layers = nn.ModuleList(DLayer(cfg, dc) for _ in range(dc.n_layer))
        self.norm = RMSNorm(d, cfg.eps)
        self.selector_prev = nn.Parameter(torch.zeros(cfg.n_vocab, dc.selector_rank))
        self.selector_next = nn.Parameter(torch.zeros(cfg.n_vocab, dc.selector_rank))
        self.selector_hidden = nn.Linear(d, dc.selector_rank, bias=False)

    def init_from(self, target, gen):
        """Layers start as copies of target layers (spread), fc random, convs identity, selector off."""
        n_t = len(target.blocks)
        for i, L in enumerate(self.layers):
            src = target.blocks[min(n_t - 1, round(i * (n_t - 1) / max(1, len(self.layers) - 1)))]
            L.load_state_dict(src.state_dict(), strict=False)
        self.norm.load_state_dict(target.norm.state_dict())
        with torch.no_grad():
            self.fc.weight.copy_(torch.randn(self.fc.weight.shape, generator=gen) * 0.02)
            for L in self.layers:
                for base in (L.attn_conv_base, L.ffn_conv_base):
                    base.zero_()
                    base[:, 0, :] = 1.0
                L.attn_conv_proj.weight.zero_()
                L.ffn_conv_proj.weight.zero_()
            self.selector_prev.copy_(torch.randn(self.selector_prev.shape, generator=gen) * 0.02)
            self.selector_next.copy_(torch.randn(self.selector_next.shape, generator=gen) * 0.02)

    def features(self, hidden):
        """Target per-layer outputs [n_layer x (B, T, d)] -> the concatenated context features."""
        return torch.cat([hidden[i - 1] for i in self.dc.target_layers], -1)

    def forward(self, embed_w, feats, anchors, block_tokens):
        """feats (B, T, n_sel * d) for positions 0..T-1; anchors (B, nb) positions p (context j < p);
        block_tokens (B, nb, bs) -> logits (B, nb, bs, V), final normed hidden (B, nb, bs, d)."""
        cfg, dc = self.cfg, self.dc
        B, T, _ = feats.shape
        nb, bs = block_tokens.shape[1:]
        N = nb * bs
        ctx = self.hidden_norm(self.fc(feats))
        x = embed_w[block_tokens].reshape(B, N, cfg.n_embd)
        bpos = (anchors[..., None] + torch.arange(bs)).reshape(B, N)
        cos_b, sin_b = rope_at(cfg, bpos, x.dtype)
        cos_c, sin_c = rope_at(cfg, torch.arange(T), x.dtype)
        slot_anchor = anchors.repeat_interleave(bs, -1)
        allowed_ctx = torch.arange(T)[None, None, :] < slot_anchor[..., None]
        blk = torch.arange(nb).repeat_interleave(bs)
        allowed_blk = (blk[:, None] == blk[None, :]).expand(B, N, N)
        allowed = torch.cat([allowed_ctx, allowed_blk], -1)[:, None]
        for L in self.layers:
            kc, vc = kv_only(L, ctx, cos_c, sin_c)
            h = L.attn_norm(x)
            dyn = L.attn_conv_proj(h)
            h = causal_conv(h, dyn, L.attn_conv_base, 0, dc, bs)
            q, k, v = qkv(L, h, cos_b, sin_b)
            a = L.o(attend(L, q, torch.cat([kc, k], 2), torch.cat([vc, v], 2), allowed))
            x = x + causal_conv(a, dyn, L.attn_conv_base, 1, dc, bs)
            h = L.ffn_norm(x)
            dyn = L.ffn_conv_proj(h)
            y = ffn(L, causal_conv(h, dyn, L.ffn_conv_base, 0, dc, bs))
            x = x + causal_conv(y, dyn, L.ffn_conv_base, 1, dc, bs)
        out = self.norm(x)
        logits = out @ embed_w.t()
        return logits.view(B, nb, bs, -1), out.view(B, nb, bs, -1)

    def selector_scores(self, logits, out, pred_tokens):
        """Scores of each slot's top-k candidates after a given predecessor token per slot.
        logits (..., V), out (..., d), pred_tokens (...) -> candidates (..., k), scores (..., k)."""
        unary, cand = logits.topk(self.dc.selector_top_k, -1)
        gate = self.selector_hidden(out)
        pair = ((self.selector_prev[pred_tokens] * gate)[..., None, :] * self.selector_next[cand]).sum(-1)
        return cand, unary + pair

    def draft(self, logits, out, anchor_tokens, use_selector):
        """Greedy block drafts for slots 1..bs-1: plain argmax, or the DFlash2 selector walk."""
        if not use_selector:
            return logits[..., 1:, :].argmax(-1)
        prev, drafts = anchor_tokens, []
        for k in range(1, logits.shape[-2]):
            cand, score = self.selector_scores(logits[..., k, :], out[..., k, :], prev)
            prev = cand.gather(-1, score.argmax(-1, keepdim=True))[..., 0]
            drafts.append(prev)
        return torch.stack(drafts, -1)
