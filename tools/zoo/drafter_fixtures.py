"""Stage: reference fixtures for graft's drafters (tests/fixtures/), float64 from the exported
(f16-rounded) weights of the target, its MTP head and the DFlash2 drafter.

Contexts: the target fixture's prompts plus the first 64 ids of the tokenizer fixture. For each
context of n ids the target runs over it; x_n is its greedy next token.
  zoo-mtp.json / .logits.bin: MTP entries i = 0..n-1 read (h_i, token i+1) with token n = x_n;
    K = 3 chained drafts from base n-1 (tokens n+1..n+3) and their logits, float32 [case][step][V].
  zoo-dflash2.json / .features.bin / .logits.bin: the context features (target_layers hidden
    states, float32 [n][3 * 256] per case, concatenated in target_layers order), the block
    [x_n, MASK x 7] at positions n..n+7, the drafts of slots 1..7 (plain argmax and the DFlash2
    selector walk) and the slot logits, float32 [case][slot 1..7][V].
"""
import json
import os

import numpy as np
import torch

import selfdistill as SD
from common import WORK, OUT, deterministic, load_tokenizer
from dflash import DConfig, DFlash
from export import nextn_map, rounded
from export_dflash import exported_state_dict as dflash_weights, NAME as DNAME
from fixtures import load_exported, PROMPTS
from mtp import MTP

K = 3


def margins(rows):
    """top-1 minus top-2 logit of each row: how far a draft token is from a tie."""
    top = rows.topk(2, -1).values
    return (top[..., 0] - top[..., 1]).tolist()


def main():
    deterministic()
    fx = os.path.join(OUT, "tests", "fixtures")
    os.makedirs(fx, exist_ok=True)
    tk, _ = load_tokenizer(os.path.join(WORK, "tokenizer.json"))
    target, cfg, _ = load_exported(torch.float64)
    head = MTP(cfg)
    head.load_state_dict({k: v for k, v in rounded(torch.load(os.path.join(WORK, "mtp.pt"))["model"],
                                                    nextn_map(cfg.n_layer)).items()})
    head = head.double().eval()
    dck = torch.load(os.path.join(WORK, "dflash.pt"))
    dc = DConfig(**dck["dcfg"])
    dr = DFlash(cfg, dc)
    dr.load_state_dict(dflash_weights(dck["model"], dc.n_layer))
    dr = dr.double().eval()
    mask_id = dck["mask_token_id"]
    with open(os.path.join(fx, "zoo-tokenizer-val.ids")) as f:
        val_ids = [int(t) for t in f.read().split()][:64]
    contexts = [(p, tk.encode(p)) for p in PROMPTS] + [("<first 64 ids of zoo-tokenizer-val.ids>", val_ids)]
    E = target.embed.weight
    mtp_cases, mtp_rows, d_cases, d_rows, feats_out = [], [], [], [], []
    with torch.no_grad():
        for label, ids in contexts:
            n = len(ids)
            seq = torch.tensor([ids])
            logits, hidden, h = SD.target_states(target, seq)
            x_n = int(logits[0, -1].argmax())
            cont = SD.greedy(target, torch.tensor([ids]), 8)[0].tolist()
            nxt = torch.tensor([ids[1:] + [x_n]])
            drafts, lg = head.chain(E, h, nxt, K)
            mtp_cases.append({"context": label, "ids": ids, "next_token": x_n,
                              "drafts": drafts[0, -1].tolist(), "target_greedy": cont[:K + 1],
                              "draft_margins": margins(torch.stack([l[0, -1] for l in lg])),
                              "logit_rows_start": len(mtp_rows)})
            mtp_rows += [l[0, -1].numpy().astype(np.float32) for l in lg]
            feats = dr.features(hidden)
            anchors = torch.tensor([[n]])
            blocks = torch.full((1, 1, dc.block_size), mask_id, dtype=torch.long)
            blocks[..., 0] = x_n
            dl, out = dr(E, feats, anchors, blocks)
            plain = dr.draft(dl, out, torch.tensor([[x_n]]), False)[0, 0].tolist()
            walk = dr.draft(dl, out, torch.tensor([[x_n]]), True)[0, 0].tolist()
            d_cases.append({"context": label, "ids": ids, "next_token": x_n, "block_positions": [n, n + dc.block_size - 1],
                            "block_ids": blocks[0, 0].tolist(), "drafts_argmax": plain, "drafts_selector": walk,
                            "argmax_margins": margins(dl[0, 0, 1:]),
                            "target_greedy": cont[:dc.block_size], "feature_rows_start": sum(len(f) for f in feats_out),
                            "logit_rows_start": len(d_rows)})
            feats_out.append(feats[0].numpy().astype(np.float32))
            d_rows += [r.numpy().astype(np.float32) for r in dl[0, 0, 1:]]
            print(f"drafter_fixtures: {label!r}: next {x_n} target {cont[:8]} mtp {drafts[0, -1].tolist()} "
                  f"dflash {plain} selector {walk}", flush=True)
    np.stack(mtp_rows).astype("<f4").tofile(os.path.join(fx, "zoo-mtp.logits.bin"))
    with open(os.path.join(fx, "zoo-mtp.json"), "w") as f:
        json.dump({"model": "models/zoo-qwen3-4x256.gguf (blk.4 = nextn)", "K": K, "n_vocab": cfg.n_vocab,
                   "compute": "float64 from the f16-rounded weights", "cases": mtp_cases}, f, indent=1)
    np.concatenate(feats_out).astype("<f4").tofile(os.path.join(fx, "zoo-dflash2.features.bin"))
    np.stack(d_rows).astype("<f4").tofile(os.path.join(fx, "zoo-dflash2.logits.bin"))
    with open(os.path.join(fx, "zoo-dflash2.json"), "w") as f:
        json.dump({"model": f"models/{DNAME}.gguf", "target": "models/zoo-qwen3-4x256.gguf",
                   "block_size": dc.block_size, "mask_token_id": mask_id, "target_layers": dc.target_layers,
                   "feature_width": len(dc.target_layers) * cfg.n_embd, "n_vocab": cfg.n_vocab,
                   "compute": "float64 from the f16-rounded weights", "cases": d_cases}, f, indent=1)


if __name__ == "__main__":
    main()
