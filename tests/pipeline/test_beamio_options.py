"""``beamio.ViewsParsedOnce``: views of a job's options that parse the flags once per options
class give what Beam's own ``view_as`` gives, class by class and value by value, share their
values as Beam's views do, and never share a value between two jobs' options."""

from __future__ import annotations

import copy
import pickle

import apache_beam as beam
import pytest
from apache_beam.options import pipeline_options as po
from apache_beam.options.pipeline_options import (
    DebugOptions,
    PipelineOptions,
    StandardOptions,
    TypeOptions,
    WorkerOptions,
)

from wikisum.pipeline import beamio

FLAGS = [
    [],
    ["--runner", "DataflowRunner", "--project", "p", "--region", "europe-west4",
     "--temp_location", "gs://b/tmp", "--num_workers", "3", "--experiments", "a",
     "--experiments=b", "--no_pipeline_type_check", "--unknown_flag", "kept"],
    ["--direct_num_workers", "2", "--direct_running_mode", "multi_processing",
     "--sdk_harness_log_level_overrides", '{"x": "ERROR"}', "--dry_run", "true"],
]


def options_classes() -> list[type]:
    """Every options class Beam has registered (its own and any a package adds)."""
    found, todo = [], [PipelineOptions]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return sorted(set(found), key=lambda c: (c.__module__, c.__qualname__))


@pytest.mark.parametrize("flags", FLAGS)
def test_every_view_is_what_beam_gives(flags):
    beams, ours = PipelineOptions(list(flags)), PipelineOptions(list(flags)).view_as(
        beamio.ViewsParsedOnce)
    for cls in options_classes():
        expected, view = beams.view_as(cls), ours.view_as(cls)
        assert type(view) is cls
        names = expected._visible_option_list()
        assert view._visible_option_list() == names, cls
        assert {n: getattr(view, n) for n in names} == {n: getattr(expected, n) for n in names}
    assert ours.get_all_options() == beams.get_all_options()
    assert ours._all_options == beams._all_options


def test_views_share_their_values_as_beams_do():
    options = PipelineOptions(["--runner", "A"]).view_as(beamio.ViewsParsedOnce)
    standard = options.view_as(StandardOptions)
    standard.runner = "B"
    assert options.view_as(StandardOptions).runner == "B"
    assert options.get_all_options()["runner"] == "B"
    with pytest.raises(AttributeError):
        standard.not_an_option = 1


def test_overrides_given_beside_the_flags_are_kept():
    options = PipelineOptions(["--runner", "A"], runner="B", num_workers=7)
    ours = options.view_as(beamio.ViewsParsedOnce)
    assert ours.view_as(StandardOptions).runner == "B"
    assert ours.view_as(WorkerOptions).num_workers == 7


def test_two_jobs_options_never_share_a_value():
    flags = ["--experiments", "a", "--job_name", "never-shared"]
    first = PipelineOptions(list(flags)).view_as(beamio.ViewsParsedOnce)
    first.view_as(DebugOptions).add_experiment("only_first")
    second = PipelineOptions(list(flags)).view_as(beamio.ViewsParsedOnce)
    assert second.view_as(DebugOptions).experiments == ["a"]
    assert "only_first" in first.view_as(DebugOptions).experiments


def test_the_flags_are_parsed_once_per_class(monkeypatch):
    parses = []
    parse = po._BeamArgumentParser.parse_known_args

    def counted(self, *args, **kwargs):
        parses.append(1)
        return parse(self, *args, **kwargs)

    monkeypatch.setattr(po._BeamArgumentParser, "parse_known_args", counted)
    options = PipelineOptions(["--job_name", "parsed-once-test"]).view_as(beamio.ViewsParsedOnce)
    parses.clear()
    for _ in range(50):
        assert options.view_as(TypeOptions).pipeline_type_check is True
        assert options.view_as(StandardOptions).runner is None
    assert len(parses) == 2  # one parse for each class, however many views
    beams = PipelineOptions(["--job_name", "parsed-once-test"])
    parses.clear()
    for _ in range(5):
        beams.view_as(TypeOptions)
    assert len(parses) == 5  # Beam's own view_as parses every time


def test_copies_and_pickles_keep_the_values_and_the_class():
    options = PipelineOptions(["--runner", "A", "--experiments", "e"]).view_as(
        beamio.ViewsParsedOnce)
    for other in (copy.deepcopy(options), pickle.loads(pickle.dumps(options))):
        assert type(other) is beamio.ViewsParsedOnce
        assert other.view_as(StandardOptions).runner == "A"
        other.view_as(DebugOptions).add_experiment("copy")
        assert other.get_all_options()["experiments"] == ["e", "copy"]
    assert options.get_all_options()["experiments"] == ["e"]


class _OwnInit(PipelineOptions):
    """An options class with an ``__init__`` of its own, which Beam's view_as runs."""

    def __init__(self, flags=None, **kwargs):
        super().__init__(flags, **kwargs)
        _OwnInit.made += 1


_OwnInit.made = 0


def test_a_class_with_its_own_init_gets_beams_view_as():
    options = PipelineOptions(["--runner", "A"]).view_as(beamio.ViewsParsedOnce)
    before = _OwnInit.made
    view = options.view_as(_OwnInit)
    options.view_as(_OwnInit)
    assert type(view) is _OwnInit and _OwnInit.made == before + 2
    assert view.view_as(StandardOptions).runner == "A"


def test_a_job_is_built_with_views_parsed_once(tmp_path):
    seen = []

    def build(p):
        seen.append(type(p._options))
        _ = p | beam.Create([1, 2]) | beam.Map(lambda x: x * 2)

    assert beamio.launch("test", PipelineOptions([]), build, []) is True
    assert seen == [beamio.ViewsParsedOnce]


def test_a_later_job_in_the_process_sees_the_environment_of_its_own_time(monkeypatch):
    from apache_beam.options.pipeline_options import CrossLanguageOptions

    monkeypatch.setenv("BEAM_SERVICE_OVERRIDES", '{"a": "first.jar"}')
    first = PipelineOptions([]).view_as(beamio.ViewsParsedOnce)
    assert first.view_as(CrossLanguageOptions).beam_services == {"a": "first.jar"}
    monkeypatch.setenv("BEAM_SERVICE_OVERRIDES", '{"a": "second.jar"}')
    second = PipelineOptions([]).view_as(beamio.ViewsParsedOnce)
    assert second.view_as(CrossLanguageOptions).beam_services == {"a": "second.jar"}
    assert first.view_as(CrossLanguageOptions).beam_services == {"a": "first.jar"}
