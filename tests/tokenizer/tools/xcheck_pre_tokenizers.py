#!/usr/bin/env python3
"""Cross-checks graft's PCRE2 pre-tokenizers against Python's `regex` module (Unicode semantics
like HF tokenizers' Oniguruma) on the vocabulary test strings, tricky strings and random ones.

usage: xcheck_pre_tokenizers.py BUILD/bin/pre_tokenizer_dump [SEED]
needs: python3 with the `regex` module. Not part of ctest; run after changing a rule.
"""
import os
import random
import subprocess
import sys

import regex

DUMP = sys.argv[1]
random.seed(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
VOCAB_INP = os.path.join(ROOT, '..', 'shared', 'testdata', 'vocab', 'ggml-vocab-gpt-2.gguf.inp')

def load_patterns():
    out = subprocess.run([DUMP, '--patterns'], input=b'', capture_output=True).stdout.decode()
    rules = {}
    lines = out.split('\n')
    i = 0
    while i < len(lines):
        if lines[i].startswith('#RULE '):
            name = lines[i][6:]
            pats = lines[i+1].split('\x02')[:-1]
            rules[name] = pats
            i += 2
        else:
            i += 1
    return rules

def to_py(p):
    return regex.sub(r'\\x\{([0-9A-Fa-f]+)\}', lambda m: '\\U%08X' % int(m.group(1), 16), p)

def split(pats, s):
    pieces = [s] if s else []
    for p in pats:
        r = regex.compile(to_py(p), regex.V0)
        nxt = []
        for piece in pieces:
            last = 0
            for m in r.finditer(piece):
                b, e = m.span()
                if b > last: nxt.append(piece[last:b])
                if e > b: nxt.append(piece[b:e])
                last = e
            if last < len(piece): nxt.append(piece[last:])
        pieces = nxt
    return pieces

try:
    inp = open(VOCAB_INP, encoding='utf-8').read().split('\n__ggml_vocab_test__\n')[:-1]
except OSError:
    inp = []
tricky = [
  "I've don't WE'VE it's 'S 'sS 'll 'LL 'Re", "'ſ test", "Hello\n\n\n  World  ", "a  b", "a   ", "   a", "\t\tx\n",
  "12345678901", "3.14159 $100,000 1,234,567", "x1y22z333w4444", "¹²³ ½ ① ٣٤٥ १२३", "Cửa Việt", "e\u0301te\u0301",
  "नमस्ते दुनिया", "สวัสดีครับ", "日本語のテキストです。カタカナ", "한국어 텍스트", "中文，测试。「引号」", "Ωmega Kelvin K ſ ι",
  "for (int i = 0; i < 10; ++i) {\n\treturn x->y;\n}", "a/b//c\\d", "https://example.com/path?q=1&r=2", "\r\n\r\n", "x\r\ny",
  "<sentinel:12>IMGIMGABZ text", "😁👍🏽 👨‍👩‍👧", "non\u00a0breaking\u3000ideographic\u2028line", "ÀÖØöøƺ ǄʓʕʯΆΈ ℂℇ",
  "!!!!...???", "   \n   \n", "\n", " ", "", "CamelCaseWord XMLHttpRequest iPhone", "ÉCOLE école", "123 4567 89012 345678",
]
pool = list("aBcXyZ '\"-_.,;:!?()[]{}<>/\\|@#$%^&*+=~`") + [' ', ' ', '  ', '\n', '\r', '\t', '\u00a0', '\u3000', '\x85', '\x1c', '\x1f', '\x0b', '\x0c', '\u180e', '\u200b', '\ufeff', '\u2029', '\u202f', '\x7f'] + \
       list('0123456789') + ['ſ', 'é', 'e\u0301', 'ü', 'ß', 'Ω', 'K', 'Д', 'ж', 'ا', '٣', 'क', '्', 'ि', '日', '本', 'の', 'カ', '한', '中', '，', '。', '～', '😁', '\u200d', '🏽', "'s", "'T", "'re", "'VE", "'ll", "'d", "'M"]
rand = [''.join(random.choice(pool) for _ in range(random.randint(1, 30))) for _ in range(1500)]
strs = inp + tricky + rand

data = '\0'.join(strs) + '\0'
out = subprocess.run([DUMP], input=data.encode('utf-8'), capture_output=True)
if out.returncode: print(out.stderr.decode()); sys.exit(1)
text = out.stdout.decode('utf-8')
rules = load_patterns()
bad = 0
for block in text.split('#RULE ')[1:]:
    name, rest = block.split('\n', 1)
    got_all = rest.rstrip('\n').split('\x02')[:-1]
    pats = rules[name]
    nbad = 0
    for s, got in zip(strs, got_all):
        g = got.split('\x01') if got else []
        e = split(pats, s)
        if g != e:
            nbad += 1
            if nbad <= 3: print(name, repr(s), '\n   got', g, '\n   exp', e)
    print(f'{name}: {len(strs)-nbad}/{len(strs)} agree')
    bad += nbad
sys.exit(1 if bad else 0)
