"""Beam's state sampler in bundles a local job runs in this process (``beamio._prompt_sampler``):
a short sampling period where Beam's maker names none, a period given kept, time still
attributed to the step under way, installed once, and by the local runner only for the modes
whose bundles run in this process."""

from __future__ import annotations

import time

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.worker import statesampler
from apache_beam.utils.counters import CounterFactory

from wikisum.pipeline import beamio


@pytest.fixture
def beams_sampler(monkeypatch):
    """Beam's own StateSampler in its module for the test (restored after it)."""
    current = statesampler.StateSampler
    monkeypatch.setattr(statesampler, "StateSampler", getattr(current, "original", current))
    return statesampler.StateSampler


class SamplerPeriod(beam.DoFn):
    """The sampling period of the sampler tracking the bundle under way."""

    def process(self, element):
        yield statesampler.get_current_tracker().sampling_period_ms


def run_local(mode: str, tmp_path) -> list[str]:
    options = PipelineOptions(["--direct_num_workers", "1", "--direct_running_mode", mode])
    out = tmp_path / f"periods-{mode}.txt"
    with beam.Pipeline(runner=beamio.LocalRunner(), options=options) as p:
        _ = (p | beam.Create([1, 2, 3]) | beam.ParDo(SamplerPeriod())
             | beam.Map(str) | beam.io.WriteToText(str(out), shard_name_template=""))
    return out.read_text().split()


@pytest.mark.parametrize("mode", ["in_memory", "multi_threading"])
def test_bundles_run_in_this_process_get_the_short_period(beams_sampler, tmp_path, mode):
    assert statesampler.StateSampler("s", CounterFactory()).sampling_period_ms == 200
    assert run_local(mode, tmp_path) == [str(beamio.LOCAL_SAMPLING_PERIOD_MS)] * 3
    assert statesampler.StateSampler.original is beams_sampler


def test_a_period_given_is_kept_and_installing_twice_wraps_once(beams_sampler):
    beamio._install_prompt_sampler()
    installed = statesampler.StateSampler
    beamio._install_prompt_sampler()
    assert statesampler.StateSampler is installed and installed.original is beams_sampler
    assert installed("s", CounterFactory()).sampling_period_ms == (
        beamio.LOCAL_SAMPLING_PERIOD_MS)
    assert installed("s", CounterFactory(), sampling_period_ms=50).sampling_period_ms == 50
    assert issubclass(installed, beams_sampler)


def test_time_is_still_attributed_to_the_step_under_way(beams_sampler):
    beamio._install_prompt_sampler()
    sampler = statesampler.StateSampler("stage", CounterFactory())
    assert sampler.sampling_period_ms == beamio.LOCAL_SAMPLING_PERIOD_MS
    state = sampler.scoped_state("step", "process")
    sampler.start()
    try:
        with state:
            time.sleep(0.1)
    finally:
        sampler.stop()
    assert 0.02 <= state.sampled_seconds() <= 5


def test_a_job_of_worker_processes_installs_nothing_in_this_process(beams_sampler, monkeypatch):
    ran = []
    monkeypatch.setattr(beamio.fn_runner.FnApiRunner, "run_pipeline",
                        lambda self, pipeline, options: ran.append(options))
    options = PipelineOptions(["--direct_num_workers", "2", "--direct_running_mode",
                               "multi_processing"])
    beamio.LocalRunner().run_pipeline(None, options)
    assert ran == [options] and statesampler.StateSampler is beams_sampler
