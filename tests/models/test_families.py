"""The model registry: every name has a family, and the family says what its models read."""

import pytest

from wikisum import models
from wikisum.training.loop import exemplars_needed


def test_exemplar_models_are_the_ones_their_family_names():
    reading = {name for name in models.NAMES if models.needs_exemplars(name)}
    assert reading == {"attexp", "adadec", "adadec+attexp"}


def test_every_family_answers_for_its_names():
    for name in models.NAMES:
        assert isinstance(models.family(name).needs_exemplars(name), bool)


def test_unknown_model_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown model 'nope'"):
        models.needs_exemplars("nope")


def test_a_factory_that_cannot_say_reads_no_exemplar():
    assert exemplars_needed(object(), "anything") is False
    assert exemplars_needed(models, "adadec") is True
