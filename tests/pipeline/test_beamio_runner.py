"""The runner ``beamio.launch`` picks: without --runner (or with the DirectRunner's name) the
explicit local runner, never Beam's Prism runner (a download); any other runner as named; and
the DirectRunner's --direct_num_workers / --direct_running_mode kept."""

from __future__ import annotations

import os
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.direct.direct_runner import SwitchingDirectRunner
from apache_beam.runners.portability.prism_runner import PrismRunner

from wikisum.core import progress
from wikisum.pipeline import beamio


@pytest.fixture
def no_prism(monkeypatch):
    """Beam's DirectRunner and Prism fail the test if they are ever asked to run a job."""
    def refuse(self, *args, **kwargs):
        raise AssertionError(f"{type(self).__name__} was asked to run the job")

    monkeypatch.setattr(PrismRunner, "run_pipeline", refuse)
    monkeypatch.setattr(SwitchingDirectRunner, "run_pipeline", refuse)


@pytest.mark.parametrize("argv", [[], ["--runner", "DirectRunner"], ["--runner=directrunner"],
                                  ["--runner", "SwitchingDirectRunner"]])
def test_no_runner_or_the_direct_runner_is_the_local_runner(argv):
    runner = beamio.runner_for(PipelineOptions(argv))
    assert type(runner) is beamio.LocalRunner
    assert progress.is_local_runner(runner)


@pytest.mark.parametrize("name", ["DataflowRunner", "PrismRunner", "FlinkRunner"])
def test_another_runner_is_left_to_beam(name):
    assert beamio.runner_for(PipelineOptions(["--runner", name])) == name


def pids_of_a_job(options: PipelineOptions, out: Path) -> set[int]:
    """Run a small job through ``launch``: the ids of the processes its steps ran in."""
    def write(pids):
        out.write_text("\n".join(map(str, sorted(set(pids)))))

    def build(p):
        _ = (p | beam.Create(range(40)) | beam.Reshuffle()
             | beam.Map(lambda _: os.getpid()) | beam.combiners.ToList() | beam.Map(write))

    assert beamio.launch("test", options, build, []) is True
    return {int(line) for line in out.read_text().split()}


def test_a_job_without_runner_runs_here_without_prism(no_prism, tmp_path):
    assert pids_of_a_job(PipelineOptions([]), tmp_path / "pids") == {os.getpid()}


def test_worker_processes_are_kept(no_prism, tmp_path):
    options = PipelineOptions(["--direct_num_workers", "2",
                               "--direct_running_mode", "multi_processing"])
    pids = pids_of_a_job(options, tmp_path / "pids")
    assert pids and os.getpid() not in pids


def test_worker_processes_log_warnings_only_unless_told():
    quiet = beamio.worker_options(PipelineOptions(["--direct_num_workers", "2"]))
    assert quiet["direct_num_workers"] == 2
    assert quiet["default_sdk_harness_log_level"] == "WARNING"
    assert quiet["sdk_harness_log_level_overrides"] == beamio.WORKER_LOG_LEVELS
    told = beamio.worker_options(PipelineOptions([
        "--default_sdk_harness_log_level", "DEBUG",
        "--sdk_harness_log_level_overrides", '{"__main__": "INFO"}']))
    assert told["default_sdk_harness_log_level"] == "DEBUG"
    assert told["sdk_harness_log_level_overrides"]["__main__"] == "INFO"
