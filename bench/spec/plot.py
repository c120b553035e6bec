#!/usr/bin/python3
"""Draw bench/spec's charts from bench/spec/run.sh jsonl files: PNG files, one chart each.

usage: /usr/bin/python3 bench/spec/plot.py --out DIR [--title TEXT] FILE.jsonl[.gz] [FILE.jsonl[.gz] ...]

Needs matplotlib from Debian's python3-matplotlib (bench/spec/setup_plot.sh), so it runs on the
system Python, /usr/bin/python3 (a pyenv or venv python3 first on PATH does not have it). The
figures are summarize.py's, pooled the same way (its functions do the arithmetic). Writes into DIR
(created if missing; files of these names replaced):

  tokens_per_round.png     tokens per round per category x configuration, grouped bars (`none`
                           is 1 by definition: the dashed line)
  decode_tps.png           decode tok/s per category x configuration, grouped bars with `none`
                           first; above each other bar its speed over `none`'s (summarize.py's
                           `vs none`)
  acceptance_by_depth.png  acceptance by depth of each drafter in the configuration where it runs
                           alone, a panel per drafter: a line per category, `all` in black
  accepted_share.png       each drafter's share of the accepted nodes in every configuration of
                           several drafters, a panel per configuration, a stacked bar per
                           category (a node that two drafters proposed counts for both)

--title TEXT names the data in every chart's subtitle (default: "bench/spec, " and the file
names), before the counts of prompts, reps, configurations, threads and runs. A chart whose
configurations did not run (no drafter alone, no mix) is skipped with a note.
Exit status: 0, or 1 when any run's tokens differ from its `none` reference (the charts are
drawn all the same), 2 for a bad command line or a missing matplotlib.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import summarize  # noqa: E402  (the tables' arithmetic: bench/spec/summarize.py)

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError as e:
    sys.stderr.write("plot.py: no matplotlib for %s (%s): install Debian's python3-matplotlib "
                     "(bench/spec/setup_plot.sh) and run this with /usr/bin/python3\n" % (sys.executable, e))
    sys.exit(2)

DRAFTER_COLORS = {"ngram": "tab:blue", "mtp": "tab:orange", "dflash2": "tab:green"}
OTHER_COLORS = ["tab:red", "tab:cyan", "tab:gray", "black"]
MIX_COLORS = ["tab:purple", "tab:brown", "tab:pink", "tab:olive", "gold", "navy", "teal", "salmon"]
CATEGORY_STYLES = ["o--", "s--", "^--", "D--", "v--", "P--"]
DPI = 150


def drafter_color(name, seen={}):  # noqa: B006 (a cache on purpose)
    if name not in DRAFTER_COLORS and name not in seen:
        seen[name] = OTHER_COLORS[len(seen) % len(OTHER_COLORS)]
    return DRAFTER_COLORS.get(name) or seen[name]


def config_colors(configs):
    """`none` grey, a drafter alone in its own colour (as in the drafter charts), mixes in other colours."""
    colors, i = {}, 0
    for cfg in configs:
        if cfg == "none":
            colors[cfg] = "0.55"
        elif "," not in cfg:
            colors[cfg] = drafter_color(cfg)
        else:
            colors[cfg] = MIX_COLORS[i % len(MIX_COLORS)]
            i += 1
    return colors


def save(fig, out, name):
    path = os.path.join(out, name)
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    print("plot.py: wrote %s" % path)


def grouped_bars(an, configs, value, ylabel, title, note, label=None, baseline=None):
    """Bars per category (and `all`) x configuration; value(agg) gives a bar's height (None: no bar),
    label(category, config, agg) the text above it (None: none)."""
    cats = an["categories"] + ["all"]
    colors = config_colors(an["configs"])
    n = len(configs)
    width = 0.8 / max(n, 1)
    fig, ax = plt.subplots(figsize=(max(8.0, 1.0 + len(cats) * (0.45 * n + 0.6)), 5.6))
    top = 0.0
    for j, cfg in enumerate(configs):
        xs, ys, texts = [], [], []
        for i, c in enumerate(cats):
            a = an["aggs"].get((c, cfg))
            y = value(a) if a else None
            if y is None:
                continue
            xs.append(i + (j - (n - 1) / 2) * width)
            ys.append(y)
            texts.append(label(c, cfg, a) if label else None)
            top = max(top, y)
        bars = ax.bar(xs, ys, width * 0.92, label=cfg, color=colors[cfg], edgecolor="white", linewidth=0.5)
        for b, t in zip(bars, texts):
            if t:
                ax.annotate(t, (b.get_x() + b.get_width() / 2, b.get_height()), xytext=(0, 2),
                            textcoords="offset points", ha="center", va="bottom", rotation=90, fontsize=7)
    if baseline is not None:
        ax.axhline(baseline[0], color="0.3", linestyle="--", linewidth=1, label=baseline[1])
    ax.set_xticks(range(len(cats)))
    ax.set_xticklabels(cats, fontsize=10)
    ax.set_xlim(-0.5, len(cats) - 0.5)
    ax.set_ylim(0, top * 1.22 if top else 1)
    ax.set_ylabel(ylabel, fontsize=10)
    ax.set_title(title + "\n" + note, fontsize=11)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    ax.legend(title="config", fontsize=8, title_fontsize=9, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def chart_tokens_per_round(an, out, note):
    configs = [cfg for cfg in an["configs"] if cfg != "none"]
    if not configs:
        print("plot.py: tokens_per_round.png skipped: no speculative configuration ran")
        return
    fig = grouped_bars(an, configs, lambda a: a["tpr"], "tokens per round",
                       "Tokens per speculative round (accepted drafts + the target's own token), pooled", note,
                       label=lambda c, cfg, a: "%.2f" % a["tpr"], baseline=(1.0, "none: 1 token per step"))
    save(fig, out, "tokens_per_round.png")


def chart_decode_tps(an, out, note):
    aggs = an["aggs"]

    def label(c, cfg, a):
        base = aggs.get((c, "none"))
        if cfg == "none" or not base or not base["tps"] or a["tps"] is None:
            return "%.0f" % a["tps"] if a["tps"] is not None else None
        return "%.2fx" % (a["tps"] / base["tps"])

    fig = grouped_bars(an, an["configs"], lambda a: a["tps"], "decode tok/s",
                       "Decode speed, sum(generated - 1) / sum(decode seconds); above the bars: tok/s of `none`, "
                       "the others as a multiple of it", note, label=label)
    save(fig, out, "decode_tps.png")


def chart_acceptance_by_depth(an, out, note):
    runs = an["runs"]
    alone = [cfg for cfg in an["configs"] if cfg != "none" and "," not in cfg]
    if not alone:
        print("plot.py: acceptance_by_depth.png skipped: no drafter ran alone")
        return
    cats = an["categories"]
    fig, axes = plt.subplots(1, len(alone), figsize=(4.6 * len(alone) + 0.6, 4.6), squeeze=False, sharey=True)
    for ax, name in zip(axes[0], alone):
        rs = [r for r in runs if r["config"] == name]
        lines = [(c, [r for r in rs if r["category"] == c]) for c in cats] + [("all", rs)]
        maxd = 0
        for k, (c, sel) in enumerate(lines):
            p = summarize.per_drafter(sel).get(name)
            if not p:
                continue
            pts = [(d + 1, a / n, n) for d, (n, a) in enumerate(zip(p["depth_proposed"], p["depth_accepted"])) if n]
            if not pts:
                continue
            maxd = max(maxd, pts[-1][0])
            xs, ys = [x for x, _, _ in pts], [y for _, y, _ in pts]
            if c == "all":
                ax.plot(xs, ys, "o-", color="black", linewidth=2.2, markersize=5, label="all", zorder=3)
                for x, _, n in pts:
                    ax.text(x, 0.015, "%d" % n, ha="center", va="bottom", fontsize=7, color="0.25")
            else:
                ax.plot(xs, ys, CATEGORY_STYLES[k % len(CATEGORY_STYLES)], linewidth=1, markersize=4, alpha=0.85,
                        label=c)
        ax.set_title("%s alone" % name, fontsize=11, color=drafter_color(name), fontweight="bold")
        ax.set_xlabel("depth in the draft tree", fontsize=10)
        if maxd:
            ax.set_xticks(range(1, maxd + 1))
            ax.set_xlim(0.6, maxd + 0.4)
        ax.set_ylim(0, 1.05)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("acceptance (accepted / proposed at that depth)", fontsize=10)
    if axes[0][-1].get_legend_handles_labels()[0]:
        axes[0][-1].legend(fontsize=8, loc="lower left", bbox_to_anchor=(0.0, 0.06))
    fig.suptitle("Acceptance by depth, each drafter alone (numbers at the bottom: nodes proposed at that depth, all categories)\n"
                 + note, fontsize=11)
    fig.tight_layout()
    save(fig, out, "acceptance_by_depth.png")


def chart_accepted_share(an, out, note):
    multi = an["multi"]
    if not multi:
        print("plot.py: accepted_share.png skipped: no configuration of several drafters ran")
        return
    cats = an["categories"] + ["all"]
    groups = {(c, cfg): rs for c, cfg, rs in an["groups"]}
    fig, axes = plt.subplots(1, len(multi), figsize=(0.75 * len(cats) * len(multi) + 2.0, 5.0), squeeze=False,
                             sharey=True)
    handles = {}
    for ax, cfg in zip(axes[0], multi):
        for i, c in enumerate(cats):
            rs = groups.get((c, cfg))
            if not rs:
                continue
            bottom = 0.0
            for name, p, share, part in summarize.drafter_shares(rs, cfg):
                if not share:
                    continue
                h = ax.bar(i, share, 0.7, bottom=bottom, color=drafter_color(name), edgecolor="white", linewidth=0.6)
                handles.setdefault(name, h)
                if share >= 0.07:
                    ax.text(i, bottom + share / 2, "%.0f%%" % (100 * share), ha="center", va="center", fontsize=7.5,
                            color="white", fontweight="bold")
                bottom += share
        ax.set_title(cfg, fontsize=11)
        ax.set_xticks(range(len(cats)))
        ax.set_xticklabels(cats, rotation=35, ha="right", fontsize=9)
        ax.set_ylim(0, 1)
        ax.yaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0))
    axes[0][0].set_ylabel("share of the drafters' accepted nodes", fontsize=10)
    fig.legend([handles[k] for k in handles], list(handles), title="drafter", fontsize=9, title_fontsize=9,
               loc="upper left", bbox_to_anchor=(1.0, 0.9))
    fig.suptitle("Share of accepted tokens per drafter in each mix (a token two drafters proposed counts for "
                 "both)\n" + note, fontsize=11)
    fig.tight_layout()
    save(fig, out, "accepted_share.png")


def main(argv):
    args = argv[1:]
    out, title, paths = None, None, []
    while args:
        a = args.pop(0)
        if a in ("--out", "--title"):
            if not args:
                sys.stderr.write("plot.py: %s needs a value\n" % a)
                return 2
            v = args.pop(0)
            if a == "--out":
                out = v
            else:
                title = v
        elif a in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        elif a.startswith("-"):
            sys.stderr.write("plot.py: unknown option %s\n" % a)
            return 2
        else:
            paths.append(a)
    if not out or not paths:
        sys.stderr.write(__doc__.strip().splitlines()[2] + "\n")
        return 2
    runs = summarize.load(paths)
    if not runs:
        sys.stderr.write("plot.py: no runs in %s\n" % ", ".join(paths))
        return 1
    an = summarize.analyse(runs)
    os.makedirs(out, exist_ok=True)
    threads = sorted({r.get("threads") for r in runs if r.get("threads") is not None})
    reps = len({r.get("rep") for r in runs})
    prompts = len({(r["category"], r["prompt"]) for r in runs})
    note = "%s: %d prompts x %d rep(s) x %d configs, %s thread(s), %d runs" % (
        title or "bench/spec, " + ", ".join(os.path.basename(p) for p in paths), prompts, reps, len(an["configs"]),
        ",".join(str(t) for t in threads) or "?", len(runs))
    chart_tokens_per_round(an, out, note)
    chart_decode_tps(an, out, note)
    chart_acceptance_by_depth(an, out, note)
    chart_accepted_share(an, out, note)
    if an["bad"]:
        sys.stderr.write("plot.py: !!!!! %d run(s) generated other tokens than their `none` reference "
                         "(bench/spec/summarize.py lists them)\n" % len(an["bad"]))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
