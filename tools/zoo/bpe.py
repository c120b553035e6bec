"""Byte-level BPE (GPT-2 byte map) with the "qwen2" pre-tokenizer of llama.cpp/graft.

The pre-tokenizer regex (formats.md) is implemented by hand because Debian's python3 has no
`regex` module with \\p{L}/\\p{N}:
(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}
| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+
\\s follows PCRE2 with UCP: \\p{Zs}, \\h and \\v.
"""
import heapq
import unicodedata
from collections import Counter, defaultdict

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]
# llama.cpp token types: 1 normal, 3 control, 4 user-defined.
SPECIAL_TYPES = {"<|endoftext|>": 3, "<|im_start|>": 3, "<|im_end|>": 3, "<think>": 4, "</think>": 4}

_SPACE_EXTRA = {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, 0x180E, 0x2028, 0x2029,
                0x202F, 0x205F, 0x3000} | set(range(0x2000, 0x200B))


def byte_map():
    bs = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


BYTE_MAP = byte_map()
BYTE_UNMAP = {v: k for k, v in BYTE_MAP.items()}


def _cls(c):
    """'L' letter, 'N' number, 'S' whitespace, 'O' other."""
    cat = unicodedata.category(c)
    if cat[0] == "L":
        return "L"
    if cat[0] == "N":
        return "N"
    if ord(c) in _SPACE_EXTRA or cat == "Zs":
        return "S"
    return "O"


def pre_tokenize(text):
    n = len(text)
    cl = [_cls(c) for c in text]
    out = []
    i = 0
    while i < n:
        c = text[i]
        j = None
        # 1. contractions
        if c == "'" and i + 1 < n:
            t2 = text[i + 1:i + 3].lower()
            if t2[:1] in ("s", "t", "m", "d"):
                j = i + 2
            elif t2 in ("re", "ve", "ll"):
                j = i + 3
        # 2. [^\r\n\p{L}\p{N}]?\p{L}+
        if j is None:
            k = None
            if cl[i] == "L":
                k = i
            elif c not in "\r\n" and cl[i] != "N" and i + 1 < n and cl[i + 1] == "L":
                k = i + 1
            if k is not None:
                while k < n and cl[k] == "L":
                    k += 1
                j = k
        # 3. \p{N}
        if j is None and cl[i] == "N":
            j = i + 1
        # 4. ' ?[^\s\p{L}\p{N}]+[\r\n]*'
        if j is None:
            k = None
            if cl[i] == "O":
                k = i
            elif c == " " and i + 1 < n and cl[i + 1] == "O":
                k = i + 1
            if k is not None:
                while k < n and cl[k] == "O":
                    k += 1
                while k < n and text[k] in "\r\n":
                    k += 1
                j = k
        if j is None and cl[i] == "S":
            e = i
            while e < n and cl[e] == "S":
                e += 1
            # 5. \s*[\r\n]+ : ends after the last \r or \n of the whitespace run
            last = -1
            for k in range(e - 1, i - 1, -1):
                if text[k] in "\r\n":
                    last = k
                    break
            if last >= 0:
                j = last + 1
            elif e == n:  # 6. \s+(?!\S) at end of text
                j = e
            elif e - i >= 2:  # 6. give back one whitespace char
                j = e - 1
            else:  # 7. \s+
                j = e
        if j is None:  # unreachable: every char has a class
            j = i + 1
        out.append(text[i:j])
        i = j
    return out


def to_symbols(piece):
    return "".join(BYTE_MAP[b] for b in piece.encode("utf-8"))


def train(texts, vocab_size, log=print):
    """Classic BPE over pre-tokenized words. Each step merges the most frequent adjacent pair;
    ties go to the smallest pair (string comparison of (left, right)). Returns (tokens, merges):
    tokens = the 256 byte symbols in byte order then one token per merge (the specials are added by
    the caller), merges = list of (left, right)."""
    counts = Counter()
    for t in texts:
        counts.update(pre_tokenize(t))
    words = []
    wcounts = []
    for w, cnt in sorted(counts.items()):
        words.append([BYTE_MAP[b] for b in w.encode("utf-8")])
        wcounts.append(cnt)
    pair_count = defaultdict(int)
    pair_where = defaultdict(set)
    for wi, w in enumerate(words):
        for a, b in zip(w, w[1:]):
            pair_count[(a, b)] += wcounts[wi]
            pair_where[(a, b)].add(wi)
    heap = [(-c, p) for p, c in pair_count.items()]
    heapq.heapify(heap)
    tokens = [BYTE_MAP[b] for b in range(256)]
    known = set(tokens)
    merges = []
    target = vocab_size - len(SPECIALS)
    while len(tokens) < target and heap:
        negc, pair = heapq.heappop(heap)
        cur = pair_count.get(pair, 0)
        if cur <= 0:
            continue
        if -negc != cur:
            heapq.heappush(heap, (-cur, pair))
            continue
        if cur < 2:
            break
        a, b = pair
        ab = a + b
        merges.append(pair)
        if ab not in known:
            known.add(ab)
            tokens.append(ab)
        touched = set()
        for wi in sorted(pair_where.pop(pair, ())):
            w = words[wi]
            cnt = wcounts[wi]
            for x, y in zip(w, w[1:]):
                pair_count[(x, y)] -= cnt
            nw = []
            i = 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                    nw.append(ab)
                    i += 2
                else:
                    nw.append(w[i])
                    i += 1
            words[wi] = nw
            for x, y in zip(nw, nw[1:]):
                pair_count[(x, y)] += cnt
                pair_where[(x, y)].add(wi)
                touched.add((x, y))
        pair_count.pop(pair, None)
        for p in touched:
            if pair_count[p] > 0:
                heapq.heappush(heap, (-pair_count[p], p))
        if log and len(merges) % 500 == 0:
            log(f"bpe: {len(merges)} merges, {len(tokens)} tokens, last count {cur}")
    return tokens, merges


class Tokenizer:
    def __init__(self, tokens, merges):
        self.tokens = list(tokens)
        self.ids = {t: i for i, t in enumerate(self.tokens)}
        self.ranks = {tuple(m): r for r, m in enumerate(merges)}
        self.cache = {}

    def encode_word(self, piece):
        r = self.cache.get(piece)
        if r is not None:
            return r
        syms = [BYTE_MAP[b] for b in piece.encode("utf-8")]
        while len(syms) > 1:
            best = None
            for i in range(len(syms) - 1):
                rk = self.ranks.get((syms[i], syms[i + 1]))
                if rk is not None and (best is None or rk < best[0]):
                    best = (rk, i)
            if best is None:
                break
            a, b = syms[best[1]], syms[best[1] + 1]
            out = []
            i = 0
            while i < len(syms):  # merge all occurrences of the best pair, left to right
                if i + 1 < len(syms) and syms[i] == a and syms[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(syms[i])
                    i += 1
            syms = out
        r = [self.ids[s] for s in syms]
        self.cache[piece] = r
        return r

    def encode(self, text):
        """Plain text, no special-token parsing, no BOS."""
        out = []
        for p in pre_tokenize(text):
            out.extend(self.encode_word(p))
        return out

    def decode(self, ids):
        bs = bytearray()
        for i in ids:
            t = self.tokens[i]
            if t in SPECIAL_TYPES:
                bs.extend(t.encode())
            else:
                bs.extend(BYTE_UNMAP[c] for c in t)
        return bs.decode("utf-8", errors="replace")
