#!/usr/bin/env python3
"""Tables for bench/spec/llamacpp_side_by_side.sh (graft vs llama.cpp, speculative decoding).

usage: bench/spec/llamacpp_summarize.py OUT_DIR

OUT_DIR holds runs.tsv (rep, category, prompt, file per line) and per run
r<rep>.<category>.<prompt>.llama.json (tools/crosscheck/llamacpp_spec_bench.mjs: plain and ngram),
.graft-none.json and .graft-ngram.json (`graft run --json`). Prints one markdown table per
category (a row per prompt and run, then the category pooled) and an overall one (a row per
category and `all`), then the speculation counters of both engines.

  tok/s         decode tok/s = sum(generated - 1) / sum(decode seconds) over the runs pooled (the
                first token comes from the prompt pass on both engines)
  G-ngram/L-ngram
                graft --draft ngram tok/s over llama.cpp's with the n-gram token predictor
  L ngram/plain, G ngram/plain
                each engine's speedup from its own n-gram speculation
  L tok/round   llama.cpp: (generated - 1) / decode rounds (decode-phase batches the target
                evaluated; a token served from a validated prediction takes none)
  G tok/round   graft: stats.speculative.tokens_per_round (pooled: weighted by rounds)
  ids           `same`: all four generated the same ids; otherwise which differ from llama.cpp
                plain (L' = llama.cpp ngram, G = graft plain, G' = graft ngram) and at which index,
                and `prompt ids` when the engines tokenized the prompt differently

Exit status 1 when an engine's ngram run generated other ids than its own plain run (greedy
speculation must be lossless); graft and llama.cpp plain differing is reported, not an error.
"""
import csv
import json
import os
import statistics
import sys

CATEGORY_ORDER = ["code_new", "code_repeat", "structured", "free"]


def load(path):
    with open(path) as f:
        text = f.read()
    try:
        return json.loads(text[text.index("{"):])
    except ValueError as e:
        sys.exit("llamacpp_summarize.py: %s: no JSON object (%s)" % (path, e))


def first_difference(a, b):
    for k in range(min(len(a), len(b))):
        if a[k] != b[k]:
            return k
    return None if len(a) == len(b) else min(len(a), len(b))


def ratio(a, b):
    return a / b if a is not None and b else None


def fmt(x, spec="%.1f"):
    return "-" if x is None else spec % x


def read_runs(out):
    runs = []
    with open(os.path.join(out, "runs.tsv")) as f:
        for row in csv.DictReader(f, delimiter="\t"):
            base = os.path.join(out, "r%s.%s.%s" % (row["rep"], row["category"], row["prompt"]))
            llama = load(base + ".llama.json")
            gp = load(base + ".graft-none.json")
            gn = load(base + ".graft-ngram.json")
            r = dict(rep=int(row["rep"]), category=row["category"], prompt=row["prompt"])
            lp, ln = llama["plain"], llama["ngram"]
            r["L"] = dict(tokens=max(lp["generated_tokens"] - 1, 0), seconds=lp["decode_seconds"], ids=lp["generated_ids"])
            d = ln.get("decode") or {}
            r["L'"] = dict(tokens=max(ln["generated_tokens"] - 1, 0), seconds=ln["decode_seconds"], ids=ln["generated_ids"],
                           rounds=d.get("rounds", 0), with_pred=d.get("rounds_with_prediction", 0),
                           drafted=d.get("drafted", 0), validated=d.get("validated", 0), refuted=d.get("refuted", 0),
                           accepted=d.get("accepted", 0), max_validated=d.get("max_validated_in_a_round", 0))
            for key, g in (("G", gp), ("G'", gn)):
                s = g.get("stats", {})
                sp = s.get("speculative") or {}
                rounds = int(sp.get("rounds", 0))
                r[key] = dict(tokens=max(int(s.get("generated_tokens", 0)) - 1, 0), seconds=float(s.get("decode_seconds", 0)),
                              ids=g.get("generated_ids") or [], rounds=rounds,
                              emitted=float(sp.get("tokens_per_round", 0)) * rounds,
                              drafted=int(sp.get("drafted", 0)), accepted=int(sp.get("accepted", 0)))
            r["predictor"] = llama.get("predictor") or {}
            diffs = []
            if gp.get("prompt_ids") is not None and gp.get("prompt_ids") != llama.get("prompt_ids"):
                diffs.append("prompt ids")
            for key in ("L'", "G", "G'"):
                k = first_difference(r["L"]["ids"], r[key]["ids"])
                if k is not None:
                    diffs.append("%s@%d" % (key, k))
            r["diffs"] = diffs
            r["lossless"] = (first_difference(r["L"]["ids"], r["L'"]["ids"]) is None
                             and first_difference(r["G"]["ids"], r["G'"]["ids"]) is None)
            runs.append(r)
    return runs


def pooled(runs):
    a = {}
    for key in ("L", "L'", "G", "G'"):
        tokens = sum(r[key]["tokens"] for r in runs)
        seconds = sum(r[key]["seconds"] for r in runs)
        a[key] = ratio(tokens, seconds)
    a["L tpr"] = ratio(sum(r["L'"]["tokens"] for r in runs), sum(r["L'"]["rounds"] for r in runs))
    a["G tpr"] = ratio(sum(r["G'"]["emitted"] for r in runs), sum(r["G'"]["rounds"] for r in runs))
    a["same"] = sum(1 for r in runs if not r["diffs"])
    a["n"] = len(runs)
    per_run = [ratio(ratio(r["G'"]["tokens"], r["G'"]["seconds"]), ratio(r["L'"]["tokens"], r["L'"]["seconds"])) for r in runs]
    per_run = [x for x in per_run if x is not None]
    a["median G'/L'"] = statistics.median(per_run) if per_run else None
    return a


HEAD = ("| %s | L plain | L ngram | G plain | G ngram | G-ngram/L-ngram | L ngram/plain | G ngram/plain "
        "| L tok/round | G tok/round | %s |")


def row(label, a, ids):
    return "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        label, fmt(a["L"]), fmt(a["L'"]), fmt(a["G"]), fmt(a["G'"]), fmt(ratio(a["G'"], a["L'"]), "%.2f"),
        fmt(ratio(a["L'"], a["L"]), "%.2f"), fmt(ratio(a["G'"], a["G"]), "%.2f"), fmt(a["L tpr"], "%.2f"),
        fmt(a["G tpr"], "%.2f"), ids)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    runs = read_runs(sys.argv[1])
    if not runs:
        sys.exit("llamacpp_summarize.py: no runs in %s" % sys.argv[1])
    reps = max(r["rep"] for r in runs)
    cats = [c for c in CATEGORY_ORDER if any(r["category"] == c for r in runs)]
    cats += sorted({r["category"] for r in runs} - set(cats))
    pred = runs[0]["predictor"]
    print("L = llama.cpp (node-llama-cpp), predictor: %s, lookup %s, pattern %s..%s, predicts %s..%s tokens; "
          "G = graft, --draft ngram. Decode tok/s, pooled over the runs." % (
              pred.get("name"), pred.get("lookup"), pred.get("pattern_min"), pred.get("pattern_max") or "any",
              pred.get("predict_min"), pred.get("predict_max")))
    for c in cats:
        cr = [r for r in runs if r["category"] == c]
        print("\n### %s\n" % c)
        print(HEAD % ("prompt", "ids"))
        print("|---" + "|---:" * 9 + "|---|")
        for r in cr:
            label = r["prompt"] + (" (rep %d)" % r["rep"] if reps > 1 else "")
            print(row(label, pooled([r]), "same" if not r["diffs"] else "differ: " + ", ".join(r["diffs"])))
        a = pooled(cr)
        print(row("**%s**" % c, a, "%d/%d same" % (a["same"], a["n"])))
    print("\n### overall\n")
    print(HEAD % ("category", "ids same") + " median G-ngram/L-ngram |")
    print("|---" + "|---:" * 9 + "|---:|---:|")
    for label, cr in [(c, [r for r in runs if r["category"] == c]) for c in cats] + [("**all**", runs)]:
        a = pooled(cr)
        print(row(label, a, "%d/%d" % (a["same"], a["n"])) + " %s |" % fmt(a["median G'/L'"], "%.2f"))

    print("\n### speculation counters (summed over the runs)\n")
    print("| category | L rounds | L rounds with prediction | L predicted | L validated | L refuted | L acceptance "
          "| L most validated in a round | G rounds | G drafted | G accepted | G acceptance |")
    print("|---" + "|---:" * 11 + "|")
    for label, cr in [(c, [r for r in runs if r["category"] == c]) for c in cats] + [("**all**", runs)]:
        s = {k: sum(r["L'"][k] for r in cr) for k in ("rounds", "with_pred", "drafted", "validated", "refuted")}
        g = {k: sum(r["G'"][k] for r in cr) for k in ("rounds", "drafted", "accepted")}
        print("| %s | %d | %d | %d | %d | %d | %s | %d | %d | %d | %d | %s |" % (
            label, s["rounds"], s["with_pred"], s["drafted"], s["validated"], s["refuted"],
            fmt(ratio(s["validated"], s["drafted"]), "%.3f"), max(r["L'"]["max_validated"] for r in cr),
            g["rounds"], g["drafted"], g["accepted"], fmt(ratio(g["accepted"], g["drafted"]), "%.3f")))

    bad = [r for r in runs if not r["lossless"]]
    cross = [r for r in runs if r["lossless"] and r["diffs"]]
    if cross:
        print("\nnote: graft and llama.cpp plain decoding differ on %d run(s) (%s): a near-tie or a real difference; "
              "tools/crosscheck/compare.sh can tell" % (len(cross), ", ".join("%s/%s" % (r["category"], r["prompt"]) for r in cross)))
    if bad:
        print("\n!!!!! an engine's ngram run generated other ids than its own plain run: %s" % ", ".join(
            "%s/%s rep %d (%s)" % (r["category"], r["prompt"], r["rep"], ", ".join(r["diffs"])) for r in bad))
        sys.exit(1)


if __name__ == "__main__":
    main()
