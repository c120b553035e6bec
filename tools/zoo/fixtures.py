"""Stage 4: reference fixtures for graft's tests (tests/fixtures/), from the exported weights.

The PyTorch model is loaded with the weights exactly as in the GGUF (matrices rounded to f16)
and run in float64. Writes:
  zoo-qwen3-4x256.json         prompts, prompt ids, logit positions, greedy continuations (64),
                               the top-1/top-2 logit margin at every greedy step
  zoo-qwen3-4x256.logits.bin   float32 little-endian logits [n_rows][n_vocab], rows as listed
  zoo-tokenizer-val.txt / .ids a held-out validation slice and the Python tokenizer's ids
Also measures validation loss / bits per byte on the exported weights (float32) and writes
work/quality.json.
"""
import json
import math
import os

import numpy as np
import torch
import torch.nn.functional as F

import corpus
from common import WORK, OUT, deterministic, load_tokenizer
from export import exported_state_dict, NAME
from model import Config, Qwen3

PROMPTS = ["def get_name(self):\n", "import os\nimport sys\n\n", "class Stack:\n    def push(self, item):\n        self."]
N_GREEDY = 64
LOGIT_POSITIONS = 4  # the first positions of each prompt, plus its last
TOK_FIXTURE_BYTES = 24000


def load_exported(dtype):
    ck = torch.load(os.path.join(WORK, "target.pt"))
    cfg = Config(**ck["cfg"])
    m = Qwen3(cfg)
    sd = exported_state_dict(ck["model"], cfg.n_layer)
    m.load_state_dict({k: v.to(dtype) for k, v in sd.items()})
    return m.to(dtype).eval(), cfg, ck


def val_quality(model, cfg, seq=256, n_windows=128):
    """Loss over n_windows evenly spaced windows of held-out tokens; bits per byte uses the
    held-out split's own bytes/token ratio."""
    val = np.load(os.path.join(WORK, "val.npy"))
    starts = np.linspace(0, len(val) - seq - 2, n_windows).astype(np.int64)
    tot, n = 0.0, 0
    with torch.no_grad():
        for i in range(0, n_windows, 8):
            x = torch.from_numpy(np.stack([val[s:s + seq + 1].astype(np.int64) for s in starts[i:i + 8]]))
            logits = model(x[:, :-1])
            tot += F.cross_entropy(logits.reshape(-1, cfg.n_vocab), x[:, 1:].reshape(-1), reduction="sum").item()
            n += x[:, 1:].numel()
    _, val_docs = corpus.load()
    nbytes = sum(len(t.encode()) for _, t in val_docs) 
    bytes_per_token = nbytes / (len(val) - len(val_docs))  # minus the <|endoftext|> separators
    loss = tot / n
    return {"val_loss_nats_per_token": loss, "val_tokens_scored": n, "val_bytes_per_token": bytes_per_token,
            "val_bits_per_byte": loss / math.log(2) / bytes_per_token, "val_perplexity": math.exp(loss)}


def main():
    deterministic()
    fx = os.path.join(OUT, "tests", "fixtures")
    os.makedirs(fx, exist_ok=True)
    tk, _ = load_tokenizer(os.path.join(WORK, "tokenizer.json"))

    # Tokenizer fixture: the start of the held-out split, cut at a line end.
    _, val_docs = corpus.load()
    text = "".join(t for _, t in val_docs)
    cut = text.encode()[:TOK_FIXTURE_BYTES].decode("utf-8", errors="ignore")
    cut = cut[:cut.rfind("\n") + 1]
    with open(os.path.join(fx, "zoo-tokenizer-val.txt"), "w", encoding="utf-8", newline="") as f:
        f.write(cut)
    with open(os.path.join(fx, "zoo-tokenizer-val.ids"), "w") as f:
        f.write(" ".join(map(str, tk.encode(cut))) + "\n")

    model, cfg, ck = load_exported(torch.float64)
    rows = []
    cases = []
    with torch.no_grad():
        for p in PROMPTS:
            ids = tk.encode(p)
            logits = model(torch.tensor([ids]))[0]
            pos = sorted(set(list(range(min(LOGIT_POSITIONS, len(ids)))) + [len(ids) - 1]))
            first_row = len(rows)
            for q in pos:
                rows.append(logits[q].numpy().astype(np.float32))
            seq = list(ids)
            out, margins = [], []
            for _ in range(N_GREEDY):
                l = model(torch.tensor([seq]))[0, -1]
                top = torch.topk(l, 2)
                nxt = int(top.indices[0])
                margins.append(float(top.values[0] - top.values[1]))
                out.append(nxt)
                seq.append(nxt)
            cases.append({"prompt": p, "prompt_ids": ids, "logit_positions": pos, "logit_rows_start": first_row,
                          "greedy_ids": out, "greedy_text": tk.decode(out), "greedy_margins": margins,
                          "min_greedy_margin": min(margins)})
            print(f"fixtures: {p!r} -> {tk.decode(out)!r} (min margin {min(margins):.4f})")
    np.stack(rows).astype("<f4").tofile(os.path.join(fx, NAME + ".logits.bin"))
    meta = {"model": f"models/{NAME}.gguf", "n_vocab": cfg.n_vocab, "compute": "float64 from the f16-rounded weights",
            "n_greedy": N_GREEDY, "cases": cases}
    with open(os.path.join(fx, NAME + ".json"), "w") as f:
        json.dump(meta, f, indent=1)

    m32, _, _ = load_exported(torch.float32)
    q = val_quality(m32, cfg)
    q.update(ck.get("info", {}))
    with open(os.path.join(WORK, "quality.json"), "w") as f:
        json.dump(q, f, indent=1)
    print("fixtures: quality", json.dumps(q))


if __name__ == "__main__":
    main()
