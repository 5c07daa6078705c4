"""What ``wikisum report`` recommends: the corpus, the extractor and the input length L.

Pure functions of the assembled metrics and the bootstrap replicates (:func:`recommend`), and
the sentences that say why (:func:`recommendation_text`).
"""

from __future__ import annotations

from wikisum.pipeline.report_bootstrap import paired_difference

PLATEAU_GAIN = 0.01  # recall "stops growing" once within one point of its value at the largest L


def plateau_length(curve: list[dict]) -> int:
    """The smallest L whose recall is within PLATEAU_GAIN of the recall at the largest L."""
    final = curve[-1]["mean"]
    for point in curve:
        if final - point["mean"] <= PLATEAU_GAIN:
            return point["length"]
    return curve[-1]["length"]


def recommend(metrics: dict, replicates: dict | None = None) -> dict:
    """What to pick, from the numbers (pure).

    * Per corpus, the best extractor a model can use (cheating reads the target) by ROUGE-L. It is
      *clearly ahead* when a paired bootstrap of its per-article ROUGE-L difference to every
      other usable extractor gives a 95% interval above 0. (Whether the intervals of two means
      overlap says little: what the articles share, which cancels out of a paired difference,
      widens both.) Cheating is called the ceiling only where no other extractor scores above it.
    * The corpus: a model can only learn to write what its input holds, so the corpora are
      compared first by the input recall of their best extractor at a common L, the largest of
      their plateau lengths (every corpus has then all but stopped growing), by a paired
      bootstrap; among the corpora not clearly below the one with the highest recall, the one
      with the highest ROUGE-L is chosen.
    * The input length L: where the chosen input's recall stops growing (:func:`plateau_length`).

    ``replicates`` maps metric keys (``rouge|ext|corpus|type``, ``recall|ext|corpus|L``) to their
    bootstrap replicate means; without them no difference is called clear.
    """
    replicates = replicates or {}
    extractors, corpora, lengths = metrics["extractors"], metrics["corpora"], metrics["lengths"]
    usable = [e for e in extractors if e != "cheating"]

    def paired(key_a, key_b, a, b):
        if key_a in replicates and key_b in replicates:
            return paired_difference(a, b, replicates[key_a], replicates[key_b])
        return {"mean": a["mean"] - b["mean"], "low": None, "high": None, "clear": False}

    per_corpus = {}
    for corpus in corpora:
        rl = {e: metrics["extractive_rouge"][e][corpus]["rougeL"] for e in extractors}
        ranked = sorted(usable, key=lambda e: -rl[e]["mean"])
        best = ranked[0]
        curve = metrics["input_recall"][best][corpus]
        entry = {"best": best, "rougeL": rl[best]["mean"], "plateau_length": plateau_length(curve),
                 "recall_at_max_length": curve[-1]["mean"],
                 "ahead_of": {o: paired(f"rouge|{best}|{corpus}|rougeL",
                                        f"rouge|{o}|{corpus}|rougeL", rl[best], rl[o])
                              for o in ranked[1:]}}
        if len(ranked) > 1:
            entry["runner_up"] = ranked[1]
            entry["clear_winner"] = all(d["clear"] for d in entry["ahead_of"].values())
        if "cheating" in extractors:
            cheat = rl["cheating"]["mean"]
            entry["cheating_rougeL"] = cheat
            entry["above_cheating"] = [e for e in usable if rl[e]["mean"] > cheat]
            if not entry["above_cheating"]:
                entry["ceiling_rougeL"] = cheat
        per_corpus[corpus] = entry

    common = max(entry["plateau_length"] for entry in per_corpus.values())
    k = lengths.index(common)

    def recall_at(c):
        return metrics["input_recall"][per_corpus[c]["best"]][c][k]

    def recall_key(c):
        return f"recall|{per_corpus[c]['best']}|{c}|{common}"

    top = max(corpora, key=lambda c: recall_at(c)["mean"])
    recall_vs = {c: paired(recall_key(top), recall_key(c), recall_at(top), recall_at(c))
                 for c in corpora if c != top}
    contenders = [top] + [c for c, d in recall_vs.items() if not d["clear"]]
    best_corpus = max(contenders, key=lambda c: per_corpus[c]["rougeL"])
    choice = {"per_corpus": per_corpus, "best_corpus": best_corpus,
              "best_extractor": per_corpus[best_corpus]["best"],
              "input_length": per_corpus[best_corpus]["plateau_length"],
              "recall_length": common,
              "recall": {c: recall_at(c)["mean"] for c in corpora},
              "recall_top": top, "recall_differences": recall_vs,
              "rouge_best_corpus": max(corpora, key=lambda c: per_corpus[c]["rougeL"]),
              "plateau_gain": PLATEAU_GAIN}
    # Nothing to choose between when no extractor shares a word with any lead: every ROUGE is
    # 0 (text that the scorer cannot read, or leads unrelated to their references).
    choice["recommended"] = any(entry["rougeL"] > 0 or entry.get("cheating_rougeL", 0) > 0
                                for entry in per_corpus.values())
    choice["text"] = recommendation_text(choice, metrics)
    return choice


def _diff(d: dict) -> str:
    """A paired difference, x100: "+1.2 [+0.3, +2.0]"."""
    if d["low"] is None:
        return f"{100 * d['mean']:+.1f}"
    return f"{100 * d['mean']:+.1f} [{100 * d['low']:+.1f}, {100 * d['high']:+.1f}]"


def recommendation_text(choice: dict, metrics: dict) -> list[str]:
    per_corpus, best_corpus = choice["per_corpus"], choice["best_corpus"]
    if not choice.get("recommended", True):
        lang = metrics.get("language") or "en"
        return [f"No extractor is recommended: every extractor scores 0.0 ROUGE-L against the "
                f"leads of the {metrics['articles']} {metrics['split']} articles scored, so the "
                f"figures cannot tell them apart. The leads were scored as {lang!r} "
                f"({metrics.get('rouge_tokenizer') or 'ROUGE'}); if that is not their "
                "language, set the dataset's language (dataset.json's \"language\") and "
                "report again."]
    best = per_corpus[best_corpus]
    ext, common = best["best"], choice["recall_length"]
    lines = [f"Use {ext} on the {best_corpus} corpus with inputs of L = {choice['input_length']} "
             f"tokens ({metrics['articles']} {metrics['split']} articles scored)."]
    if len(per_corpus) > 1:
        top, recall = choice["recall_top"], choice["recall"]
        others = "; ".join(f"{c} {100 * recall[c]:.1f}, difference {_diff(d)}, "
                           f"{'clearly' if d['clear'] else 'not clearly'} lower"
                           for c, d in choice["recall_differences"].items())
        why = (f"Corpus: at L = {common}, the input from the {top} corpus holds the most of the "
               f"lead ({100 * recall[top]:.1f} ROUGE-1 recall; {others}; x100, paired "
               "bootstrap)")
        by_rouge = choice["rouge_best_corpus"]
        if best_corpus != top:
            why += (f"; the {best_corpus} corpus recalls about as much and has the higher "
                    "extractive "
                    f"ROUGE-L ({100 * best['rougeL']:.1f} against "
                    f"{100 * per_corpus[top]['rougeL']:.1f}).")
        elif by_rouge != best_corpus:
            why += (f". The {by_rouge} corpus has the higher extractive ROUGE-L "
                    f"({100 * per_corpus[by_rouge]['rougeL']:.1f} against "
                    f"{100 * best['rougeL']:.1f}), but its input holds clearly less of the lead, "
                    "and a model can only learn to write what its input holds.")
        else:
            why += "; it also has the highest extractive ROUGE-L."
        lines.append(why)
    for corpus, entry in per_corpus.items():
        behind = [o for o, d in entry["ahead_of"].items() if not d["clear"]]
        if "runner_up" not in entry:
            rank = ""
        elif not behind:
            rank = ", clearly ahead of every other usable extractor"
        else:
            rank = ", not clearly ahead of " + ", ".join(
                f"{o} ({_diff(entry['ahead_of'][o])})" for o in behind)
        if "ceiling_rougeL" in entry:
            ceiling = f"; the cheating ceiling is {100 * entry['ceiling_rougeL']:.1f}"
        elif "cheating_rougeL" in entry:
            ceiling = (f"; cheating scores {100 * entry['cheating_rougeL']:.1f}, below "
                       f"{', '.join(entry['above_cheating'])}, so it is no ceiling here "
                       "(it picks paragraphs by bigram recall of the lead, not by ROUGE-L)")
        else:
            ceiling = ""
        lines.append(f"{corpus}: best {entry['best']} ({100 * entry['rougeL']:.1f} ROUGE-L"
                     f"{rank}){ceiling}; its input recall stops growing at L = "
                     f"{entry['plateau_length']} (within {100 * PLATEAU_GAIN:.0f} point of "
                     f"{100 * entry['recall_at_max_length']:.1f} at L = "
                     f"{metrics['lengths'][-1]}).")
    if metrics["articles"] < 30:
        lines.append(f"Only {metrics['articles']} articles were scored: the intervals are wide; "
                     "rerun on more articles before choosing.")
    return lines
