"""Where a job's time goes, by stage: the profile of ``bench/ingest.py --profile``.

Two instruments, in the job's own process:

- :class:`Timers` wraps the job's hot functions (trafilatura's ``extract``, language
  identification, the paragraph filter, decoding, the WARC reader, the wikitext parser,
  de-duplication, ...) where the job looks them up, and adds each call's thread CPU time
  (``time.thread_time``), less that of the timed calls inside it, to its stage: exact, and
  about a microsecond a call.
- :class:`StageSampler` looks at every thread's Python stack a hundred times a second and gives
  the CPU time each thread used since the last look (its own CPU clock) to the stage of the
  stack it sees. It covers what no timer does (imports, building the pipeline, Beam's runner,
  the joins), but only roughly: a thread is seen where it is at the look, not where it spent
  the time since (the cleaning thread alternates between its own work and waiting for
  trafilatura faster than the sampler looks). So its figures are only used to split what the
  timers leave of the process's CPU time (:func:`split_stages`).

Unlike cProfile, neither slows the Python-heavy stages more than the C-heavy ones (cProfile put
83 s on a job that runs in 62), and both see trafilatura in the helper thread where the
cleaning runs it.
"""

from __future__ import annotations

import inspect
import re
import sys
import threading
import time
from collections import Counter
from pathlib import Path

# The project's root is the package ``wikisum``: its files are named "wikisum/..." in the rules,
# wherever the checkout is.
PACKAGE_ROOT = str(Path(__file__).resolve().parents[1]) + "/"

# (stage, pattern over "path:function" of any frame), first match wins: specific stages
# before the stages that contain them (trafilatura runs inside the cleaning, the cleaning
# inside Beam's bundles).
RULES: tuple[tuple[str, str], ...] = (
    ("imports", r"<frozen importlib\._bootstrap>:_find_and_load$"),
    ("cleaning: trafilatura", r"/(trafilatura|justext|courlan|htmldate)/"),
    ("cleaning: language identification", r"wikisum/pipeline/(language|langwalk)\.py|py3langid"),
    ("cleaning: paragraph filter", r"wikisum/core/(paragraphs|boilerplate)\.py"),
    ("cleaning: decoding", r"wikisum/pipeline/webtext\.py:decode_body|charset_normalizer"),
    ("reading WARC/WET records", r"wikisum/pipeline/warcs\.py|/warcio/"),
    ("cleaning: the rest (URLs, checks, records)",
     r"wikisum/pipeline/references\.py:(clean_captures?|_prepare|_extracted|_filtered|"
     r"_languages|_cleaned)$|"
     r"wikisum/pipeline/ingest/references\.py:clean$"),
    ("dump: wikitext parsing", r"wikisum/pipeline/wikitext\.py|mwparserfromhell"),
    ("dump: reading pages", r"wikisum/pipeline/dumps\.py"),
    ("attach: de-duplication", r"wikisum/pipeline/dedup\.py"),
    ("attach: clones, language, order", r"wikisum/pipeline/references\.py:attach|"
                                        r"wikisum/pipeline/ingest/assemble\.py"),
    ("search results", r"wikisum/pipeline/ingest/search\.py"),
    ("joins by URL", r"wikisum/pipeline/ingest/references\.py:(join_by_url|follow_redirects|"
                     r"<lambda>)$"),
    ("reading loop (counts, progress)", r"wikisum/pipeline/ingest/references\.py"),
    ("writing Parquet", r"wikisum/core/shards\.py|/pyarrow/"),
    ("Beam: building the pipeline", r"wikisum/pipeline/ingest/job\.py:build$|"
                                    r"apache_beam/pipeline\.py:(apply|to_runner_api)$"),
    ("Beam: runner (bundles, coders, shuffles)", r"/apache_beam/"),
)
# Innermost frames of a thread that waits. "threading.py:run" innermost is a thread whose
# target is a C function (Beam's harness starts such threads to block on a queue).
IDLE = re.compile(r"threading\.py:(wait|_wait_for_tstate_lock|join|run)$|queue\.py:get$|"
                  r"selectors\.py:select$|concurrent/futures/.*:(result|_worker)$|"
                  r"time\.sleep|pipeline/webtext\.py:_serve$")
OTHER = "other"


def frame_names(codes) -> list[str]:
    """'path:function' of code objects (the project's paths as 'wikisum/...')."""
    names = []
    for code in codes:
        path = code.co_filename
        if path.startswith(PACKAGE_ROOT):
            path = "wikisum/" + path[len(PACKAGE_ROOT):]
        names.append(f"{path}:{code.co_name}")
    return names


def stack_codes(frame) -> tuple:
    """The code objects of a stack, innermost first."""
    codes = []
    while frame is not None:
        codes.append(frame.f_code)
        frame = frame.f_back
    return tuple(codes)


def rule_index(name: str, rules=RULES) -> int:
    """The index of the first rule matching a frame's 'path:function', ``len(rules)`` if none."""
    return next((i for i, (_, pattern) in enumerate(rules) if _compiled(pattern).search(name)),
                len(rules))


def classify(names: list[str], rules=RULES) -> str | None:
    """The stage of one stack (innermost frame first), or None if the thread is idle: the
    first rule that matches any of its frames."""
    if names and IDLE.search(names[0]):
        return None
    best = min((rule_index(name, rules) for name in names), default=len(rules))
    return rules[best][0] if best < len(rules) else OTHER


class Classifier:
    """:func:`classify` by code object: each frame's rule is found once, so that a look at a
    stack costs a dictionary lookup per frame (the sampler's own CPU is the profile's cost)."""

    def __init__(self, rules=RULES):
        self.rules = rules
        self._rule: dict = {}  # code object -> index of its first matching rule
        self._idle: dict = {}

    def _rule_of(self, code) -> int:
        found = self._rule.get(code)
        if found is None:
            found = self._rule[code] = rule_index(frame_names([code])[0], self.rules)
        return found

    def __call__(self, codes: tuple) -> str | None:
        if not codes:
            return OTHER
        idle = self._idle.get(codes[0])
        if idle is None:
            idle = self._idle[codes[0]] = bool(IDLE.search(frame_names([codes[0]])[0]))
        if idle:
            return None
        best = min(self._rule_of(code) for code in codes)
        return self.rules[best][0] if best < len(self.rules) else OTHER


_PATTERNS: dict[str, re.Pattern] = {}


def _compiled(pattern: str) -> re.Pattern:
    found = _PATTERNS.get(pattern)
    if found is None:
        found = _PATTERNS[pattern] = re.compile(pattern)
    return found


class StageSampler(threading.Thread):
    """Samples every other thread's stack every ``interval_s`` until stopped."""

    def __init__(self, interval_s: float = 0.01):
        super().__init__(daemon=True, name="stage-sampler")
        self.interval_s = interval_s
        self.samples: Counter = Counter()  # stage -> CPU seconds
        self.idle = 0.0
        self.own_cpu = 0.0  # the sampler's own CPU seconds: what the profile costs
        self.ticks = 0
        self._done = threading.Event()

    def run(self) -> None:
        me = threading.get_ident()
        stage_of = Classifier()
        clocks: dict[int, int] = {}
        used: dict[int, float] = {}  # CPU seconds of each thread at the last look
        while not self._done.wait(self.interval_s):
            self.ticks += 1
            for ident, frame in sys._current_frames().items():
                if ident == me:
                    continue
                try:
                    clock = time.pthread_getcpuclockid(ident)
                    now = time.clock_gettime(clock)
                except (OSError, OverflowError):  # the thread has just ended
                    continue
                if clocks.get(ident) != clock:  # a new thread (idents are reused)
                    clocks[ident], used[ident] = clock, now
                delta = now - used[ident]
                used[ident] = now
                if delta < 0:  # a thread that took over an ended one's ident and clock
                    continue
                stage = stage_of(stack_codes(frame))
                if stage is None:
                    self.idle += delta
                else:
                    self.samples[stage] += delta
        self.own_cpu = time.thread_time()

    def stop(self) -> dict:
        """Stop, and the CPU seconds of each stage, largest first."""
        self._done.set()
        self.join()
        seconds = dict(self.samples.most_common())
        return {"interval_s": self.interval_s, "ticks": self.ticks,
                "busy_s": sum(seconds.values()), "idle_s": self.idle,
                "sampler_cpu_s": self.own_cpu, "stages": seconds}


def profile_call(function, *args):
    """``function(*args)`` with the job's hot functions timed (:class:`Timers`) and every
    thread sampled (:class:`StageSampler`); (its result, the profile, its wall seconds)."""
    sampler = StageSampler()
    sampler.start()
    cpu, start = time.process_time(), time.perf_counter()
    timers = Timers().install()  # its imports (Beam, trafilatura) inside the window
    beam_stages = BeamStages()
    try:
        beam_stages.install()
        result = function(*args)
    finally:
        wall = time.perf_counter() - start
        profile = sampler.stop()
        profile["timed"] = timers.remove()
        profile["beam_stages"] = beam_stages.remove()
        profile["window_cpu_s"] = time.process_time() - cpu  # every thread's, this process
    return result, profile, wall


def split_stages(profile: dict, cpu_s: float) -> dict:
    """Per-stage CPU seconds of a profile: the timed stages as measured, and the rest of
    ``cpu_s`` (the profiled window's CPU, ``window_cpu_s``, less the timed stages and the
    sampler's own) split between the other stages in the proportions the sampler saw them."""
    timed = dict(profile["timed"])
    rest = cpu_s - sum(timed.values()) - profile["sampler_cpu_s"]
    sampled = {stage: seconds for stage, seconds in profile["stages"].items()
               if stage not in timed and seconds > 0}
    total = sum(sampled.values())
    split = {stage: rest * seconds / total for stage, seconds in sampled.items()} if total \
        else {OTHER: rest}
    return dict(sorted({**timed, **split}.items(), key=lambda item: -item[1]))


# ---------------------------------------------------------------------------------------------
# Beam's stages: what each one read and the CPU time of its work


class BeamStages:
    """Per stage of a Beam job run in this process (a fused run of steps, as the local
    runner executes it): the elements its read step took in, the encoded bytes handed to it,
    and the thread CPU time of the work done while it reads them
    (``DataInputOperation.process_encoded``, which decodes each element and runs every fused
    step after it on that element; not the steps' ``start_bundle`` or ``finish_bundle``, and
    only the CPU of the thread that runs the stage: trafilatura, which the cleaning runs in a
    helper thread, is not in it). Keyed by the read step's name: a group-by's read is named
    ``.../GroupByKey/Read``, a Flatten of several inputs that the runner materialises
    ``.../Flatten/Read``."""

    def __init__(self):
        self.stats: dict[str, list] = {}
        self._lock = threading.Lock()
        self._saved = None

    def install(self) -> BeamStages:
        if self._saved is not None:  # installed already: wrapping the wrapper would outlive remove
            return self
        from apache_beam.runners.worker import bundle_processor

        operation = bundle_processor.DataInputOperation
        original = operation.process_encoded
        stats, lock = self.stats, self._lock

        def process_encoded(op, encoded):
            before, start = getattr(op, "index", 0), time.thread_time()
            try:
                return original(op, encoded)
            finally:
                spent = time.thread_time() - start
                with lock:
                    entry = stats.setdefault(op.name_context.step_name, [0, 0, 0.0])
                    entry[0] += getattr(op, "index", 0) - before
                    entry[1] += len(encoded)
                    entry[2] += spent

        operation.process_encoded = process_encoded
        self._saved = (operation, original, process_encoded)
        return self

    def remove(self) -> dict:
        """Put Beam's method back; {read step: {elements, bytes, cpu_s}}, most CPU first."""
        if self._saved is not None:
            operation, original, wrapper = self._saved
            if operation.process_encoded is wrapper:  # (not if something wrapped it since)
                operation.process_encoded = original
            self._saved = None
        with self._lock:
            ranked = sorted(self.stats.items(), key=lambda item: -item[1][2])
        return {name: {"elements": n, "bytes": size, "cpu_s": round(cpu, 4)}
                for name, (n, size, cpu) in ranked}


# ---------------------------------------------------------------------------------------------
# Timers: the CPU time of the job's own hot functions, measured exactly


# (stage, module, attribute): a function wrapped where the job looks it up (a module that
# imported it by name is patched, not the module that defines it). Nested timed calls count
# in the innermost one only, so the stages do not overlap.
TIMED: tuple[tuple[str, str, str], ...] = (
    ("cleaning: trafilatura", "trafilatura", "extract"),
    ("cleaning: language identification", "wikisum.pipeline.references", "identify_many"),
    ("cleaning: paragraph filter", "wikisum.pipeline.references", "filter_paragraphs"),
    ("cleaning: paragraph filter", "wikisum.pipeline.references", "split_paragraphs"),
    ("cleaning: decoding", "wikisum.pipeline.references", "decode_body"),
    ("cleaning: the rest (URLs, checks, records)", "wikisum.pipeline.ingest.references",
     "clean_captures"),
    ("reading WARC/WET records", "wikisum.pipeline.ingest.references", "iter_records"),
    ("dump: wikitext parsing", "wikisum.pipeline.ingest.articles", "page_to_article"),
    ("dump: reading pages", "wikisum.pipeline.ingest.articles", "iter_pages"),
    ("attach: de-duplication", "wikisum.pipeline.references", "duplicate_paragraphs"),
    ("attach: clones, language, order", "wikisum.pipeline.ingest.assemble", "attach"),
    ("writing Parquet", "wikisum.core.shards", "write_sorted_table"),
)


class Timers:
    """Wraps the functions of ``TIMED`` so that each call's thread CPU time
    (``time.thread_time``), less that of the timed calls inside it, is added to its stage. A
    generator (``iter_records``) is timed while it makes each item, not while its consumer
    works on the item."""

    def __init__(self, timed=TIMED):
        self.timed = timed
        self.seconds: Counter = Counter()
        self._local = threading.local()
        self._lock = threading.Lock()
        self._saved: list[tuple[object, str, object]] = []

    def _segment(self, stage: str, step, *args, **kwargs):
        """``step(*args, **kwargs)``, its exclusive thread CPU time added to ``stage``."""
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        stack.append(0.0)  # CPU of the timed calls made inside this one
        start = time.thread_time()
        try:
            return step(*args, **kwargs)
        finally:
            spent = time.thread_time() - start
            inside = stack.pop()
            if stack:
                stack[-1] += spent
            with self._lock:
                self.seconds[stage] += spent - inside

    def _wrap(self, stage: str, function):
        timers = self

        def timed(*args, **kwargs):
            result = timers._segment(stage, function, *args, **kwargs)
            if inspect.isgenerator(result):
                return timers._items(stage, result)
            return result

        timed.__wrapped__ = function
        return timed

    def _items(self, stage: str, generator):
        while True:
            try:
                item = self._segment(stage, next, generator)
            except StopIteration:
                return
            yield item

    def install(self) -> Timers:
        import importlib

        for stage, module_name, attribute in self.timed:
            module = importlib.import_module(module_name)
            function = getattr(module, attribute)
            self._saved.append((module, attribute, function))
            setattr(module, attribute, self._wrap(stage, function))
        return self

    def remove(self) -> dict:
        """Put the functions back; the CPU seconds of each stage, largest first."""
        for module, attribute, function in reversed(self._saved):
            setattr(module, attribute, function)
        self._saved.clear()
        return dict(self.seconds.most_common())
