"""The report's plots, as PNG bytes: extractive ROUGE and input recall vs L (matplotlib, Agg).

Pure functions of the metrics dict written by :mod:`wikisum.pipeline.report`. Names from the
data (extractors, corpora, the split) are drawn as written: no ``$...$`` is read as mathtext
(:data:`AS_WRITTEN`), and every extractor is in the legend, a name that starts with ``_`` too
(the legends are given their entries rather than collecting the labelled ones, which skips
those), a lone surrogate as U+FFFD (:func:`wikisum.core.htmlpage.text_of`; the font machinery
cannot encode it).
"""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")  # no display: render to PNG bytes
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

from wikisum.core.htmlpage import text_of  # noqa: E402
from wikisum.pipeline.report_tables import ROUGE_LABELS  # noqa: E402

# Text drawn as written: a "$" in a name is a dollar sign, not the start of mathtext.
AS_WRITTEN = {"text.parse_math": False}
COLORS = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3"]


def rouge_figure(metrics: dict) -> bytes:
    """Extractive ROUGE F1 by extractor x corpus, with 95% CI error bars (paper, Figure 2)."""
    with matplotlib.rc_context(AS_WRITTEN):
        return _rouge_figure(metrics)


def _rouge_figure(metrics: dict) -> bytes:
    extractors, corpora = metrics["extractors"], metrics["corpora"]
    fig, axes = plt.subplots(1, len(metrics["rouge_types"]), figsize=(4.2 * 3, 3.6), sharey=False)
    width = 0.8 / len(extractors)
    for ax, rtype in zip(axes, metrics["rouge_types"], strict=True):
        bars = []  # this panel's, one per extractor: the legend's entries
        for k, ext in enumerate(extractors):
            values = [metrics["extractive_rouge"][ext][c][rtype] for c in corpora]
            means = [100 * v["mean"] for v in values]
            err = error_bars(values)
            xs = [i + (k - (len(extractors) - 1) / 2) * width for i in range(len(corpora))]
            bars.append(ax.bar(xs, means, width, yerr=err, capsize=2,
                               color=COLORS[k % len(COLORS)],
                               hatch="//" if ext == "cheating" else None,
                               edgecolor="white" if ext != "cheating" else "#333333",
                               linewidth=0.5))
        ax.set_xticks(range(len(corpora)), [text_of(c) for c in corpora])
        ax.set_title(f"{ROUGE_LABELS[rtype]} F1")
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
    axes[0].set_ylabel("score (x100)")
    axes[-1].legend(bars, [text_of(e) for e in extractors], fontsize=8, loc="upper left",
                    bbox_to_anchor=(1.0, 1.0))
    fig.suptitle(f"Extractive ROUGE on {metrics['articles']} {text_of(metrics['split'])} articles "
                 "(95% bootstrap CI)", fontsize=11)
    fig.tight_layout()
    return _png(fig)


MARKERS = ["o", "s", "^", "D", "v", "P", "X"]


def _length_label(n: int) -> str:
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else str(n)


def recall_figure(metrics: dict) -> bytes:
    """ROUGE-1 recall of the lead by the first L tokens of the input: one panel per corpus, the
    Ls on the axis, one legend above the panels. Each extractor has its own colour, marker and a
    small horizontal offset, so that curves which coincide stay apart; the intervals are in the
    tables (bands of six curves would merge)."""
    with matplotlib.rc_context(AS_WRITTEN):
        return _recall_figure(metrics)


def _recall_figure(metrics: dict) -> bytes:
    corpora, extractors = metrics["corpora"], metrics["extractors"]
    lengths = metrics["lengths"]
    fig, axes = plt.subplots(1, len(corpora), figsize=(4.6 * len(corpora), 4.2), sharey=True,
                             squeeze=False)
    axes = list(axes[0])
    spread = 0.012  # decades between neighbouring extractors' markers
    for ax, corpus in zip(axes, corpora, strict=True):
        lines = []  # this panel's, one per extractor: the legend's entries
        for k, ext in enumerate(extractors):
            curve = metrics["input_recall"][ext][corpus]
            shift = 10 ** ((k - (len(extractors) - 1) / 2) * spread)
            lines += ax.plot([p["length"] * shift for p in curve], [100 * p["mean"] for p in curve],
                    marker=MARKERS[k % len(MARKERS)], markersize=5, linewidth=1.6,
                    color=COLORS[k % len(COLORS)], alpha=0.9,
                    linestyle="--" if ext == "cheating" else "-")
        ax.set_xscale("log")
        ax.set_xticks(lengths, [_length_label(n) for n in lengths])
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.set_xlabel("L (subword tokens of input)")
        ax.set_title(f"{text_of(corpus)} corpus", fontsize=11)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("ROUGE-1 recall of the lead (x100)")
    fig.legend(lines, [text_of(e) for e in extractors], loc="upper center",
               ncol=len(extractors), fontsize=10, frameon=False, bbox_to_anchor=(0.5, 1.0))
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    return _png(fig)


def figures(metrics: dict) -> dict[str, bytes]:
    return {"extractive_rouge.png": rouge_figure(metrics),
            "input_recall.png": recall_figure(metrics)}


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


def error_bars(values: list[dict]) -> list[list[float]]:
    """Matplotlib's ``yerr`` (below, above; in percent) of bootstrap intervals around their
    means, each at least 0: with few resamples a bound can land on the wrong side of the mean
    (the interval does not hold it), and that side's bar is then drawn empty."""
    return [[max(0.0, 100 * (v["mean"] - v["low"])) for v in values],
            [max(0.0, 100 * (v["high"] - v["mean"])) for v in values]]
