"""bench/stages.py: stacks put into stages, CPU time given to the stage a thread is in."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import stages  # noqa: E402


def names(*frames: str) -> list[str]:
    return list(frames)


def test_the_first_matching_rule_wins_over_the_frames_that_contain_it():
    clean = "wikisum/pipeline/references.py:clean_capture"
    bundle = "/venv/site-packages/apache_beam/runners/worker/bundle_processor.py:process"
    traf = "/venv/site-packages/trafilatura/core.py:extract"
    assert stages.classify(names(traf, clean, bundle)) == "cleaning: trafilatura"
    assert stages.classify(names("wikisum/pipeline/langwalk.py:states", clean, bundle)) == \
        "cleaning: language identification"
    assert stages.classify(names("/usr/lib/python3.11/re.py:findall",
                                 "wikisum/core/boilerplate.py:boilerplate_reason",
                                 clean, bundle)) == "cleaning: paragraph filter"
    assert stages.classify(names(clean, bundle)) == "cleaning: the rest (URLs, checks, records)"
    assert stages.classify(names(bundle)) == "Beam: runner (bundles, coders, shuffles)"
    assert stages.classify(names("<frozen importlib._bootstrap>:_find_and_load", traf)) == \
        "imports"
    assert stages.classify(names("/somewhere/else.py:f")) == stages.OTHER


def test_a_waiting_thread_is_idle():
    assert stages.classify(names("/usr/lib/python3.11/threading.py:wait",
                                 "wikisum/pipeline/webtext.py:call")) is None
    assert stages.classify(names("/usr/lib/python3.11/threading.py:run",
                                 "/usr/lib/python3.11/threading.py:_bootstrap")) is None
    assert stages.classify(names("/usr/lib/python3.11/queue.py:get",
                                 "wikisum/pipeline/webtext.py:_serve")) is None


def test_the_classifier_by_code_object_agrees_with_classify():
    def frames_of(thread_frame) -> tuple:
        return stages.stack_codes(thread_frame)

    here = frames_of(sys._getframe())
    classify = stages.Classifier()
    assert classify(here) == stages.classify(stages.frame_names(here))
    assert classify(()) == stages.OTHER


def test_the_busy_thread_gets_the_cpu_time_in_the_stage_it_runs():
    from wikisum.core.paragraphs import split_paragraphs

    text = "A sentence of some words here.\n\n" * 2000
    done = threading.Event()
    used = []

    def busy():
        start = time.thread_time()
        while not done.is_set():
            split_paragraphs(text)
        used.append(time.thread_time() - start)

    worker = threading.Thread(target=busy)
    sampler = stages.StageSampler(interval_s=0.005)
    sampler.start()
    worker.start()
    time.sleep(0.6)
    done.set()
    worker.join()
    profile = sampler.stop()
    assert profile["ticks"] > 20
    spent = profile["stages"]
    top = max(spent, key=spent.get)
    assert top == "cleaning: paragraph filter", spent
    # most of the CPU time the worker had (however busy the machine is with other work)
    assert used[0] > 0.05 and spent[top] > 0.5 * used[0], (spent[top], used)
    assert profile["sampler_cpu_s"] < 0.3


def _spin(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def outer_work():
    _spin(0.05)
    inner_work()


def inner_work():
    _spin(0.1)


def produce():
    for _ in range(3):
        _spin(0.02)
        yield 1


def test_timers_give_each_stage_its_own_cpu_time_without_the_nested_calls():
    module = sys.modules[__name__]
    timers = stages.Timers((("outer", __name__, "outer_work"), ("inner", __name__, "inner_work"),
                            ("producer", __name__, "produce"))).install()
    try:
        module.outer_work()
        for _ in module.produce():
            _spin(0.05)  # the consumer's work is not the producer's
    finally:
        seconds = timers.remove()
    assert module.outer_work is outer_work  # put back
    assert 0.045 < seconds["outer"] < 0.08
    assert 0.095 < seconds["inner"] < 0.13
    assert 0.055 < seconds["producer"] < 0.09


def test_the_rest_is_split_in_the_sampled_proportions():
    profile = {"timed": {"cleaning: trafilatura": 10.0}, "sampler_cpu_s": 1.0,
               "stages": {"cleaning: trafilatura": 7.0, "imports": 1.0,
                          "Beam: runner (bundles, coders, shuffles)": 3.0}}
    split = stages.split_stages(profile, cpu_s=19.0)
    assert split == {"cleaning: trafilatura": 10.0,
                     "Beam: runner (bundles, coders, shuffles)": 6.0, "imports": 2.0}


def test_threads_that_follow_each_other_are_all_counted():
    """Python reuses an ended thread's ident: the next thread's CPU still counts."""
    from wikisum.core.paragraphs import split_paragraphs

    text = "A sentence of some words here.\n\n" * 2000

    def busy(seconds):
        end = time.thread_time() + seconds
        while time.thread_time() < end:
            split_paragraphs(text)

    sampler = stages.StageSampler(interval_s=0.005)
    sampler.start()
    for _ in range(3):
        worker = threading.Thread(target=busy, args=(0.2,))
        worker.start()
        worker.join()
    profile = sampler.stop()
    # 0.6 s of CPU in three threads, one after the other: one thread lost would leave 0.4 s.
    # (Which stage a look sees depends on where the thread is at that moment, more so on a
    # loaded machine, so only the total is held to a figure.)
    assert sum(profile["stages"].values()) > 0.45, profile["stages"]
    assert profile["stages"]["cleaning: paragraph filter"] > 0, profile["stages"]


def test_beam_stages_count_what_each_stage_reads():
    """A local job with one group-by: its read step took the 3 groups in; Beam's method is put
    back afterwards. The job runs on the jobs' own runner, as the benchmarks run it (Beam's
    DirectRunner first tries its Prism runner, which leaves folders in the temporary folder
    wherever it cannot start)."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.runners.worker import bundle_processor

    from wikisum.pipeline import beamio

    original = bundle_processor.DataInputOperation.process_encoded
    instrument = stages.BeamStages().install().install()  # a second install changes nothing
    try:
        options = PipelineOptions(direct_num_workers=1, direct_running_mode="in_memory")
        with beam.Pipeline(runner=beamio.LocalRunner(), options=options) as p:
            _ = (p | beam.Create([(i % 3, "x" * i) for i in range(30)])
                 | "Group" >> beam.GroupByKey()
                 | beam.MapTuple(lambda key, values: (key, len(list(values)))))
    finally:
        got = instrument.remove()
    assert bundle_processor.DataInputOperation.process_encoded is original
    reads = {step: entry for step, entry in got.items() if step.startswith("Group/")}
    assert [entry["elements"] for entry in reads.values()] == [3], got
    assert all(entry["bytes"] > 30 * 14 // 2 for entry in reads.values())
    assert list(got) == sorted(got, key=lambda step: -got[step]["cpu_s"])
