"""Stage 2: train the zoo target (qwen3, 4 x 256) on work/train.npy; writes work/target.pt.

Deterministic: fixed seed, fixed step count, 2 threads, torch deterministic algorithms.
Matmuls run in bf16 autocast (oneDNN; Debian's f32 CPU path is ~9x slower here), master
weights and AdamW state in f32.
"""
import argparse
import json
import math
import os
import time

import numpy as np
import torch
import torch.nn.functional as F

from common import WORK, SEED, deterministic
from model import Config, Qwen3


def evaluate(model, data, seq, n_windows):
    """Mean next-token loss (nats) over n_windows evenly spaced windows of seq + 1 tokens."""
    model.eval()
    starts = np.linspace(0, len(data) - seq - 2, n_windows).astype(np.int64)
    tot, n = 0.0, 0
    with torch.no_grad():
        for i in range(0, n_windows, 8):
            x = torch.from_numpy(np.stack([data[s:s + seq + 1].astype(np.int64) for s in starts[i:i + 8]]))
            with torch.autocast("cpu", dtype=torch.bfloat16):
                logits = model(x[:, :-1])
            loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1), reduction="sum")
            tot += loss.item()
            n += x[:, 1:].numel()
    model.train()
    return tot / n, starts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--eval-windows", type=int, default=64)
    ap.add_argument("--stop-at", type=int, default=0,
                    help="stop after this many steps of the --steps schedule (0: run it all)")
    args = ap.parse_args()
    deterministic(SEED)
    cfg = Config()
    train = np.load(os.path.join(WORK, "train.npy"))
    val = np.load(os.path.join(WORK, "val.npy"))
    model = Qwen3(cfg)
    gen = torch.Generator().manual_seed(SEED)
    model.init_weights(gen)
    decay = [p for p in model.parameters() if p.dim() == 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    data_gen = torch.Generator().manual_seed(SEED + 1)
    t0 = time.time()
    tokens_seen = 0
    log = []
    for step in range(args.stop_at or args.steps):
        if step < args.warmup:
            lr = args.lr * (step + 1) / args.warmup
        else:
            pr = (step - args.warmup) / max(1, args.steps - args.warmup)
            lr = args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * pr)))
        for g in opt.param_groups:
            g["lr"] = lr
        starts = torch.randint(0, len(train) - args.seq - 1, (args.batch,), generator=data_gen).tolist()
        x = torch.from_numpy(np.stack([train[s:s + args.seq + 1].astype(np.int64) for s in starts]))
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, cfg.n_vocab), x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        tokens_seen += x[:, 1:].numel()
        if step % 10 == 0 or step == (args.stop_at or args.steps) - 1:
            el = time.time() - t0
            print(f"train: step {step} loss {loss.item():.4f} lr {lr:.2e} tokens {tokens_seen} "
                  f"{el:.0f}s ({tokens_seen / el:.0f} tok/s)", flush=True)
            log.append((step, loss.item()))
        if step % 50 == 49:
            torch.save({"model": model.state_dict(), "cfg": cfg.to_dict(), "step": step + 1,
                        "tokens_seen": tokens_seen}, os.path.join(WORK, "target_partial.pt"))
    train_s = time.time() - t0
    val_loss, _ = evaluate(model, val, args.seq, args.eval_windows)
    info = {"steps": args.steps, "stopped_at": args.stop_at or args.steps, "batch": args.batch, "seq": args.seq, "lr": args.lr, "tokens_seen": tokens_seen,
            "train_seconds": round(train_s, 1), "final_train_loss": log[-1][1], "val_loss_bf16": val_loss,
            "seed": SEED}
    print("train:", json.dumps(info))
    torch.save({"model": model.state_dict(), "cfg": cfg.to_dict(), "info": info}, os.path.join(WORK, "target.pt"))


if __name__ == "__main__":
    main()
