"""Beam plumbing every job shares: accounting (tallies in the vocabulary of
:mod:`wikisum.core.accounting`, and dead letters), input files matched at run time, shard
writing with bounded memory, and the commit that makes a job's outputs visible all at once. No
job imports another job; they all import this.

How a job's outputs become visible (the guarantee of Beam's own file sinks):

    rows --WriteShards--> NAME-SSSSS-of-NNNNN.parquet under OUT/.temp-TOKEN/  (Staged records)
    every Staged record, the job's tallies --Commit--> one step, after everything is staged:
        1. delete the completion record (summary.json, dataset.json, ...)
        2. delete the job's earlier outputs that this run does not replace
        3. rename every staged file to its final name (a retried commit skips what is done)
        4. write the completion record, last
        5. delete OUT/.temp-TOKEN/

A job killed before step 1 leaves the earlier output whole and untouched; killed after it, no
completion record, so every reader refuses the output and names the command to rerun. Nothing
here touches a filesystem while the pipeline is built: inputs are matched by the job itself
(``MatchFiles``), so a Dataflow job can be built and validated offline (``--dry_run true``).
"""

from __future__ import annotations

import contextlib
import copy
import io
import logging
import os
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import NamedTuple

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import BeamIOError, CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics
from apache_beam.options.pipeline_options import (
    DirectOptions,
    GoogleCloudOptions,
    PipelineOptions,
    StandardOptions,
    TestOptions,
)
from apache_beam.portability.api import beam_provision_api_pb2
from apache_beam.pvalue import TaggedOutput
from apache_beam.runners.portability.fn_api_runner import fn_runner
from apache_beam.runners.portability.portable_runner import JobServiceHandle
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from wikisum.core import files, progress, shards
from wikisum.core.records import DeadLetter, stable_hash
from wikisum.pipeline.beamfiles import BeamBackend

log = logging.getLogger("wikisum.beam")

# Output tags of every DoFn that accounts for what it drops.
DEAD = "dead"
TALLY = "tally"
FILES = "files"  # input files -> read to the end, or stopped by corrupt data
COUNTERS = "wikisum"  # the namespace of every Beam counter (Dataflow's job page shows them)


# ------------------------------------------------------------------------------------------
# Beam's inspection of a DoFn, once per DoFn


def _specs_once(original: Callable) -> Callable:
    """``userstate.get_dofn_specs`` remembered per DoFn instance.

    Beam looks for state and timer parameters in every method of a ParDo's DoFn (an
    ``inspect.signature`` of each of about 30 bound methods) each time it asks whether the DoFn
    is stateful: while the ParDo is made, translated and checked by the direct runner's
    overrides, and when a bundle processor wraps the worker's copy (530 calls for the ingest
    job's 67 ParDos). The specs are those of the instance's methods and their defaults, which
    a DoFn does not change once made (one whose methods are replaced after Beam has looked, say
    by patching its class in a test, keeps the answer Beam gave first). This asks once an
    instance (by identity, for as long as it lives; a worker's unpickled copy is a new
    instance, asked once itself) and hands each caller its own copies of the two sets; an
    object that cannot be weakly referred to is asked every time, as before. Of the ingest
    job's 530 calls, 403 are answered from memory (docs/benchmarks.md: the instructions its
    1-article run executes, 12.11 -> 10.59 billion with the paragraph filter's change)."""
    import weakref

    seen: dict[int, tuple[weakref.ref, tuple]] = {}

    def get_dofn_specs(dofn, *args, **kwargs):
        if args or kwargs:  # a form this does not know: Beam's own answer
            return original(dofn, *args, **kwargs)
        key = id(dofn)
        entry = seen.get(key)
        if entry is None or entry[0]() is not dofn:
            specs = original(dofn)
            try:  # forgotten when the DoFn is, before its id can be another object's
                ref = weakref.ref(dofn, lambda _, key=key: seen.pop(key, None))
            except TypeError:
                return specs
            entry = seen[key] = (ref, specs)
        return set(entry[1][0]), set(entry[1][1])

    get_dofn_specs.original = original
    return get_dofn_specs


def _install_specs_once() -> None:
    """Puts :func:`_specs_once`'s function in place of ``get_dofn_specs`` in Beam's
    ``userstate`` module. Its callers on the way of a job that wikisum runs look it up there at
    each call (``is_stateful_dofn``, ``validate_stateful_dofn``, ParDo, the FnApiRunner's
    worker, the DirectRunner's overrides); Beam's older in-process evaluators
    (``runners/direct/transform_evaluator``, which wikisum's local runner does not use) bind it
    by name when they load, and keep Beam's own. Idempotent; a Beam without the function is
    left as it is."""
    from apache_beam.transforms import userstate

    current = getattr(userstate, "get_dofn_specs", None)
    if current is None or hasattr(current, "original"):
        return
    userstate.get_dofn_specs = _specs_once(current)


_install_specs_once()


# ------------------------------------------------------------------------------------------
# Accounting

# A Beam job (its launcher and its workers: every job imports this module) reads and writes URLs
# through Beam's FileSystems; stage two, which never imports Beam, through fsspec.
files.use_backend(BeamBackend())

# setup.py lists the workers' requirements when this says "workers" (packaged_for_workers).
PACKAGE_ENV = "WIKISUM_PACKAGE"


def tally(stage: str, outcome: str, n: int = 1) -> TaggedOutput:
    """A count for the job's summary (``((stage, outcome), n)``: :mod:`.accounting`), mirrored
    in a Beam counter for live monitoring."""
    Metrics.counter(COUNTERS, f"{stage}:{outcome}").inc(n)
    return TaggedOutput(TALLY, ((stage, outcome), n))


def dead(letter: DeadLetter) -> TaggedOutput:
    return TaggedOutput(DEAD, letter)


class Tallying(beam.DoFn):
    """A DoFn for hot paths: tallies are summed per bundle and emitted once when it finishes,
    instead of one element (and one counter update) per record."""

    def start_bundle(self):
        self._tallies: Counter = Counter()

    def count(self, stage: str, outcome: str, n: int = 1) -> None:
        try:
            self._tallies[(stage, outcome)] += n
        except AttributeError:  # process called outside a bundle (a test, a plain loop)
            self._tallies = Counter({(stage, outcome): n})

    def finish_bundle(self):
        for (stage, outcome), n in sorted(getattr(self, "_tallies", Counter()).items()):
            Metrics.counter(COUNTERS, f"{stage}:{outcome}").inc(n)
            yield TaggedOutput(TALLY, WindowedValue(((stage, outcome), n), MIN_TIMESTAMP,
                                                    [GlobalWindow()]))
        self._tallies = Counter()

    def file_failed(self, path: str, where: str, exc: Exception):
        """A file that stopped being readable at ``where``: what came before it is kept."""
        self.count(FILES, "corrupt_file")
        yield dead(DeadLetter(path, where, "", FILES, "corrupt_file", str(exc)))


class SumTallies(beam.PTransform):
    """A job's (key, n) tallies -> one list of (key, total): a singleton for the summary."""

    def expand(self, tallies):
        # One combine (one group-by), not a sum per key and then a list: the tallies are few
        # keys, added up where they are made before anything is shuffled.
        return tallies | "Sum" >> beam.CombineGlobally(SumByKey())


class SumByKey(beam.CombineFn):
    """(key, n) pairs -> [(key, total)] in key order (keys that sort: the tallies' are pairs
    of strings)."""

    def create_accumulator(self) -> Counter:
        return Counter()

    def add_input(self, totals: Counter, pair) -> Counter:
        key, n = pair
        totals[key] += n
        return totals

    def merge_accumulators(self, accumulators) -> Counter:
        merged = Counter()
        for totals in accumulators:
            for key, n in totals.items():
                merged[key] += n
        return merged

    def extract_output(self, totals: Counter) -> list:
        return sorted(totals.items())


class DistinctSorted(beam.CombineFn):
    """Strings -> the distinct ones, sorted; None is left out (a marker that makes a key's
    list exist when it has no string at all)."""

    def create_accumulator(self) -> set:
        return set()

    def add_input(self, seen: set, item: str | None) -> set:
        if item is not None:
            seen.add(item)
        return seen

    def merge_accumulators(self, accumulators) -> set:
        merged: set = set()
        for seen in accumulators:
            merged |= seen
        return merged

    def extract_output(self, seen: set) -> list[str]:
        return sorted(seen)


# ------------------------------------------------------------------------------------------
# Options


def is_dry_run(options: PipelineOptions) -> bool:
    """``--dry_run true``: the runner builds and validates the job without running it (Beam
    keeps the option's text, so ``--dry_run false`` must not count as set)."""
    value = options.view_as(TestOptions).dry_run
    return str(value).strip().lower() in ("true", "1", "yes")


class ViewsParsedOnce(PipelineOptions):
    """A job's options (a view of them: ``options.view_as(ViewsParsedOnce)``) whose views parse
    the flags once per options class.

    Beam's ``view_as`` builds an argument parser for the class asked for and parses the flags
    again on every call, about a millisecond, and building a job asks for views about three
    times for each transform applied (its type options, twice, and more for type checks): 682
    views for the ingest job's 194 transforms, about half a second of its fixed cost
    (bench/job_overheads.py). A view holds
    nothing of its own: its values live in the options' shared dictionary, which the first view
    of a class fills with that class's parsed values and later views only read. So the options
    keep each class's parse of their flags (an ``argparse.Namespace``, only read) and build a
    view from it; a value put in the dictionary is a copy of the kept one, as a fresh parse
    would give, so that no two views' owners share a list. A class with an ``__init__`` of its
    own gets Beam's ``view_as``, and so do flags that are not a sequence of strings.
    """

    def view_as(self, cls):
        flags = self._flags
        if cls.__init__ is not PipelineOptions.__init__ or not _plain_flags(flags):
            return super().view_as(cls)
        # Kept by these options (a job's), not by the process: a class's defaults may read
        # the environment (CrossLanguageOptions reads BEAM_SERVICE_OVERRIDES), which a later
        # job in the same process must see as Beam's own view_as would.
        kept = self.__dict__.setdefault("_parsed", {})
        key = (cls, tuple(flags))
        parsed = kept.get(key)
        options = self._all_options
        if parsed is None:
            # The first view of a class puts its values in, as Beam's does; the dictionary
            # never loses a name, so a later view of the class has nothing to add.
            parsed = kept[key] = cls(list(flags))._visible_options
            for name in dir(parsed):
                if name[0] != "_" and name not in options:
                    options[name] = copy.deepcopy(getattr(parsed, name))
        view = object.__new__(cls)
        # PipelineOptions' own attributes, as its __init__ and view_as set them.
        object.__setattr__(view, "_flags", flags)
        object.__setattr__(view, "_visible_options", parsed)
        object.__setattr__(view, "_all_options", options)
        return view


def _plain_flags(flags) -> bool:
    return isinstance(flags, list | tuple) and all(isinstance(f, str) for f in flags)


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


# The longest sleep of the state sampler of a bundle run in this process (Beam's: 200 ms).
LOCAL_SAMPLING_PERIOD_MS = 5


def _prompt_sampler(original: type) -> type:
    """Beam's ``statesampler.StateSampler`` with a sampling period of at most
    ``LOCAL_SAMPLING_PERIOD_MS`` where its maker names none.

    Every bundle a worker runs starts a sampler thread that attributes time to the step under
    way (Beam's msecs counters), sleeping between samples: a hundredth of the period at first
    (at least 1 ms), a fifth longer each time, up to the period (Beam's default 200 ms). At the
    bundle's end the worker waits for the thread's sleep to end, doing nothing meanwhile: about
    a tenth of a short bundle's time and up to 200 ms after a long one. The ingest job on the
    sample's 1,000 articles (33 bundles) took 0.18 to 0.46 s longer than its CPU time so
    (docs/benchmarks.md, the eighth part). With this period the thread sleeps 1 ms at first and
    5 ms from about 20 ms into a bundle on, so a bundle's end waits at most 5 ms; the thread
    runs without the GIL and samples more often, so its counters are no less exact. A period
    given is kept."""

    class PromptStateSampler(original):
        def __init__(self, prefix, counter_factory,
                     sampling_period_ms=LOCAL_SAMPLING_PERIOD_MS):
            super().__init__(prefix, counter_factory, sampling_period_ms)

    PromptStateSampler.original = original
    return PromptStateSampler


def _install_prompt_sampler() -> None:
    """Puts :func:`_prompt_sampler`'s class in place of ``StateSampler`` in Beam's
    ``statesampler`` module, where the bundle processors of Beam's SDK worker look it up when
    they are made. :class:`LocalRunner` does so when it runs a job's bundles in this process;
    from then on every bundle processor made in this process has it, whichever runner makes
    it. Worker processes (``multi_processing``) and Dataflow's workers keep Beam's. Idempotent."""
    from apache_beam.runners.worker import statesampler

    current = statesampler.StateSampler
    if not hasattr(current, "original"):
        statesampler.StateSampler = _prompt_sampler(current)


class LocalRunner(fn_runner.FnApiRunner):
    """The runner of a local job: Beam's FnApiRunner, which the DirectRunner itself hands a
    batch job to once Prism is out of the way, handed the job's options as the DirectRunner
    hands them (so that ``--direct_num_workers N --direct_running_mode multi_processing``
    worker processes see them). It runs in this process, or in the worker threads or processes
    those options ask for, and reaches for no network. Worker processes log at
    ``WORKER_LOG_LEVEL`` unless ``--default_sdk_harness_log_level`` says otherwise. Bundles run
    in this process end without waiting for Beam's state sampler (:func:`_prompt_sampler`)."""

    def run_pipeline(self, pipeline, options):
        if running_mode(options) in IN_PROCESS_MODES:
            _install_prompt_sampler()
        self._provision_info = fn_runner.ExtendedProvisionInfo(
            beam_provision_api_pb2.ProvisionInfo(
                pipeline_options=JobServiceHandle.encode_pipeline_options(
                    worker_options(options))))
        return super().run_pipeline(pipeline, options)


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
    return isinstance(runner_for(options), LocalRunner) and running_mode(options) in (
        IN_PROCESS_MODES)


def runner_for(options: PipelineOptions):
    """The runner a job runs on: a :class:`LocalRunner` where ``--runner`` is absent or names
    the DirectRunner; otherwise the name given (Beam resolves it: DataflowRunner, ...)."""
    runner = options.view_as(StandardOptions).runner
    if runner is None or str(runner).rsplit(".", 1)[-1].lower() in DIRECT_RUNNERS:
        return LocalRunner()
    return runner


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
    pipeline = beam.Pipeline(runner=runner_for(options),
                             options=options.view_as(ViewsParsedOnce))
    build(pipeline)
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


# ------------------------------------------------------------------------------------------
# Inputs


def split_patterns(patterns: Iterable[str]) -> list[str]:
    """The comma-separated pieces of every pattern, in order, without empties or repeats."""
    pieces: list[str] = []
    for pattern in patterns:
        for piece in pattern.split(","):
            piece = piece.strip()
            if piece and piece not in pieces:
                pieces.append(piece)
    return pieces


def count_files(patterns: Iterable[str]) -> int:
    """How many files the globs match, each once (as :class:`MatchFiles` finds them): a total a
    local launcher shows progress against. It lists what it matches, so call it for local
    runs only (a Dataflow launch lists no bucket)."""
    return len({path for piece in split_patterns(patterns) for path in shards.match(piece)})


def url_lines(lines: Iterable[str]) -> Iterator[str]:
    """The URLs of a URL list: its stripped lines, less blank ones and # comments."""
    for line in lines:
        line = line.strip()
        if line and not line.startswith("#"):
            yield line


T2T_URL_LIST = "wiki_urls.json"  # tensor2tensor's names: wiki_urls.json-NNNNN-of-01000


def is_t2t_url_list(path: str) -> bool:
    """Whether a URL list is one of tensor2tensor's wiki_urls JSON shards (by its name), read
    as the reference URLs it lists rather than as lines."""
    return path.rsplit("/", 1)[-1].startswith(T2T_URL_LIST)


def list_urls(path: str) -> Iterator[str]:
    """The URLs of a URL list file: its lines (:func:`url_lines`), or the reference URLs of a
    tensor2tensor wiki_urls shard."""
    with FileSystems.open(path, compression_type=CompressionTypes.AUTO) as f:
        if is_t2t_url_list(path):
            from wikisum.formats import t2t

            for item in t2t.iter_wiki_urls(f, path):
                if not isinstance(item, t2t.Problem):
                    yield from item.refs
            return
        yield from url_lines(raw.decode("utf-8", errors="replace")
                             for raw in iter(f.readline, b""))


def count_distinct_lines(patterns: Iterable[str], key: Callable[[str], str]) -> int:
    """Distinct ``key(url)`` over the URL lists the globs match (:func:`url_lines`): the URLs a
    crawl will settle, one outcome each. Memory: one 64-bit hash per distinct URL."""
    seen: set[int] = set()
    for piece in split_patterns(patterns):
        for path in shards.match(piece):
            seen.update(stable_hash(key(url)) for url in list_urls(path))
    return len(seen)


class Values(beam.PTransform):
    """PBegin -> the few values given, known when the job is built (file globs, shard keys), in
    two steps: an impulse and one that yields them. Beam's ``Create`` takes three (it encodes
    the values into the job and decodes them in a step of their own) and, for more than one
    value, a reshuffle: each step of a job costs its launch and every local run about 20 ms,
    and where a group-by or a reshuffle follows there is nothing to spread."""

    def __init__(self, values: Iterable):
        super().__init__()
        self.values = tuple(values)

    def expand(self, pbegin):
        values = self.values
        return (pbegin | "Impulse" >> beam.Impulse()
                | "Values" >> beam.FlatMap(lambda _: values))


class MatchFiles(beam.PTransform):
    """Globs -> the paths they match, matched by the job when it runs (so a launch neither
    lists a bucket nor ships 100,000 paths inside the job graph), each path once, spread over
    workers. For a required input a glob that matches nothing fails the job with its name.
    """

    def __init__(self, patterns: Iterable[str], required: bool = True):
        super().__init__()
        self.patterns = split_patterns(patterns)
        self.required = required

    def expand(self, pbegin):
        # All the globs in one element, matched by one call: the paths come out once each
        # without a shuffle of their own (a job has a few globs; a Distinct cost a group-by
        # and four steps per input, and a Create of several globs a reshuffle).
        patterns, required = tuple(self.patterns), self.required
        return (pbegin
                | "Start" >> beam.Impulse()
                | "Match" >> beam.FlatMap(lambda _: match_paths(patterns, required))
                | "Spread" >> beam.Reshuffle())


def match_paths(patterns: Iterable[str], required: bool = True) -> list[str]:
    """The paths the globs match, in the order found, each once.

    Raises:
        BeamIOError: a glob matches nothing and ``required`` (the error names the glob).
    """
    paths: dict[str, None] = {}
    for pattern in patterns:
        found = FileSystems.match([pattern])[0].metadata_list
        if not found and required:
            raise BeamIOError(f"no file matches {pattern} (an input glob must match a file)")
        paths.update((metadata.path, None) for metadata in found)
    return list(paths)


# ------------------------------------------------------------------------------------------
# Outputs


class Staged(NamedTuple):
    """A file written under a temporary name, to be renamed to ``final`` by :class:`Commit`."""

    final: str
    temporary: str
    rows: int


def new_token() -> str:
    """A run's name for its temporary folder (no filesystem access)."""
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + uuid.uuid4().hex[:8]


def temp_dir(out: str, token: str) -> str:
    """Where a run stages its files: hidden, so no reader's glob sees them."""
    return FileSystems.join(out, f".temp-{token}")


def staging_path(staging: str, final: str) -> str:
    """Where one attempt stages the file that becomes ``final``: a name of its own per attempt,
    so a retried bundle never writes over the file a slower twin may still be writing (Commit
    takes the attempt whose Staged record came out)."""
    return FileSystems.join(staging, f"{final.rsplit('/', 1)[-1]}.{uuid.uuid4().hex[:12]}")


def describe_set(paths: list[str]) -> str:
    """A set of output files in one line: the first and the last, and how many."""
    paths = sorted(paths)
    if len(paths) == 1:
        return paths[0]
    return f"{paths[0]} ... {paths[-1].rsplit('/', 1)[-1]} ({len(paths)} files)"


class _WriteShard(beam.DoFn):
    def __init__(self, finals: dict, staging: str, schema, sort_key, buffer_bytes: int):
        self.finals, self.staging = finals, staging
        self.schema, self.sort_key, self.buffer_bytes = schema, sort_key, buffer_bytes

    def process(self, item):
        key, entries = item
        final = self.finals[key]
        started = time.monotonic()
        temporary = staging_path(self.staging, final)
        n = shards.write_sorted_table(self._rows(entries), temporary, self.schema,
                                      self.sort_key, buffer_bytes=self.buffer_bytes,
                                      **self._table_options())
        Metrics.counter(COUNTERS, "shards:written").inc()
        log.info("%s: %d rows staged in %.1f s", final.rsplit("/", 1)[-1], n,
                 time.monotonic() - started)
        yield Staged(final, temporary, n)

    @staticmethod
    def _rows(entries):
        return (r for r in entries if r is not None)  # None: the shard's marker

    def _table_options(self) -> dict:
        return {}


class WriteShards(beam.PTransform):
    """(shard key, row) -> one Parquet file per key of ``finals`` (key -> final path), every key
    written even when no row has it, rows sorted by ``sort_key`` (then by their bytes, so equal
    keys are ordered too: a rerun writes the same bytes). Files are staged under ``staging``;
    the output is one :class:`Staged` record per file for :class:`Commit`.

    Memory: a shard's rows are streamed through a sort that keeps at most ``buffer_bytes`` of
    them in memory and spills sorted runs to the worker's local disk
    (:func:`wikisum.core.shards.write_sorted_table`).
    """

    def __init__(self, finals: dict[Hashable, str], staging: str, schema,
                 sort_key: Callable[[dict], object],
                 buffer_bytes: int = shards.DEFAULT_BUFFER_BYTES):
        super().__init__()
        self.finals, self.staging = dict(finals), staging
        self.schema, self.sort_key, self.buffer_bytes = schema, sort_key, buffer_bytes

    def expand(self, rows):
        every = rows.pipeline | "EveryShard" >> Values([(key, None) for key in self.finals])
        return ((rows, every) | "RowsAndShards" >> beam.Flatten()
                | "GroupShards" >> beam.GroupByKey()
                | "WriteShard" >> beam.ParDo(_WriteShard(self.finals, self.staging, self.schema,
                                                         self.sort_key, self.buffer_bytes)))


# A bundle of WriteSpilledShards holds rows up to about this many bytes (of their text) before
# it writes them to one part file (a row group for each shard); what is left when the bundle ends
# goes through the shuffle as rows. A few MB: a local runner holds everything a shuffle carries
# in memory, and each part is a file (an object on GCS) that the shards read back.
SPILL_BYTES = 8 * 1024 * 1024


def _row_bytes(row: dict) -> int:
    return 64 + sum(len(v) if isinstance(v, (str, bytes)) else 8 for v in row.values())


def _write_part(path: str, groups: list[list[dict]], schema) -> None:
    """Unsorted rows -> one Parquet file with a row group for each list (written whole, then
    renamed)."""
    buf = io.BytesIO()
    with pq.ParquetWriter(buf, schema, compression="zstd") as writer:
        for rows in groups:
            writer.write_table(pa.Table.from_pylist(rows, schema=schema),
                               row_group_size=len(rows))
    shards.write_bytes(path, buf.getvalue())


def _part_rows(path: str, group: int, batch_rows: int = 256) -> Iterator[dict]:
    """The rows of one row group of a part file, a batch at a time.

    Raises:
        CorruptShard: the part is truncated or not Parquet (the message names it).
    """
    try:
        with files.open_read(path) as f:
            for batch in pq.ParquetFile(f).iter_batches(batch_size=batch_rows,
                                                        row_groups=[group]):
                yield from batch.to_pylist()
    except (pa.ArrowException, OSError) as exc:
        raise shards.CorruptShard(f"{path} is not a readable Parquet file ({exc}); rerun the "
                                  "job") from exc


class _SpillRows(beam.DoFn):
    """Rows -> ``(shard key, ("part", (path, row group)))`` for each shard's row group of an
    unsorted Parquet part file written in ``staging`` (one file every ``spill_bytes`` of rows),
    and ``(shard key, ("row", row))`` for the rows left when the bundle ends."""

    def __init__(self, staging: str, schema, shard_of: Callable[[dict], Hashable],
                 to_row: Callable[[object], dict], spill_bytes: int):
        self.staging, self.schema, self.shard_of, self.to_row = staging, schema, shard_of, to_row
        self.spill_bytes = spill_bytes

    def start_bundle(self):
        self._rows: dict = {}
        self._held = 0

    def process(self, element):
        row = self.to_row(element)
        self._rows.setdefault(self.shard_of(row), []).append(row)
        self._held += _row_bytes(row)
        if self._held >= self.spill_bytes:
            path = FileSystems.join(self.staging, "parts", f"{uuid.uuid4().hex}.parquet")
            keys = list(self._rows)
            _write_part(path, [self._rows[key] for key in keys], self.schema)
            for group, key in enumerate(keys):
                yield key, ("part", (path, group))
            self._rows, self._held = {}, 0

    def finish_bundle(self):
        for key, rows in self._rows.items():
            for row in rows:
                yield WindowedValue((key, ("row", row)), MIN_TIMESTAMP, [GlobalWindow()])
        self._rows, self._held = {}, 0


class _WriteSpilledShard(_WriteShard):
    """One shard from its rows and part files, the parts read a batch at a time; its row
    groups are no bigger than ``buffer_bytes`` either."""

    def _table_options(self) -> dict:
        return {"row_group_bytes": min(self.buffer_bytes, shards.ROW_GROUP_BYTES)}

    @staticmethod
    def _rows(entries):
        parts = []
        for entry in entries:
            if entry is None:  # the shard's marker: written even without rows
                continue
            kind, value = entry
            if kind == "row":
                yield value
            else:
                parts.append(value)
        for path, group in sorted(parts):
            yield from _part_rows(path, group)


class WriteSpilledShards(beam.PTransform):
    """Rows of several PCollections -> one Parquet file per key of ``finals``, as
    :class:`WriteShards` writes them (``shard_of(row)`` picks the key; every key written; rows
    sorted by ``sort_key`` then by their bytes), but in memory independent of their number on
    any runner: the rows are not carried through a shuffle. Each input's bundles write them, as
    they come, to unsorted part files under ``staging/parts/`` (one every ``spill_bytes``,
    SPILL_BYTES unless given, with a row group for each shard; the commit removes them with the
    staging folder); only those paths, and each bundle's last few rows, are grouped by shard,
    and each shard streams its row groups through the bounded sort of
    :func:`wikisum.core.shards.write_sorted_table` (``buffer_bytes``, which bounds its row
    groups too).

    For outputs whose number of rows a small input can multiply (dead letters: a WARC of a
    million tiny records): a local runner holds every element a shuffle carries in memory.
    Apply it to a tuple of PCollections, not to their Flatten, so that the part files are
    written in the step that makes the rows. ``to_row`` turns an element into its row.
    """

    def __init__(self, finals: dict[Hashable, str], staging: str, schema,
                 shard_of: Callable[[dict], Hashable], sort_key: Callable[[dict], object],
                 buffer_bytes: int = shards.DEFAULT_BUFFER_BYTES,
                 to_row: Callable[[object], dict] = dict, spill_bytes: int | None = None):
        super().__init__()
        self.finals, self.staging = dict(finals), staging
        self.schema, self.shard_of, self.sort_key = schema, shard_of, sort_key
        self.buffer_bytes, self.to_row = buffer_bytes, to_row
        self.spill_bytes = spill_bytes or SPILL_BYTES

    def expand(self, pcolls):
        spill = _SpillRows(self.staging, self.schema, self.shard_of, self.to_row,
                           self.spill_bytes)
        parts = [pcoll | f"Spill{i}" >> beam.ParDo(spill) for i, pcoll in enumerate(pcolls)]
        every = pcolls[0].pipeline | "EveryShard" >> Values([(key, None) for key in self.finals])
        return ((*parts, every) | "PartsAndShards" >> beam.Flatten()
                | "GroupShards" >> beam.GroupByKey()
                | "WriteShard" >> beam.ParDo(_WriteSpilledShard(
                    self.finals, self.staging, self.schema, self.sort_key, self.buffer_bytes)))


def stage_text(path: str, staging: str, text: str) -> Staged:
    """A small text file, staged like a shard (call it inside a step of the job)."""
    temporary = staging_path(staging, path)
    shards.write_text(temporary, text)
    return Staged(path, temporary, text.count("\n"))


def publish(s: Staged) -> None:
    """One staged file renamed to its final name; one already renamed (a retried commit) is
    left as it is.

    Raises:
        FileNotFoundError: it is neither at its temporary nor at its final name.
    """
    if FileSystems.exists(s.temporary):
        shards.rename(s.temporary, s.final)
    elif not FileSystems.exists(s.final):
        raise FileNotFoundError(f"{s.temporary} was staged but is gone, and {s.final} is not "
                                "there; rerun the job")


def commit(staged: list[Staged], record: str, record_text: str, clear: Iterable[str],
           staging: str | None = None, obsolete: Iterable[str] = ()) -> None:
    """Make staged files visible and write the completion record last (steps 1-5 above).

    Idempotent, so that a retried step finishes the job: a staged file already renamed is
    taken as done; earlier outputs are matched by the ``clear`` globs and deleted unless this
    run writes a file of the same name. Files matching the ``obsolete`` globs (state the job
    kept while it ran) are deleted after the record is written.

    Raises:
        FileNotFoundError: a staged file is neither at its temporary nor at its final name.
    """
    if FileSystems.exists(record):
        FileSystems.delete([record])
    finals = {s.final for s in staged}
    for pattern in clear:
        stale = [path for path in shards.match(pattern) if path not in finals]
        if stale:
            FileSystems.delete(stale)
    for s in sorted(staged):
        publish(s)
    shards.write_text(record, record_text)
    for pattern in obsolete:
        shards.delete(pattern)
    if staging is not None:
        shards.remove_dir(staging)
    log.info("committed %d file(s) and %s", len(staged), record)


class Commit(beam.PTransform):
    """Every Staged record of a job -> its files visible, then its completion record, in one step
    that runs once everything is staged (:func:`commit`). ``record_text(staged, *side)`` makes
    the record's text from the staged files and the ``side`` inputs (singletons: a summary
    from the job's tallies, say)."""

    def __init__(self, record: str, record_text: Callable[..., str], clear: Iterable[str],
                 staging: str, side: Iterable = (), obsolete: Iterable[str] = ()):
        super().__init__()
        self.record, self.record_text = record, record_text
        self.clear, self.staging, self.side = list(clear), staging, list(side)
        self.obsolete = list(obsolete)

    def expand(self, staged):
        record, record_text, clear, staging, obsolete = (
            self.record, self.record_text, self.clear, self.staging, self.obsolete)

        def run(files, *side):
            files = sorted(files)
            commit(files, record, record_text(files, *side), clear, staging, obsolete)
            return record

        # One element whose step sees every staged file as a side input (ready only once all
        # are staged); a list made by a combine took seven steps more.
        return (staged.pipeline | "Once" >> beam.Impulse()
                | "CommitFiles" >> beam.Map(
                    lambda _, files, *side: run(files, *side), beam.pvalue.AsList(staged),
                    *[beam.pvalue.AsSingleton(s) for s in self.side]))


class CommitRun(beam.PTransform):
    """Staged files -> the run's ``summary`` text (a singleton PCollection) staged beside them as
    ``summary-RUN.json``, then everything committed with ``summary.json`` (the same text)
    written last; files matching the ``obsolete`` globs (state the run kept while it ran) are
    deleted then. The commit of jobs that keep one summary per run (crawl, cc-fetch)."""

    def __init__(self, out: str, run_id: str, staging: str, summary,
                 obsolete: Iterable[str] = ()):
        super().__init__()
        self.out, self.run_id, self.staging = out, run_id, staging
        self.summary, self.obsolete = summary, list(obsolete)

    def expand(self, staged):
        summary = self.summary
        run_summary = FileSystems.join(self.out, f"summary-{self.run_id}.json")
        staging = self.staging
        staged_summary = summary | "StageRunSummary" >> beam.Map(
            lambda text: stage_text(run_summary, staging, text))
        return ((staged, staged_summary) | "AllStaged" >> beam.Flatten()
                | "Commit" >> Commit(FileSystems.join(self.out, "summary.json"),
                                     lambda files, text: text, [], staging, side=[summary],
                                     obsolete=self.obsolete))


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
