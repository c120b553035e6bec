"""Stage: train the DFlash2 drafter by self-distillation; writes work/dflash.pt, work/dflash_quality.json.

Data: the target's greedy continuations of training-split snippets (selfdistill.py), the target
(f16-rounded weights) frozen and run alongside for features and soft labels. Each step draws
--anchors random block anchors p per sequence; slot k of the block [t_p, MASK...] learns the
target's softmax at position p+k-1 (cross-entropy, slot weight exp(-(k-1)/GAMMA) as in DFlash).
Then the DFlash2 selector alone (drafter frozen) learns, teacher-forced, to pick the target's
greedy token among each slot's top-k candidates.
Measured on held-out prompts in float32 at every anchor p of the target's greedy continuation:
accepted = the longest prefix of the 7 drafts equal to t_{p+1..p+7}; tokens per round = 1 + that.
"""
import argparse
import json
import math
import os
import time

import numpy as np
import torch
import torch.nn.functional as F

import selfdistill as SD
from common import WORK, SEED, deterministic, param_hash, load_tokenizer
from dflash import DConfig, DFlash
from fixtures import load_exported

GAMMA = 4.0


def block_inputs(seq, anchors, bs, mask_id):
    """Block tokens [t_p, MASK x (bs - 1)] for anchors (B, nb)."""
    first = seq.gather(1, anchors)
    blocks = torch.full((*anchors.shape, bs), mask_id, dtype=torch.long)
    blocks[..., 0] = first
    return blocks


def slot_index(anchors, bs):
    return anchors[..., None] + torch.arange(bs)                          # (B, nb, bs)


@torch.no_grad()
def measure(dr, target, mask_id):
    seq = torch.from_numpy(SD.heldout_sequences(target).astype(np.int64))
    bs = dr.dc.block_size
    B, T = seq.shape
    anchors = torch.arange(SD.EVAL_CTX, T - bs + 1).expand(B, -1).contiguous()
    acc = {False: [], True: []}
    for i in range(0, B, 8):
        s, a = seq[i:i + 8], anchors[i:i + 8]
        _, hidden, _ = SD.target_states(target, s)
        logits, out = dr(target.embed.weight, dr.features(hidden), a, block_inputs(s, a, bs, mask_id))
        truth = s.gather(1, (a[..., None] + torch.arange(1, bs)).reshape(len(s), -1)).view(*a.shape, bs - 1)
        for use_sel in (False, True):
            drafts = dr.draft(logits, out, s.gather(1, a), use_sel)                       # (b, nb, bs-1)
            acc[use_sel].append((drafts == truth).long().cumprod(-1).sum(-1).flatten())
    res = {}
    for use_sel in (False, True):
        n = torch.cat(acc[use_sel]).float()
        res["selector" if use_sel else "argmax"] = {
            "rounds": int(n.numel()), "mean_accepted_drafts": float(n.mean()), "tokens_per_round": 1 + float(n.mean()),
            "first_token_acceptance": float((n >= 1).float().mean()),
            "per_position_acceptance": [float((n >= k).float().mean()) for k in range(1, bs)]}
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=80)
    ap.add_argument("--selector-steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--anchors", type=int, default=8)
    ap.add_argument("--seqs", type=int, default=256)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--stop-at", type=int, default=0,
                    help="stop after this many drafter steps of the schedule, save nothing (determinism checks)")
    args = ap.parse_args()
    deterministic(SEED)
    target, cfg, _ = load_exported(torch.float32)
    for p in target.parameters():
        p.requires_grad_(False)
    _, tok = load_tokenizer(os.path.join(WORK, "tokenizer.json"))
    dc = DConfig()
    mask_id = tok["tokens"].index(dc.mask_token)
    data = SD.training_sequences(target, args.seqs, SEED + 2)
    dr = DFlash(cfg, dc)
    dr.init_from(target, torch.Generator().manual_seed(SEED + 5))
    sel_params = [dr.selector_prev, dr.selector_next, dr.selector_hidden.weight]
    main_params = [p for p in dr.parameters() if all(p is not q for q in sel_params)]
    E = target.embed.weight
    bs, T = dc.block_size, data.shape[1]
    wslot = torch.tensor([0.0] + [math.exp(-(k - 1) / GAMMA) for k in range(1, bs)])
    order = torch.Generator().manual_seed(SEED + 6)
    t0 = time.time()

    def batch():
        idx = torch.randint(0, len(data), (args.batch,), generator=order)
        seq = torch.from_numpy(data[idx.numpy()].astype(np.int64))
        anchors = torch.randint(1, T - bs + 1, (args.batch, args.anchors), generator=order)
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            tl, hidden, _ = SD.target_states(target, seq)
        # slot k predicts token p+k: the target's distribution at position p+k-1
        src = (slot_index(anchors, bs) - 1).clamp(min=0).reshape(args.batch, -1)
        tl = tl.float().gather(1, src[..., None].expand(-1, -1, tl.shape[-1])).view(args.batch, args.anchors, bs, -1)
        return seq, anchors, hidden, tl

    for stage, steps, params in (("drafter", args.steps, main_params), ("selector", args.selector_steps, sel_params)):
        opt = torch.optim.AdamW(params, lr=args.lr, betas=(0.9, 0.95), weight_decay=0.0)
        for step in range(steps):
            lr = args.lr * min(1.0, (step + 1) / 10) * (0.1 + 0.9 * (1 - step / steps))
            for g in opt.param_groups:
                g["lr"] = lr
            seq, anchors, hidden, tl = batch()
            blocks = block_inputs(seq, anchors, bs, mask_id)
            if stage == "drafter":
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    logits, _ = dr(E, dr.features(hidden), anchors, blocks)
                ce = -(tl.softmax(-1) * logits.float().log_softmax(-1)).sum(-1)            # (B, nb, bs)
                loss = (ce * wslot).sum(-1).mean() / wslot.sum()
            else:
                with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
                    logits, out = dr(E, dr.features(hidden), anchors, blocks)
                label = tl.argmax(-1)[..., 1:]                                             # (B, nb, bs-1)
                pred = torch.cat([blocks[..., :1], label[..., :-1]], -1)                   # teacher forcing
                cand, score = dr.selector_scores(logits.float()[..., 1:, :], out.float()[..., 1:, :], pred)
                hit = cand == label[..., None]
                ok = hit.any(-1)
                loss = F.cross_entropy(score[ok], hit[ok].float().argmax(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            stop = stage == "drafter" and step + 1 == args.stop_at
            if step % 10 == 0 or step == steps - 1 or stop:
                print(f"dflash: {stage} step {step} loss {loss.item():.4f} lr {lr:.2e} {time.time() - t0:.0f}s "
                      f"weights {param_hash(dr)}", flush=True)
            if stop:
                return
    train_s = time.time() - t0
    q = measure(dr, target, mask_id)
    q.update({"steps": args.steps, "selector_steps": args.selector_steps, "batch": args.batch,
              "anchors_per_sequence": args.anchors, "train_sequences": args.seqs, "train_seconds": round(train_s, 1),
              "block_size": bs, "mask_token_id": mask_id, "config": dc.to_dict()})
    print("dflash:", json.dumps(q), flush=True)
    torch.save({"model": dr.state_dict(), "dcfg": dc.to_dict(), "mask_token_id": mask_id, "info": q},
               os.path.join(WORK, "dflash.pt"))
    with open(os.path.join(WORK, "dflash_quality.json"), "w") as f:
        json.dump(q, f, indent=1)


if __name__ == "__main__":
    main()
