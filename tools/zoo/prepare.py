"""Stage 1: corpus -> BPE tokenizer (work/tokenizer.json) -> token ids (work/{train,val}.npy)."""
import os
import time

import numpy as np

import bpe
import corpus
from common import WORK, save_tokenizer, load_tokenizer

VOCAB = 4096


def main():
    os.makedirs(WORK, exist_ok=True)
    t0 = time.time()
    train_docs, val_docs = corpus.load()
    tokens, merges = bpe.train([t for _, t in train_docs], VOCAB, log=None)
    types = [1] * len(tokens) + [bpe.SPECIAL_TYPES[s] for s in bpe.SPECIALS]
    tokens = tokens + bpe.SPECIALS
    assert len(tokens) == VOCAB, len(tokens)
    save_tokenizer(os.path.join(WORK, "tokenizer.json"), tokens, merges, types)
    tk, _ = load_tokenizer(os.path.join(WORK, "tokenizer.json"))
    eot = tk.ids["<|endoftext|>"]
    stats = {}
    for name, docs in (("train", train_docs), ("val", val_docs)):
        ids = []
        nbytes = 0
        for _, text in docs:
            ids.append(eot)
            ids.extend(tk.encode(text))
            nbytes += len(text.encode("utf-8"))
        arr = np.array(ids, dtype=np.uint16)
        np.save(os.path.join(WORK, f"{name}.npy"), arr)
        stats[name] = (len(docs), nbytes, len(arr))
        print(f"prepare: {name}: {len(docs)} files, {nbytes} bytes, {len(arr)} tokens "
              f"({nbytes / len(arr):.2f} bytes/token)")
    with open(os.path.join(WORK, "corpus_stats.txt"), "w") as f:
        for k, v in stats.items():
            f.write(f"{k} files={v[0]} bytes={v[1]} tokens={v[2]}\n")
    print(f"prepare: {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
