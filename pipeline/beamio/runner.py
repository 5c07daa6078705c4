"""Running a job: the runner its options choose (:class:`LocalRunner` on this machine, or the
one ``--runner`` names), the launch and its dry run, and progress while it runs.

The local runner hands a job to Beam's ``FnApiRunner``, made through its public constructor as
Beam's ``DirectRunner`` makes it for a batch job (:class:`LocalRunner`); docs/dataflow.md says
which of Beam's behaviours this relies on.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Callable

import apache_beam as beam
from apache_beam.options.pipeline_options import (
    DirectOptions,
    GoogleCloudOptions,
    PipelineOptions,
    StandardOptions,
    TestOptions,
)
from apache_beam.portability.api import beam_provision_api_pb2
from apache_beam.runners.portability.fn_api_runner import fn_runner
from apache_beam.runners.portability.portable_runner import JobServiceHandle
from apache_beam.runners.runner import PipelineRunner

from wikisum.core import progress

# setup.py lists the workers' requirements when this says "workers" (packaged_for_workers).
PACKAGE_ENV = "WIKISUM_PACKAGE"


def is_dry_run(options: PipelineOptions) -> bool:
    """``--dry_run true``: the runner builds and validates the job without running it (Beam
    keeps the option's text, so ``--dry_run false`` must not count as set)."""
    value = options.view_as(TestOptions).dry_run
    return str(value).strip().lower() in ("true", "1", "yes")


# Beam's DirectRunner (the SwitchingDirectRunner), by its names: a job given no --runner, or one
# of these, runs on LocalRunner, since the DirectRunner first downloads its Prism runner from
# GitHub and starts it (offline: a failed fetch, then the same FnApiRunner as LocalRunner).
DIRECT_RUNNERS = ("directrunner", "switchingdirectrunner")


# How much worker processes (--direct_running_mode multi_processing) send the launcher, which
# logs it as one long line per record: warnings, less two that every worker process sends once,
# about what a container would provide (a staging folder: from Beam's worker program, run as
# __main__) and about options only the runner reads.
WORKER_LOG_LEVEL = "WARNING"
WORKER_LOG_LEVELS = {"__main__": "ERROR", "apache_beam.options.pipeline_options": "ERROR"}


# The local running modes whose bundles run in the launching process.
IN_PROCESS_MODES = ("in_memory", "multi_threading")


def running_mode(options: PipelineOptions) -> str:
    """A local job's ``--direct_running_mode`` (Beam's default: ``in_memory``)."""
    return options.view_as(DirectOptions).direct_running_mode or "in_memory"


class LocalRunner(PipelineRunner):
    """The runner of a local job: Beam's FnApiRunner, which the DirectRunner itself hands a
    batch job to once Prism is out of the way, made as the DirectRunner makes it, with the
    job's options as its ``provision_info`` (so that ``--direct_num_workers N
    --direct_running_mode multi_processing`` worker processes see them). It runs in this
    process, or in the worker threads or processes those options ask for, and reaches for no
    network. Worker processes log at ``WORKER_LOG_LEVEL`` unless
    ``--default_sdk_harness_log_level`` says otherwise."""

    def run_pipeline(self, pipeline, options):
        provision_info = fn_runner.ExtendedProvisionInfo(
            beam_provision_api_pb2.ProvisionInfo(
                pipeline_options=JobServiceHandle.encode_pipeline_options(
                    worker_options(options))))
        return fn_runner.FnApiRunner(provision_info=provision_info).run_pipeline(pipeline,
                                                                                 options)


def worker_options(options: PipelineOptions) -> dict:
    """The options a local job's worker processes get: the job's, with their log levels."""
    given = options.get_all_options()
    return {**given,
            "default_sdk_harness_log_level": given.get("default_sdk_harness_log_level")
            or WORKER_LOG_LEVEL,
            "sdk_harness_log_level_overrides": {
                **WORKER_LOG_LEVELS, **(given.get("sdk_harness_log_level_overrides") or {})}}


def workers_in_this_process(options: PipelineOptions) -> bool:
    """Whether the job's steps run in the launching process: a local run in Beam's default
    ``in_memory`` mode (bundles run in the runner's own thread) or ``multi_threading`` (in
    worker threads), not ``multi_processing``. What the launcher loads, they find loaded."""
    return is_local(options) and running_mode(options) in IN_PROCESS_MODES


def is_local(options: PipelineOptions) -> bool:
    """Whether the job runs on :class:`LocalRunner`: ``--runner`` absent or naming the
    DirectRunner."""
    runner = options.view_as(StandardOptions).runner
    return runner is None or str(runner).rsplit(".", 1)[-1].lower() in DIRECT_RUNNERS


def runner_for(options: PipelineOptions):
    """The runner a job runs on: a :class:`LocalRunner` where ``--runner`` is
    absent or names the DirectRunner; otherwise the name given (Beam resolves it:
    DataflowRunner, ...)."""
    if is_local(options):
        return LocalRunner()
    return options.view_as(StandardOptions).runner


def launch(command: str, options: PipelineOptions, build: Callable[[beam.Pipeline], None],
           writes: list[str]) -> bool:
    """Build the job with ``build(pipeline)`` and run it to the end: True when it finished.
    It runs on :func:`runner_for` the options: without ``--runner``, on this machine.

    A dry run (``--dry_run true``, honoured by the DataflowRunner) builds and validates the
    job without submitting it; then this prints what was built and where the job would write
    (``writes``), and returns False.

    Raises:
        ValueError: ``--dry_run`` with a runner that would ignore it and run the job.
        RuntimeError: the job ended in a state other than DONE.
    """
    dry = is_dry_run(options)
    runner = str(options.view_as(StandardOptions).runner or "DirectRunner")
    if dry and "dataflow" not in runner.lower():
        raise ValueError(f"--dry_run is honoured by the DataflowRunner only; {runner} would run "
                         "the job")
    pipeline = beam.Pipeline(runner=runner_for(options), options=options)
    try:
        build(pipeline)
    except BaseException:
        # Beam removes the pipeline's scratch folder (beam-pipeline-temp*) only when it runs.
        shutil.rmtree(pipeline.local_tempdir, ignore_errors=True)
        raise
    with packaged_for_workers():
        result = pipeline.run()
    if dry:
        print(describe_dry_run(command, result, options, writes), flush=True)
        return False
    state = result.wait_until_finish()
    if state is not None and str(state) not in ("DONE", "PipelineState.DONE"):
        raise RuntimeError(f"wikisum {command}: the job ended {state}")
    return True


@contextlib.contextmanager
def packaged_for_workers():
    """While Beam stages the package (``--setup_file``: it builds the sdist in a subprocess),
    the sdist's requirements are the base layer and stage one, not torch (setup.py reads
    ``WIKISUM_PACKAGE``): a Dataflow worker installs Beam's jobs' packages and nothing else."""
    previous = os.environ.get(PACKAGE_ENV)
    os.environ[PACKAGE_ENV] = "workers"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(PACKAGE_ENV, None)
        else:
            os.environ[PACKAGE_ENV] = previous


def describe_dry_run(command: str, result, options: PipelineOptions, writes: list[str]) -> str:
    """What a dry run built and where the job would write."""
    runner = options.view_as(StandardOptions).runner or "DirectRunner"
    job = getattr(result, "job", None)
    proto = getattr(job, "proto_pipeline", None)
    steps = len(proto.components.transforms) if proto is not None else None
    name = getattr(getattr(job, "proto", None), "name", "") or ""
    gcp = options.view_as(GoogleCloudOptions)
    lines = [f"wikisum {command}: dry run: the {runner} job {name} was built and validated"
             + (f" ({steps} transforms)" if steps else "") + "; nothing was submitted, read "
             "or written"]
    if gcp.project:
        lines.append(f"  project {gcp.project}, region {gcp.region}, temp {gcp.temp_location}")
    lines += [f"  would write: {path}" for path in writes]
    return "\n".join(lines)


def watch_job(what: str, options, key: str, unit: str | None = None, total=None,
              others: tuple[str, ...] = ()):
    """A ``with`` block around a Beam job's run: a
    :class:`~wikisum.core.progress.JobProgress` where the runner is local; a dry run shows
    nothing; on another runner (Dataflow) one line says where progress is shown, and nothing
    here waits on the runner (Dataflow's job page shows the job's counters, in the ``wikisum``
    namespace, and its workers log their own progress lines)."""
    if options is None or is_dry_run(options):
        return contextlib.nullcontext()
    runner = options.view_as(StandardOptions).runner
    if not progress.is_local_runner(runner):
        progress.say(f"{what}: progress is on the {runner} job's page (counters in the 'wikisum' "
                     "namespace; workers log their own progress lines)", file=sys.stderr)
        return contextlib.nullcontext()
    return progress.JobProgress(what, key, unit, total, others)
