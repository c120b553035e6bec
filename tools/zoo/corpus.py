"""Corpus for the model zoo: the Python 3 standard library sources installed by Debian's python3.

Deterministic: files are sorted by relative path; a file goes to the validation split when the
SHA-256 of its relative path, read as an integer, is 0 mod VAL_MOD (about 1 file in 20).
Excluded: test suites, encodings/ (codec tables), pydoc_data/ (a giant docs string),
_sysconfigdata* (machine-generated), site-/dist-packages, and anything not UTF-8.
Licence: Python Software Foundation License (see /usr/lib/python3.11/LICENSE.txt).
"""
import hashlib
import os

ROOT = "/usr/lib/python3.11"
VAL_MOD = 20
EXCLUDE_DIRS = {"test", "tests", "idle_test", "encodings", "pydoc_data", "site-packages",
                "dist-packages", "__pycache__", "lib-dynload"}
DOC_SEP = "\n\n"


def list_files(root=ROOT):
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in EXCLUDE_DIRS and not d.startswith("config-"))
        for f in sorted(filenames):
            if f.endswith(".py") and not f.startswith("_sysconfigdata"):
                out.append(os.path.relpath(os.path.join(dirpath, f), root))
    return sorted(out)


def is_val(rel):
    return int(hashlib.sha256(rel.encode()).hexdigest(), 16) % VAL_MOD == 0


def load(root=ROOT):
    """Returns (train_docs, val_docs): lists of (relpath, text)."""
    train, val = [], []
    for rel in list_files(root):
        with open(os.path.join(root, rel), "rb") as fh:
            raw = fh.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        text = text.replace("\r\n", "\n")
        (val if is_val(rel) else train).append((rel, text))
    return train, val


if __name__ == "__main__":
    tr, va = load()
    nb = lambda docs: sum(len(t.encode()) for _, t in docs)
    print(f"train files {len(tr)} bytes {nb(tr)}; val files {len(va)} bytes {nb(va)}")
