#!/usr/bin/env python3
"""What fusing drafters could gain at best, from the traces bench/spec/ceiling.sh collects.

Per prompt the folder holds four runs over the same prompt (greedy, so the same tokens):
  full-CAT-NAME.jsonl   all three drafters, every proposal verified (profiles/every_round.toml), with
                        --spec-trace: per round the accepted length of the merged tree and, per
                        drafter, the tokens its proposal alone would have had accepted
  ng-CAT-NAME.json(l)   ngram alone, the default round policy   (decode speed, and its trace)
  mix-CAT-NAME.json(l)  all three, the default round policy     (decode speed, and its trace)
  none-CAT-NAME.json    plain decoding                          (decode speed)

From the full traces, on the rounds of those runs:
  tokens/round   1 + accepted of the merged tree against 1 + what ngram alone would have had
                 accepted: what the other drafters add to ngram when every node is verified, the
                 gain a flat verify curve (a GPU's) would turn into speed, at most
  oracle         each round verifies exactly the path that will be accepted (no wasted row), timed
                 with the verify pass's cost by rows measured in these runs. The oracle mix knows
                 every drafter's outcome in advance and per round picks ngram's path, another
                 drafter's, or the merged tree's (paying the proposals it needs: the cheapest drafter
                 that found the longest path, or all of them where only the merged tree did), the
                 choices that maximise tokens per second over the whole corpus. The oracle ngram
                 verifies ngram's path. No policy can do better than its oracle, so "oracle mix /
                 oracle ngram" bounds what the other drafters' tokens can add to ngram's; "oracle
                 mix / ngram (measured)" bounds the measured ratio itself, most of it the rows a
                 real policy verifies in vain, which the oracle never does.
usage: ceiling.py FOLDER
"""
import collections
import fnmatch
import glob
import gzip
import io
import tarfile
import json
import os
import statistics
import sys


class Runs:
    """The runs' files: in FOLDER/runs.tar.gz (as ceiling.sh leaves them), or loose in FOLDER."""

    def __init__(self, d):
        self.d = d
        self.tar = None
        path = os.path.join(d, "runs.tar.gz")
        if os.path.exists(path):
            with tarfile.open(path, "r:gz") as t:
                self.tar = {m.name: t.extractfile(m).read().decode() for m in t.getmembers() if m.isfile()}

    def names(self, pattern):
        if self.tar is not None:
            return sorted(n for n in self.tar if fnmatch.fnmatch(n, pattern))
        return sorted(os.path.basename(p) for p in glob.glob(os.path.join(self.d, pattern)))

    def text(self, name):
        if self.tar is not None:
            return self.tar[name]
        path = os.path.join(self.d, name)
        with (gzip.open(path, "rt") if name.endswith(".gz") else open(path)) as f:
            return f.read()

    def lines(self, name):
        return io.StringIO(self.text(name))


def traces(runs, prefix):
    return runs.names(prefix + "*.jsonl") + runs.names(prefix + "*.jsonl.gz")


def key_of(path):
    """CATEGORY-NAME of full-CATEGORY-NAME.jsonl[.gz]."""
    base = os.path.basename(path)
    return base[len("full-"):base.index(".jsonl")]


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        sys.exit(__doc__)
    d = sys.argv[1]
    runs = Runs(d)
    fulls = traces(runs, "full-")
    if not fulls:
        sys.exit("ceiling.py: no full-*.jsonl[.gz] traces in %s" % d)

    # The verify pass's time by verified nodes (rows - 1), medians over every traced round.
    by = collections.defaultdict(list)
    for fn in traces(runs, ""):
        for line in runs.lines(fn):
            r = json.loads(line)
            by[r["verified"]].append(r["verify_us"])
    T = {k: statistics.median(v) for k, v in by.items() if len(v) >= 5}
    if 0 not in T:
        sys.exit("ceiling.py: fewer than 5 one-row passes in the traces")
    ks = sorted(T)

    def t(k):
        # The cheapest measured pass of at least k nodes (a pass can always carry padding rows): a
        # cost never falls with more rows, and noise in sizes seldom verified counts for nothing.
        return min(T[x] for x in ks if x >= k) if k <= ks[-1] else T[ks[-1]]

    print("verify pass by rows, in these runs (time / one row; rounds measured):")
    print("  " + "  ".join("%d: %.2f (%d)" % (k + 1, T[k] / T[0], len(by[k])) for k in ks))

    cats = collections.defaultdict(collections.Counter)
    choices = collections.defaultdict(list)  # per trace, per round: (tokens, us) of each path the oracle may take
    for fn in fulls:
        key = key_of(fn)
        C = cats[key.split("-")[0]]
        for line in runs.lines(fn):
            r = json.loads(line)
            a, asked = r["accepted"], r["asked"]
            ng = asked.get("ngram", {"alone": 0, "propose_us": 0.0})
            props = {k: v["propose_us"] for k, v in asked.items()}
            C["rounds"] += 1
            C["mix_tok"] += 1 + a
            C["ng_tok"] += 1 + ng["alone"]
            C["mix_better"] += a > ng["alone"]
            found = [k for k, v in asked.items() if v["alone"] == a]
            options = [(1 + v["alone"], t(v["alone"]) + v["propose_us"]) for v in asked.values()]
            options.append((1 + a, t(a) + (min(props[k] for k in found) if found else sum(props.values()))))
            C["on_tok"] += 1 + ng["alone"]
            C["on_us"] += t(ng["alone"]) + ng["propose_us"]
            choices[fn].append(options)
        for cfg in ("ng", "mix", "none"):
            s = json.loads(runs.text("%s-%s.json" % (cfg, key)))["stats"]
            C[cfg + "_gen"] += s["generated_tokens"]
            C[cfg + "_s"] += s["decode_seconds"]
    # The oracle mix's choices: the rate r of the best choice is the fixed point of "per round, the
    # option maximising tokens - r * time" (Dinkelbach's iteration for a ratio of sums).
    r = 0.0
    for _ in range(100):
        tok = us = 0.0
        for options in (o for opts in choices.values() for o in opts):
            best = max(options, key=lambda o: o[0] - r * o[1])
            tok, us = tok + best[0], us + best[1]
        if abs(tok / us - r) < 1e-12:
            break
        r = tok / us
    for fn, opts in choices.items():
        C = cats[key_of(fn).split("-")[0]]
        for options in opts:
            best = max(options, key=lambda o: o[0] - r * o[1])
            C["om_tok"] += best[0]
            C["om_us"] += best[1]
    total = collections.Counter()
    for C in cats.values():
        total.update(C)
    rows = sorted(cats.items()) + [("all", total)]

    print()
    print("| category | rounds | tokens/round mix / ngram alone (every node verified) | rounds the mix beat ngram |"
          " ngram / plain | mix / plain | mix / ngram (measured) | oracle mix / oracle ngram | oracle mix / ngram (measured) |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for name, C in rows:
        plain = C["none_gen"] / C["none_s"]
        ngs = C["ng_gen"] / C["ng_s"]
        mix = C["mix_gen"] / C["mix_s"]
        om = C["om_tok"] / C["om_us"]
        on = C["on_tok"] / C["on_us"]
        print("| %s | %d | %.2f / %.2f = %.3f | %.0f%% | %.2fx | %.2fx | %.3f | %.3f | %.3f |" % (
            name, C["rounds"], C["mix_tok"] / C["rounds"], C["ng_tok"] / C["rounds"], C["mix_tok"] / C["ng_tok"],
            100.0 * C["mix_better"] / C["rounds"], ngs / plain, mix / plain, mix / ngs, om / on, om * 1e6 / ngs))


if __name__ == "__main__":
    main()
