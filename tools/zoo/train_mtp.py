"""Stage: train the target's MTP head by self-distillation; writes work/mtp.pt, work/mtp_quality.json.

Data: the target's own greedy continuations of training-split snippets (selfdistill.py). Loss:
cross-entropy of the head's step-1 logits at entry i against the target's softmax at position
i+1 (soft labels), over every entry. The target (weights as exported, f16-rounded) is frozen.
Measured on held-out prompts in float32, greedy chain verification against the target's greedy
continuation: at every base position t of the continuation, drafts d1..dK from (h_t, t_{t+1});
accepted = the longest prefix equal to t_{t+2..t+K+1}.
"""
import argparse
import json
import os
import time

import numpy as np
import torch
import torch.nn.functional as F

import selfdistill as SD
from common import WORK, SEED, deterministic, param_hash
from fixtures import load_exported
from mtp import MTP

K = 3


def acceptance(drafts, seq, first, K):
    """drafts (B, T-1, K) from base t = 0..T-2; seq (B, T). Rounds at t = first..T-K-2."""
    B, T = seq.shape
    ts = range(first, T - K - 1)
    truth = torch.stack([seq[:, t + 2:t + 2 + K] for t in ts], 1)        # (B, R, K)
    dr = torch.stack([drafts[:, t] for t in ts], 1)
    match = (dr == truth).long()
    accepted = match.cumprod(-1).sum(-1)                                 # (B, R)
    per_pos = [float((accepted >= k + 1).float().mean()) for k in range(K)]
    return {"rounds": int(accepted.numel()), "first_token_acceptance": per_pos[0],
            "per_position_acceptance": per_pos, "mean_accepted_per_round": float(accepted.float().mean()),
            "acceptance_rate": float(accepted.float().mean()) / K, "tokens_per_round": 1 + float(accepted.float().mean())}


@torch.no_grad()
def measure(head, target):
    seq = torch.from_numpy(SD.heldout_sequences(target).astype(np.int64))
    _, _, h = SD.target_states(target, seq)
    drafts, _ = head.chain(target.embed.weight, h[:, :-1], seq[:, 1:], K)
    return acceptance(drafts, seq, SD.EVAL_CTX - 1, K)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=80)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seqs", type=int, default=256)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--stop-at", type=int, default=0,
                    help="stop after this many steps of the --steps schedule, save nothing (determinism checks)")
    args = ap.parse_args()
    deterministic(SEED)
    target, cfg, _ = load_exported(torch.float32)
    for p in target.parameters():
        p.requires_grad_(False)
    t0 = time.time()
    data = SD.training_sequences(target, args.seqs, SEED + 2)
    gen_s = time.time() - t0
    head = MTP(cfg)
    head.init_from(target, torch.Generator().manual_seed(SEED + 3))
    opt = torch.optim.AdamW(head.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.0)
    order = torch.Generator().manual_seed(SEED + 4)
    E = target.embed.weight
    t1 = time.time()
    for step in range(args.steps):
        lr = args.lr * min(1.0, (step + 1) / 10) * (0.1 + 0.9 * (1 - step / args.steps))
        for g in opt.param_groups:
            g["lr"] = lr
        idx = torch.randint(0, len(data), (args.batch,), generator=order)
        seq = torch.from_numpy(data[idx.numpy()].astype(np.int64))
        with torch.autocast("cpu", dtype=torch.bfloat16):
            with torch.no_grad():
                tl, _, h = SD.target_states(target, seq)
            logits, _, _ = head(E, h[:, :-1], seq[:, 1:])
        soft = tl[:, 1:].float().softmax(-1)
        loss = -(soft * logits.float().log_softmax(-1)).sum(-1).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(head.parameters(), 1.0)
        opt.step()
        if step % 10 == 0 or step == args.steps - 1 or step + 1 == args.stop_at:
            print(f"mtp: step {step} loss {loss.item():.4f} lr {lr:.2e} {time.time() - t1:.0f}s "
                  f"weights {param_hash(head)}", flush=True)
        if step + 1 == args.stop_at:
            return
    train_s = time.time() - t1
    q = measure(head, target)
    q.update({"steps": args.steps, "batch": args.batch, "train_sequences": args.seqs, "final_loss": loss.item(),
              "greedy_data_seconds": round(gen_s, 1), "train_seconds": round(train_s, 1), "K": K})
    print("mtp:", json.dumps(q), flush=True)
    torch.save({"model": head.state_dict(), "info": q}, os.path.join(WORK, "mtp.pt"))
    with open(os.path.join(WORK, "mtp_quality.json"), "w") as f:
        json.dump(q, f, indent=1)


if __name__ == "__main__":
    main()
