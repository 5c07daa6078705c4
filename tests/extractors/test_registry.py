import importlib
import subprocess
import sys
import types

import pytest

from wikisum import extractors
from wikisum.extractors.base import Extractor, Scorer


def test_names_in_registry_order():
    assert extractors.NAMES == ("identity", "tfidf", "textrank", "sumbasic", "cheating", "learned")
    assert tuple(extractors.REGISTRY) == extractors.NAMES


def test_every_entry_names_an_importable_factory():
    for name, target in extractors.REGISTRY.items():
        module, _, factory = target.partition(":")
        assert callable(getattr(importlib.import_module(module), factory)), name


def test_the_registry_imports_no_extractor():
    """`wikisum rank --help` lists the names without numpy, scikit-learn or networkx."""
    probe = ("import sys; from wikisum import extractors; extractors.NAMES; "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('numpy', 'scipy', 'sklearn', 'networkx') or m.startswith('wikisum.extractors.')))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize("name", ["identity", "tfidf", "textrank", "sumbasic", "cheating"])
def test_get_builds_an_extractor_of_that_name(name):
    extractor = extractors.get(name)
    assert isinstance(extractor, Extractor)
    assert extractor.name == name
    paragraphs = ["The fox ran.", "A dog slept.", "The fox and the dog."]
    order = extractor.rank("Fox", paragraphs, target="The fox ran away.",
                           sources=["citation", "search", "search"])
    assert sorted(order) == [0, 1, 2]


@pytest.mark.parametrize("name", ["tfidf", "textrank", "cheating"])
def test_scorers_rank_by_their_scores(name):
    extractor = extractors.get(name)
    assert isinstance(extractor, Scorer)
    paragraphs = ["The fox ran.", "A dog slept.", "The fox and the dog ran.", "A fox."]
    scores = extractor.scores("Fox", paragraphs, "The fox ran away.")
    assert scores.shape == (4,)
    order = extractor.rank("Fox", paragraphs, target="The fox ran away.")
    assert [scores[i] for i in order] == sorted(scores, reverse=True)


def test_unknown_name_lists_the_valid_ones():
    with pytest.raises(ValueError, match="unknown extractor 'lexrank'.*identity, tfidf"):
        extractors.get("lexrank")


def test_learned_is_loaded_on_demand_with_its_arguments(monkeypatch):
    loaded = []
    fake = types.ModuleType("wikisum.extractors.learned")

    def load(path):
        loaded.append(path)
        return extractors.get("identity")

    fake.load = load
    monkeypatch.setitem(sys.modules, "wikisum.extractors.learned", fake)
    extractor = extractors.get("learned", path="/models/learned.json")
    assert loaded == ["/models/learned.json"]
    assert extractor.rank("Fox", ["a", "b"]) == [0, 1]
