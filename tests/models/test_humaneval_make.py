"""The blind annotation page's sample, items and key (wikisum.generation.humaneval.make), read
from the files it writes: the same examples for every system, drawn by the seed; no system name
or path in the page; balanced random sides; a key that matches docs/human-evaluation.md."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from wikisum.generation import humaneval

SYSTEMS = ("zebrafinch", "kestrelbird", "ospreyfowl")  # names found nowhere else in a page


def write(path: Path, rows: list[dict]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def rows(system: int, ids, **extra) -> list[dict]:
    return [{"id": i, "title": f"Article {i}", "prediction": f"system {system} writes {i} words",
             "reference": f"the reference of article {i} has words", **extra} for i in ids]


def preds(tmp_path: Path, n: int = 12, systems=SYSTEMS) -> dict[str, str]:
    folder = tmp_path / "secret-preds-folder"
    return {name: write(folder / f"{name}.jsonl", rows(k, range(n)))
            for k, name in enumerate(systems)}


def page_data(html: str) -> dict:
    block = re.search(r'<script type="application/json" id="page-data">(.*?)</script>', html,
                      re.S)
    return json.loads(block.group(1))


def made(tmp_path: Path, name: str, files: dict, **options) -> tuple[dict, dict, str]:
    """(key, page data, page HTML) of make(files, tmp_path/name, **options)."""
    result = humaneval.make(files, str(tmp_path / name), **options)
    html = Path(result["page"]).read_text(encoding="utf-8")
    return json.loads(Path(result["key"]).read_text()), page_data(html), html


def test_every_system_shows_the_same_examples_drawn_by_the_seed(tmp_path):
    files = preds(tmp_path, n=30)
    key, _, _ = made(tmp_path, "a", files, kind="quality", sample=6, seed=0)
    again, _, _ = made(tmp_path, "b", files, kind="quality", sample=6, seed=0)
    other, _, _ = made(tmp_path, "c", files, kind="quality", sample=6, seed=1)
    assert len(key["examples"]) == 6 and len(set(key["examples"])) == 6
    by_example: dict = {}
    for q in key["quality_items"]:
        by_example.setdefault(q["example"], []).append(q["system"])
    assert {e: sorted(s) for e, s in by_example.items()} == \
        {e: sorted(SYSTEMS) for e in key["examples"]}
    # the seed decides the sample, the order and the systems behind the items; the page id
    # (and so the item ids) is new for each page
    assert again["examples"] == key["examples"]
    assert [(q["example"], q["system"]) for q in again["quality_items"]] == \
        [(q["example"], q["system"]) for q in key["quality_items"]]
    assert again["page_id"] != key["page_id"]
    assert set(other["examples"]) != set(key["examples"])


def test_quality_items_mix_the_systems(tmp_path):
    key, _, _ = made(tmp_path, "a", preds(tmp_path, n=20), kind="quality", sample=10)
    systems = [q["system"] for q in key["quality_items"]]
    assert len(systems) == 30
    # not in blocks of one system, nor in a fixed rotation of the systems
    runs = sum(a != b for a, b in zip(systems, systems[1:], strict=False))
    assert runs > 10
    assert systems[:3] != systems[3:6] or systems[3:6] != systems[6:9]


def test_ids_in_only_some_files_are_dropped_and_counted(tmp_path):
    folder = tmp_path / "p"
    files = {"x": write(folder / "x.jsonl", rows(0, range(10))),
             "y": write(folder / "y.jsonl", rows(1, range(3, 12)))}
    result = humaneval.make(files, str(tmp_path / "out"), kind="both", sample=50)
    assert result["dropped"] == {"x": 3, "y": 2}  # x: 0-2, y: 10-11
    assert result["examples"] == 7
    key = json.loads(Path(result["key"]).read_text())
    assert sorted(key["examples"]) == list(range(3, 10))
    assert any("x (" in w and "3 of 10" in w for w in result["warnings"])
    assert any("only 7 examples" in w for w in result["warnings"])


def test_no_system_name_or_path_is_in_the_page(tmp_path):
    files = preds(tmp_path)
    _, data, html = made(tmp_path, "page", files, kind="both", sample=5)
    for name, path in files.items():
        assert name not in html
        assert path not in html and Path(path).name not in html
    assert "secret-preds-folder" not in html
    assert "system" not in json.dumps(data["items"]).replace("system 0", "").replace(
        "system 1", "").replace("system 2", "")  # only the outputs' own words


def test_key_matches_the_page_and_the_format(tmp_path):
    files = preds(tmp_path, n=8)
    key, data, _ = made(tmp_path, "k", files, kind="both", sample=4, seed=3)
    assert key["format"] == "wikisum-human-eval-key" and key["version"] == 1
    assert re.fullmatch(r"[0-9a-f]{32}", key["page_id"]) and data["page_id"] == key["page_id"]
    assert (key["kind"], key["seed"], key["sample"]) == ("both", 3, 4)
    assert key["systems"] == files and list(key["systems"]) == list(SYSTEMS)
    assert key["dimensions"] == ["grammaticality", "non_redundancy", "referential_clarity",
                                 "focus", "structure_coherence"]
    assert len(key["quality_items"]) == 4 * 3 and len(key["preference_items"]) == 4 * 3
    ids = [q["item"] for q in key["quality_items"]] + [p["item"] for p in
                                                        key["preference_items"]]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"q-[0-9a-f]{16}", q["item"]) for q in key["quality_items"])
    assert all(re.fullmatch(r"p-[0-9a-f]{16}", p["item"]) for p in key["preference_items"])
    # the page holds the same items in the same order: quality first, then preference
    assert [item["id"] for item in data["items"]] == ids
    assert [item["type"] for item in data["items"]] == ["quality"] * 12 + ["preference"] * 12
    # each item shows what the key says: the system's output of the key's example
    records = {name: {r["id"]: r for r in map(json.loads, Path(p).read_text().splitlines())}
               for name, p in files.items()}
    shown = {item["id"]: item for item in data["items"]}
    for q in key["quality_items"]:
        item = shown[q["item"]]
        assert data["examples"][item["example"]]["title"] == f"Article {q['example']}"
        assert item["output"] == {"text": records[q["system"]][q["example"]]["prediction"]}
    for p in key["preference_items"]:
        item = shown[p["item"]]
        assert item["a"]["text"] == records[p["a"]][p["example"]]["prediction"]
        assert item["b"]["text"] == records[p["b"]][p["example"]]["prediction"]
    # examples in the order the page first shows them
    firsts = list(dict.fromkeys(data["examples"][item["example"]]["title"]
                                for item in data["items"]))
    assert [f"Article {e}" for e in key["examples"]] == firsts
    assert set(key["rouge_l"]) == {json.dumps(e) for e in key["examples"]}
    assert all(set(v) == set(SYSTEMS) for v in key["rouge_l"].values())


def test_rouge_l_of_each_output_hand_worked(tmp_path):
    folder = tmp_path / "p"
    reference = "the cat sat on the mat"
    files = {"same": write(folder / "s.jsonl", [{"id": "a", "prediction": reference,
                                                  "reference": reference}]),
             # LCS "the cat on the": 4 words; P = 4/4, R = 4/6, F1 = 2 * 1 * 2/3 / (5/3) = 0.8
             "part": write(folder / "p.jsonl", [{"id": "a", "prediction": "the cat on the",
                                                  "reference": reference}])}
    key, data, _ = made(tmp_path, "r", files, kind="preference", sample=1)
    assert key["rouge_l"] == {'"a"': {"same": pytest.approx(1.0), "part": pytest.approx(0.8)}}
    assert data["examples"][0]["title"] == "a"  # no title: the id


def test_preference_sides_are_random_and_balanced(tmp_path):
    files = preds(tmp_path, n=40, systems=SYSTEMS[:2])
    key, _, _ = made(tmp_path, "s", files, kind="preference", sample=21, seed=5)
    left = Counter(p["a"] for p in key["preference_items"])
    assert sorted(left.values()) == [10, 11]  # each side half the time (21 is odd)
    # drawn, not alternating with the examples' order or the page order
    sides = [p["a"] == SYSTEMS[0] for p in key["preference_items"]]
    assert sides != [k % 2 == 0 for k in range(21)] and sides != [k % 2 == 1 for k in range(21)]
    by_example = {p["example"]: p["a"] for p in key["preference_items"]}
    again, _, _ = made(tmp_path, "t", files, kind="preference", sample=21, seed=5)
    assert {p["example"]: p["a"] for p in again["preference_items"]} == by_example
    other, _, _ = made(tmp_path, "u", files, kind="preference", sample=21, seed=6)
    assert {p["example"]: p["a"] for p in other["preference_items"]} != by_example


def test_pairs_choose_the_comparisons(tmp_path):
    files = preds(tmp_path, n=5)
    key, _, _ = made(tmp_path, "p", files, kind="preference", sample=5,
                     pairs=[("zebrafinch", "ospreyfowl")])
    assert {frozenset((p["a"], p["b"])) for p in key["preference_items"]} == \
        {frozenset(("zebrafinch", "ospreyfowl"))}
    assert len(key["preference_items"]) == 5 and key["quality_items"] == []
    for pairs, message in (([("zebrafinch", "nope")], "no system is called 'nope'"),
                           ([("zebrafinch", "zebrafinch")], "not compared with itself"),
                           ([("zebrafinch", "kestrelbird"), ("kestrelbird", "zebrafinch")],
                            "given twice")):
        with pytest.raises(ValueError, match=message):
            humaneval.make(files, str(tmp_path / "bad"), kind="preference", pairs=pairs)


def test_mistakes_are_clear_errors(tmp_path):
    folder = tmp_path / "p"
    one = write(folder / "one.jsonl", rows(0, [1, 2]))
    two = write(folder / "two.jsonl", rows(1, [3, 4]))
    with pytest.raises(ValueError, match=f"no example id is in every predictions file "
                                         f"\\(a={re.escape(one)}, b={re.escape(two)}\\)"):
        humaneval.make({"a": one, "b": two}, str(tmp_path / "o1"))
    with pytest.raises(ValueError, match="needs at least two"):
        humaneval.make({"a": one}, str(tmp_path / "o2"), kind="both")
    assert humaneval.make({"a": one}, str(tmp_path / "o3"), kind="quality")["quality_items"] == 2
    with pytest.raises(ValueError, match="already holds a page and its key.json"):
        humaneval.make({"a": one}, str(tmp_path / "o3"), kind="quality")
    twice = write(folder / "twice.jsonl", rows(0, [1, 1]))
    with pytest.raises(ValueError, match="twice.jsonl: record 2: id 1 occurs more than once"):
        humaneval.make({"a": twice}, str(tmp_path / "o4"), kind="quality")
    with pytest.raises(ValueError, match="pass --data DIR"):
        humaneval.make({"a": one}, str(tmp_path / "o5"), kind="quality", show=("input",))
    with pytest.raises(ValueError, match="unknown inputs"):
        humaneval.make({"a": one}, str(tmp_path / "o6"), kind="quality", show=("inputs",))
    assert not (tmp_path / "o5").exists()  # nothing written before the checks


def test_whole_articles_are_shown_by_section(tmp_path):
    sections = [{"title": "", "text": "The lead."}, {"title": "History", "text": "Built."}]
    rows_ = [{"id": 1, "title": "T", "target": "article", "prediction": "x", "reference": "y",
              "prediction_sections": sections, "reference_sections": sections[:1]}]
    files = {"a": write(tmp_path / "a.jsonl", rows_)}
    _, data, _ = made(tmp_path, "art", files, kind="quality", sample=1)
    assert data["items"][0]["output"] == {"sections": sections}
    assert data["examples"][0]["reference"] == {"sections": sections[:1]}


def test_input_paragraphs_from_the_records(tmp_path):
    files = {"a": write(tmp_path / "a.jsonl", rows(0, [7], input=["p1", "p2", "p3", "p4"]))}
    _, data, _ = made(tmp_path, "in", files, kind="quality", sample=1, show=("input",))
    # the example's direction comes from its text where the records name no language
    assert data["examples"][0] == {"title": "Article 7", "dir": "ltr",
                                   "input": ["p1", "p2", "p3"]}


def write_dataset(folder: Path) -> None:
    """A ranked dataset of two test examples, as `wikisum rank` lays it out (the columns read
    here only): example 7 ranks its paragraphs 2, 0, 3, 1 with tf-idf on the combined corpus."""
    folder.mkdir(parents=True)
    (folder / "dataset.json").write_text(json.dumps(
        {"special_ids": {}, "rows": {"test": 2}, "num_shards": 1, "relative_paths": True}))
    paragraph = pa.struct([("text", pa.string())])
    ranking = pa.struct([("extractor", pa.string()), ("corpus", pa.string()),
                         ("order", pa.list_(pa.int64()))])
    table = pa.table({
        "id": pa.array([7, 8], pa.int64()),
        "paragraphs": pa.array([[{"text": f"seven {i}"} for i in range(4)],
                                [{"text": "eight"}]], pa.list_(paragraph)),
        "rankings": pa.array([[{"extractor": "tfidf", "corpus": "combined", "order": [2, 0, 3, 1]}],
                              [{"extractor": "tfidf", "corpus": "combined", "order": [0]}]],
                             pa.list_(ranking))})
    pq.write_table(table, folder / "test-00000-of-00001.parquet")


def test_input_paragraphs_from_the_dataset(tmp_path):
    write_dataset(tmp_path / "data")
    files = {"a": write(tmp_path / "a.jsonl", rows(0, [7, 9]))}
    result = humaneval.make(files, str(tmp_path / "out"), kind="quality", sample=2,
                            show=("reference", "input"), data=str(tmp_path / "data"))
    data = page_data(Path(result["page"]).read_text())
    by_title = {e["title"]: e for e in data["examples"]}
    assert by_title["Article 7"]["input"] == ["seven 2", "seven 0", "seven 3"]
    assert "input" not in by_title["Article 9"]
    assert by_title["Article 7"]["reference"] == {"text": "the reference of article 7 has words"}
    assert any("1 of 2 sampled examples are not in" in w for w in result["warnings"])
