#!/usr/bin/env python3
"""Summarize bench/spec/run.sh jsonl files as markdown tables (Python 3 standard library only).

usage: bench/spec/summarize.py [--times] FILE.jsonl[.gz] [FILE.jsonl[.gz] ...]

Each line is one `graft run --json` object with `category`, `prompt`, `config` and `rep` added;
any set of configurations (`none`, one drafter, several fused: `ngram,mtp,dflash2`). Prints one
table with a row per category x configuration and an `all` row per configuration:

  prompts        distinct prompts (runs, when there are more runs than prompts, in brackets)
  tokens/round   tokens emitted by the speculative rounds / rounds, pooled over the runs:
                 sum(tokens_per_round * rounds) / sum(rounds) from stats.speculative
  acceptance     sum(accepted) / sum(drafted) from stats.speculative
  decode tok/s   sum(generated_tokens - 1) / sum(decode_seconds): the first token comes from the
                 prefill pass, as in graft's own stats.decode_tokens_per_second
  vs none        that decode tok/s / the `none` configuration's in the same category (row)
  median ratio   the median over the runs of run tok/s / tok/s of the `none` run of the same prompt
                 and rep (its neighbour in the interleaved order): less swayed by a burst of machine noise that
                 slows a few runs, which the pooled columns count in full
  same as none   runs whose generated_ids equal the reference's / runs; the reference is the
                 first `none` run of the same prompt (greedy speculative decoding is lossless)

When a configuration runs several drafters together, a second table splits it by drafter
(stats.speculative.drafters): proposed and accepted nodes, acceptance, mean accepted length, the
drafter's share of all drafters' accepted nodes (the column sums to 1), and the part of the
configuration's accepted tokens it proposed (a node two drafters proposed counts for both, so
that column sums to 1 or more). A third table gives each drafter's acceptance by depth in every
configuration it ran in, all categories pooled (stats.speculative.drafters.NAME.depth). --times
adds a table of stats.speculative.seconds. Drafter failures are listed after the tables;
mismatches with the reference too, and they make the exit status 1.
"""
import gzip
import json
import sys

CATEGORY_ORDER = ["code_new", "code_repeat", "structured", "free"]


def load(paths):
    runs = []
    for path in paths:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    r = json.loads(line)
                except ValueError as e:
                    sys.exit("summarize.py: %s:%d: not JSON (%s)" % (path, lineno, e))
                for key in ("category", "prompt", "config"):
                    if key not in r:
                        sys.exit("summarize.py: %s:%d: no %r field (not a run.sh line?)" % (path, lineno, key))
                runs.append(r)
    return runs


def ordered(values, order, sort_rest=True):
    """The distinct values: those in `order` first, in that order, then the rest (sorted, or as they came)."""
    values = list(dict.fromkeys(values))
    rest = [v for v in values if v not in order]
    return [v for v in order if v in values] + (sorted(rest) if sort_rest else rest)


def ratio(a, b):
    return a / b if b else None


def fmt(x, spec, none="n/a"):
    return none if x is None else format(x, spec)


def table(header, rows, align):
    """A markdown table with padded columns; align is a string of 'l'/'r' per column."""
    cells = [header] + rows
    widths = [max(len(str(row[i])) for row in cells) for i in range(len(header))]

    def line(row):
        return "| " + " | ".join(str(c).ljust(w) if a == "l" else str(c).rjust(w)
                                 for c, w, a in zip(row, widths, align)) + " |"

    rule = "|" + "|".join(("-" * (w + 1) + ":") if a == "r" else ("-" * (w + 2)) for w, a in zip(widths, align)) + "|"
    return "\n".join([line(header), rule] + [line(r) for r in rows])


def lossless_check(runs):
    """Marks every run with r['_same'] (True/False, None without a reference); returns mismatches."""
    ref = {}
    for r in runs:
        key = (r["category"], r["prompt"])
        if r["config"] == "none" and key not in ref:
            ref[key] = r
    bad = []
    for r in runs:
        base = ref.get((r["category"], r["prompt"]))
        if base is None:
            r["_same"] = None
        elif r is base:
            r["_same"] = True
        else:
            r["_same"] = r.get("generated_ids") == base.get("generated_ids")
            if not r["_same"]:
                bad.append((r, base))
    return bad


def run_tps(r):
    s = r.get("stats", {})
    sec = float(s.get("decode_seconds", 0.0))
    return ratio(max(int(s.get("generated_tokens", 0)) - 1, 0), sec)


def median(xs):
    xs = sorted(xs)
    if not xs:
        return None
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2


def aggregate(runs, none_runs):
    a = dict(prompts=len({(r["category"], r["prompt"]) for r in runs}), runs=len(runs), tokens=0, seconds=0.0,
             rounds=0, emitted=0.0, drafted=0, accepted=0, spec_runs=0, same=0, checked=0,
             times={})
    for r in runs:
        s = r.get("stats", {})
        a["tokens"] += max(int(s.get("generated_tokens", 0)) - 1, 0)
        a["seconds"] += float(s.get("decode_seconds", 0.0))
        sp = s.get("speculative")
        if sp:
            a["spec_runs"] += 1
            rounds = int(sp.get("rounds", 0))
            a["rounds"] += rounds
            a["emitted"] += float(sp.get("tokens_per_round", 0.0)) * rounds
            a["drafted"] += int(sp.get("drafted", 0))
            a["accepted"] += int(sp.get("accepted", 0))
            for k, v in (sp.get("seconds") or {}).items():
                a["times"][k] = a["times"].get(k, 0.0) + float(v)
        if r.get("_same") is not None:
            a["checked"] += 1
            a["same"] += bool(r["_same"])
    ratios = []
    for r in runs:
        base = none_runs.get((r["category"], r["prompt"], r.get("rep")))
        if base is not None:
            t, b = run_tps(r), run_tps(base)
            if t is not None and b:
                ratios.append(t / b)
    a["median_ratio"] = median(ratios)
    a["tps"] = ratio(a["tokens"], a["seconds"])
    a["tpr"] = ratio(a["emitted"], a["rounds"]) if a["spec_runs"] else None
    a["acc"] = ratio(a["accepted"], a["drafted"]) if a["spec_runs"] else None
    return a


def speculative(r):
    return (r.get("stats") or {}).get("speculative") or {}


def analyse(runs):
    """What the tables (and bench/spec/plot.py) are made of: the lossless check, the categories and
    configurations in order, the groups (category, config, runs) with an `all` group per
    configuration, and their aggregates keyed by (category, config)."""
    bad = lossless_check(runs)
    categories = ordered((r["category"] for r in runs), CATEGORY_ORDER)
    configs = ordered((r["config"] for r in runs), ["none"], sort_rest=False)
    groups = [(c, cfg, [r for r in runs if r["category"] == c and r["config"] == cfg])
              for c in categories for cfg in configs]
    groups += [("all", cfg, [r for r in runs if r["config"] == cfg]) for cfg in configs]
    groups = [(c, cfg, rs) for c, cfg, rs in groups if rs]
    none_runs = {}
    for r in runs:
        if r["config"] == "none":
            none_runs.setdefault((r["category"], r["prompt"], r.get("rep")), r)
    aggs = {(c, cfg): aggregate(rs, none_runs) for c, cfg, rs in groups}
    multi = [cfg for cfg in configs if any(len(speculative(r).get("drafters") or {}) > 1
                                           for r in runs if r["config"] == cfg)]
    return dict(runs=runs, bad=bad, categories=categories, configs=configs, groups=groups, aggs=aggs, multi=multi)


def drafter_names(cfg, per):
    """The drafters of a configuration: those its name lists, in that order, then any other that reported."""
    return ordered(list(per) + [n for n in cfg.split(",") if n != "none"], cfg.split(","), sort_rest=False)


def per_drafter(runs):
    """stats.speculative.drafters summed over the runs: {name: dict(proposed, accepted, failures, mal (the
    runs' mean_accepted_length), depth_proposed, depth_accepted (lists, depth 1 first))}."""
    per = {}
    for r in runs:
        for name, d in (speculative(r).get("drafters") or {}).items():
            p = per.setdefault(name, dict(proposed=0, accepted=0, failures=0, mal=[], depth_proposed=[],
                                          depth_accepted=[]))
            p["proposed"] += int(d.get("proposed", 0))
            p["accepted"] += int(d.get("accepted", 0))
            p["failures"] += int(d.get("failures", 0))
            if d.get("mean_accepted_length") is not None:
                p["mal"].append(float(d["mean_accepted_length"]))
            for e in d.get("depth") or []:
                i = int(e["depth"]) - 1
                for key in ("proposed", "accepted"):
                    v = p["depth_" + key]
                    v.extend([0] * (i + 1 - len(v)))
                    v[i] += int(e.get(key, 0))
    return per


def drafter_shares(runs, cfg):
    """Per drafter of a configuration (in drafter_names order): (name, totals from per_drafter, share
    of all drafters' accepted nodes, part of the runs' accepted tokens it proposed)."""
    per = per_drafter(runs)
    credits = sum(p["accepted"] for p in per.values())
    accepted = sum(int(speculative(r).get("accepted", 0)) for r in runs)
    empty = dict(proposed=0, accepted=0, failures=0, mal=[], depth_proposed=[], depth_accepted=[])
    return [(name, per.get(name, empty), ratio(per.get(name, empty)["accepted"], credits),
             ratio(per.get(name, empty)["accepted"], accepted)) for name in drafter_names(cfg, per)]


def main(argv):
    args = argv[1:]
    times = "--times" in args
    paths = [p for p in args if p != "--times"]
    if not paths or any(p.startswith("-") for p in paths):
        sys.exit(__doc__.strip().splitlines()[2])
    runs = load(paths)
    if not runs:
        sys.exit("summarize.py: no runs in %s" % ", ".join(paths))
    an = analyse(runs)
    configs, groups, aggs, bad = an["configs"], an["groups"], an["aggs"], an["bad"]

    rows = []
    for c, cfg, _ in groups:
        a = aggs[(c, cfg)]
        base = aggs.get((c, "none"))
        prompts = str(a["prompts"]) if a["runs"] == a["prompts"] else "%d (%d)" % (a["prompts"], a["runs"])
        rows.append([c, cfg, prompts, fmt(a["tpr"], ".2f", "-"), fmt(a["acc"], ".3f", "-"), fmt(a["tps"], ".1f"),
                     fmt(ratio(a["tps"], base["tps"]) if base and a["tps"] is not None else None, ".2f"),
                     fmt(a["median_ratio"], ".2f"),
                     "%d/%d" % (a["same"], a["checked"]) if a["checked"] else "n/a"])
    print(table(["category", "config", "prompts", "tokens/round", "acceptance", "decode tok/s", "vs none",
                 "median ratio", "same as none"], rows, "llrrrrrrr"))

    # Per drafter, for configurations that ran several drafters together.
    if an["multi"]:
        rows = []
        for c, cfg, rs in groups:
            if cfg not in an["multi"]:
                continue
            for name, p, share, part in drafter_shares(rs, cfg):
                rows.append([c, cfg, name, p["proposed"], p["accepted"], fmt(ratio(p["accepted"], p["proposed"]), ".3f"),
                             fmt(sum(p["mal"]) / len(p["mal"]) if p["mal"] else None, ".2f"),
                             fmt(share, ".3f"), fmt(part, ".3f")])
        print()
        print(table(["category", "config", "drafter", "proposed", "accepted", "acceptance", "mean accepted length",
                     "share of accepted", "of accepted tokens"], rows, "lllrrrrrr"))

    # Each mix against the best of its own members alone in the category (pooled tok/s, and the median
    # over the runs of the mix's tok/s over that drafter's run of the same prompt and rep).
    singles = [cfg for cfg in configs if cfg != "none" and "," not in cfg]
    mixes = [cfg for cfg in configs if "," in cfg]
    if singles and mixes:
        rows = []
        for c in an["categories"] + ["all"]:
            for m in mixes:
                cand = [(aggs[(c, s)]["tps"], s) for s in singles
                        if s in m.split(",") and (c, s) in aggs and aggs[(c, s)]["tps"]]
                if (c, m) not in aggs or not cand:
                    continue
                best_tps, best = max(cand)
                best_runs = {(r["category"], r["prompt"], r.get("rep")): r for r in runs if r["config"] == best}
                per_run = [run_tps(r) / run_tps(best_runs[k]) for r in runs if r["config"] == m and (c == "all" or
                           r["category"] == c) for k in [(r["category"], r["prompt"], r.get("rep"))]
                           if k in best_runs and run_tps(r) and run_tps(best_runs[k])]
                rows.append([c, m, best, fmt(best_tps, ".1f"), fmt(aggs[(c, m)]["tps"], ".1f"),
                             fmt(ratio(aggs[(c, m)]["tps"], best_tps), ".2f"), fmt(median(per_run), ".2f")])
        print()
        print("Each mix against the best of its members alone, per category (by pooled decode tok/s):")
        print()
        print(table(["category", "mix", "best single", "its tok/s", "mix tok/s", "mix / best", "median ratio"], rows,
                    "lllrrrr"))

    # What drafting costs: per configuration and drafter (all categories), proposals per round,
    # rounds skipped, a proposal's time and that time in decode steps (the `none` runs' seconds per
    # token, pooled over the same prompts), and the host's own work per round.
    none_all = aggs.get(("all", "none"))
    step = ratio(none_all["seconds"], none_all["tokens"]) if none_all else None
    rows = []
    for cfg in configs:
        if cfg == "none":
            continue
        rs = [r for r in runs if r["config"] == cfg]
        rounds = sum(int(speculative(r).get("rounds", 0)) for r in rs)
        host = sum(float((speculative(r).get("seconds") or {}).get("host", 0.0)) for r in rs)
        for name in drafter_names(cfg, {n: 1 for r in rs for n in (speculative(r).get("drafters") or {})}):
            ds = [(speculative(r).get("drafters") or {}).get(name) or {} for r in rs]
            n = sum(int(d.get("proposals", 0)) for d in ds)
            sec = sum(float(d.get("propose_seconds", 0.0)) for d in ds)
            skipped = sum(int(d.get("skipped", 0)) for d in ds)
            each = ratio(sec, n)
            rows.append([cfg, name, n, fmt(ratio(n, rounds), ".2f"), skipped, fmt(each * 1e3 if each is not None else None,
                         ".3f"), fmt(ratio(each, step) if each is not None and step else None, ".3f"),
                         fmt(ratio(host, rounds) * 1e6 if rounds else None, ".1f")])
    if rows and any(r[2] for r in rows):
        print()
        print("Drafting costs (all categories; a decode step = the `none` runs' %s ms per token):"
              % fmt(step * 1e3 if step else None, ".3f"))
        print()
        print(table(["config", "drafter", "proposals", "per round", "rounds skipped", "ms per proposal",
                     "decode steps per proposal", "host us per round"], rows, "llrrrrrr"))

    # Acceptance by depth, per drafter and configuration, all categories pooled.
    rows = []
    depths = 0
    for cfg in configs:
        if cfg == "none":
            continue
        rs = [r for r in runs if r["config"] == cfg]
        for name, p, _, _ in drafter_shares(rs, cfg):
            cells = ["%.3f (%d)" % (a / n, n) if n else "-" for n, a in zip(p["depth_proposed"], p["depth_accepted"])]
            depths = max(depths, len(cells))
            rows.append([cfg, name] + cells)
    if depths:
        rows = [row + ["-"] * (2 + depths - len(row)) for row in rows]
        print()
        print("Acceptance by depth (all categories; accepted / proposed at depth d, proposed in brackets):")
        print()
        print(table(["config", "drafter"] + ["d%d" % (d + 1) for d in range(depths)], rows, "ll" + "r" * depths))

    if times:
        keys = ordered((k for a in aggs.values() for k in a["times"]), ["draft", "verify", "accept", "rollback"])
        rows = []
        for c, cfg, _ in groups:
            a = aggs[(c, cfg)]
            if not a["spec_runs"]:
                continue
            rows.append([c, cfg, "%.3f" % a["seconds"]] +
                        ["%.3f (%s)" % (a["times"].get(k, 0.0), fmt(ratio(a["times"].get(k, 0.0), a["seconds"]), ".0%"))
                         for k in keys])
        if rows:
            print()
            print(table(["category", "config", "decode s"] + ["%s s (share)" % k for k in keys], rows,
                        "llr" + "r" * len(keys)))

    failures = [(cfg, name, p["failures"], sum(1 for r in runs if r["config"] == cfg and
                                                int(((speculative(r).get("drafters") or {}).get(name) or {})
                                                    .get("failures", 0))))
                for cfg in configs if cfg != "none"
                for name, p, _, _ in drafter_shares([r for r in runs if r["config"] == cfg], cfg) if p["failures"]]
    if failures:
        print()
        for cfg, name, n, nruns in failures:
            print("note: drafter %s failed %d call(s) in %d run(s) of config %s (proposals skipped or the drafter "
                  "disabled; graft warned on stderr)" % (name, n, nruns, cfg))

    if bad:
        print()
        print("!!!!! %d run(s) generated other tokens than the `none` run of the same prompt "
              "(greedy speculative decoding must be lossless):" % len(bad))
        for r, base in bad:
            a, b = base.get("generated_ids") or [], r.get("generated_ids") or []
            i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
            print("!!!!!   %s/%s config %s rep %s: %d ids against %d, first difference at index %d (%s vs %s)"
                  % (r["category"], r["prompt"], r["config"], r.get("rep", "?"), len(b), len(a), i,
                     b[i] if i < len(b) else "end", a[i] if i < len(a) else "end"))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
