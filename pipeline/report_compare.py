"""``wikisum report --compare``: what differs between two builds, from their reports' metrics.

Pure: :func:`compare` takes the two metrics.json dicts; :mod:`.report_render` renders its result.
"""

from __future__ import annotations

from wikisum.pipeline.report_stats import TOTAL_NAMES


def _independent_difference(x: dict, y: dict) -> dict:
    """y's mean minus x's, two independent samples: a normal 95% interval whose standard error
    comes from each side's bootstrap interval (its width / 3.92)."""
    d = y["mean"] - x["mean"]
    se = ((x["high"] - x["low"]) ** 2 + (y["high"] - y["low"]) ** 2) ** 0.5 / (2 * 1.96)
    low, high = d - 1.96 * se, d + 1.96 * se
    n = min(x.get("n", 0), y.get("n", 0))
    return {"a": x["mean"], "b": y["mean"], "difference": d, "low": low, "high": high,
            "clear": bool(n >= 2 and (low > 0 or high < 0))}


def compare(a: dict, b: dict) -> dict:
    """What differs between two builds, from their reports' metrics (pure): input recall and
    ROUGE-L per extractor x corpus (B minus A, with a 95% interval that treats the two builds'
    articles as independent samples), counts, coverage, drops per stage and reason, and what
    each report recommends. Extractors, corpora and Ls that only one side has are listed."""
    def common(key):
        return [x for x in a[key] if x in b[key]]

    extractors, corpora, lengths = common("extractors"), common("corpora"), common("lengths")
    ka = [a["lengths"].index(n) for n in lengths]
    kb = [b["lengths"].index(n) for n in lengths]
    recall = {e: {c: [dict(_independent_difference(a["input_recall"][e][c][i],
                                                   b["input_recall"][e][c][j]), length=n)
                      for n, i, j in zip(lengths, ka, kb, strict=True)]
                  for c in corpora} for e in extractors}
    rouge = {e: {c: _independent_difference(a["extractive_rouge"][e][c]["rougeL"],
                                            b["extractive_rouge"][e][c]["rougeL"])
                 for c in corpora} for e in extractors}

    def stats(m):
        return m.get("dataset_statistics") or {}

    counts = {"articles scored": (a["articles"], b["articles"])}
    for split in ("train", "dev", "test"):
        ra, rb = (a.get("dataset_rows") or {}).get(split), (b.get("dataset_rows") or {}).get(split)
        if ra is not None or rb is not None:
            counts[f"{split} articles in the dataset"] = (ra, rb)
    totals_a, totals_b = stats(a).get("totals") or {}, stats(b).get("totals") or {}
    for name in TOTAL_NAMES[1:]:
        if name in totals_a or name in totals_b:
            counts[name.replace("_", " ")] = (totals_a.get(name), totals_b.get(name))
    coverage = {name: (stats(a).get(f"{name}_coverage"), stats(b).get(f"{name}_coverage"))
                for name in ("citation", "search")}
    drops_a, drops_b = stats(a).get("ingest_drops") or {}, stats(b).get("ingest_drops") or {}
    drops = {}
    for stage in list(drops_a) + [s for s in drops_b if s not in drops_a]:
        sa, sb = drops_a.get(stage, {}), drops_b.get(stage, {})
        drops[stage] = {reason: (sa.get(reason, 0), sb.get(reason, 0))
                        for reason in list(sa) + [r for r in sb if r not in sa]}

    def picked(m):
        rec = m["recommendation"]
        return {"extractor": rec["best_extractor"], "corpus": rec["best_corpus"],
                "length": rec.get("input_length")}

    return {"a": {"data": a["data"], "split": a["split"], "provenance": a.get("provenance"),
                  "recommendation": picked(a)},
            "b": {"data": b["data"], "split": b["split"], "provenance": b.get("provenance"),
                  "recommendation": picked(b)},
            "extractors": extractors, "corpora": corpora, "lengths": lengths,
            "only_in_a": {k: [x for x in a[k] if x not in b[k]]
                          for k in ("extractors", "corpora", "lengths")},
            "only_in_b": {k: [x for x in b[k] if x not in a[k]]
                          for k in ("extractors", "corpora", "lengths")},
            "input_recall": recall, "rougeL": rouge, "counts": counts, "coverage": coverage,
            "ingest_drops": drops}
