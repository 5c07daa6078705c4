"""wikisum changes none of its dependencies: importing ``wikisum.pipeline`` and running a
local job (the ingest job on the sample, which parses wikitext and cleans pages) leaves every
attribute of Apache Beam, mwparserfromhell, trafilatura and warcio as those libraries made it.

A child process imports every module of theirs that such a job loads (found by a first child
that runs the job), records each module's attributes and each of its classes' attributes (by
identity), then imports wikisum and runs the job, and records them again. A replaced function,
class or method, on a module or on a class, shows as a different object: none may differ. Of
the other attributes, those the libraries change themselves whenever they run (Beam's options
of the running pipeline, its counters of bundles and workers, trafilatura's stop list loaded
on first use) differ too; a control child that runs a plain Beam job on Beam's own
``FnApiRunner`` and a trafilatura extraction, without wikisum, names them, and nothing else
may differ."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

LIBRARIES = ("apache_beam", "mwparserfromhell", "trafilatura", "warcio")

PLAIN_JOB = """
import glob
import apache_beam as beam
import trafilatura
from apache_beam.io.filesystems import FileSystems
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from warcio.archiveiterator import ArchiveIterator

def pages(path):
    with FileSystems.open(path) as f:
        for record in ArchiveIterator(f):
            if record.rec_type == "response":
                yield record.content_stream().read().decode("utf-8", "replace")

with beam.Pipeline(runner=FnApiRunner()) as p:
    _ = (p | beam.Create(sorted(glob.glob(f"{sample}/warc/*.warc.gz"))) | beam.Reshuffle()
         | beam.FlatMap(pages) | beam.Map(trafilatura.extract))
"""

RUN_JOB = """
from wikisum.workflows import cli
status = cli.main(["ingest", "--wiki", f"{sample}/enwiki-sample-pages-articles.xml.bz2",
                   "--warc", f"{sample}/warc/*.warc.gz", "--wet", f"{sample}/wet/*.warc.wet.gz",
                   "--search-results", f"{sample}/search_results.jsonl", "--out", out, "--quiet"])
assert status == 0, status
"""

LOADED = """
import sys
sample, out = sys.argv[1], sys.argv[2]
LIBRARIES = {libraries!r}
{run_job}
print(json.dumps(sorted(name for name in sys.modules
                        if name.split(".")[0] in LIBRARIES)))
"""

COMPARED = """
import importlib, inspect, sys
sample, out, modules = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])

def snapshot():
    seen = {{}}
    for name in modules:
        module = sys.modules.get(name)
        if module is None:
            continue
        for attr, value in list(vars(module).items()):
            seen[f"{{name}}.{{attr}}"] = (id(value), code(value))
            if inspect.isclass(value) and value.__module__ == name:
                for key, member in list(vars(value).items()):
                    seen[f"{{name}}.{{attr}}.{{key}}"] = (id(member), code(member))
    return seen

def code(value):
    return (inspect.isclass(value) or inspect.isroutine(value) or inspect.ismodule(value)
            or isinstance(value, (property, staticmethod, classmethod)))

for name in modules:
    try:
        importlib.import_module(name)
    except Exception:  # a module that only imports as part of a job's state: left out
        pass
kept = {{name: sys.modules[name] for name in modules if name in sys.modules}}
before = snapshot()
import wikisum.pipeline
{run_job}
after = snapshot()
changed = sorted(key for key, value in before.items() if after.get(key, value) != value)
print(json.dumps({{"compared": len(before), "changed": changed,
                  "code": sorted(key for key in changed if before[key][1] or after[key][1]),
                  "gone": sorted(key for key in before if key not in after),
                  "reloaded": sorted(n for n, m in kept.items() if sys.modules.get(n) is not m)}}))
"""


def child(script: str, *args: str) -> str:
    done = subprocess.run([sys.executable, "-c", "import json\n" + textwrap.dedent(script),
                           *args], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def test_a_local_job_leaves_every_attribute_of_its_libraries_as_they_made_it(sample_corpus,
                                                                             tmp_path):
    sample, _ = sample_corpus
    loaded = json.loads(child(LOADED.format(libraries=LIBRARIES, run_job=RUN_JOB),
                              str(sample), str(tmp_path / "first")))
    assert {name.split(".")[0] for name in loaded} == set(LIBRARIES)
    got = json.loads(child(COMPARED.format(run_job=RUN_JOB), str(sample),
                           str(tmp_path / "second"), json.dumps(loaded)))
    plain = json.loads(child(COMPARED.format(run_job=PLAIN_JOB), str(sample),
                             str(tmp_path / "third"), json.dumps(loaded)))
    assert got["compared"] > 10_000  # every module's and class's attributes, not a few
    assert got["code"] == [] and plain["code"] == []
    assert got["gone"] == [] and got["reloaded"] == [], got
    # what differs is what the libraries change themselves when they run a job
    assert set(got["changed"]) <= set(plain["changed"]), got["changed"]
