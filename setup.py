"""Package layout, what each part needs, and the shim for Beam's ``--setup_file`` (Dataflow
stages the package by building its sdist); all other metadata is in pyproject.toml.

The design keeps ``pipeline/``, ``extractors/``, ``models/`` and ``workflows/`` at the top of the
repository, and installs them under one import name: the repository root is the package
``wikisum`` (its ``__init__.py`` is the public API) and the folders are ``wikisum.pipeline``,
``wikisum.extractors``, ``wikisum.models`` and ``wikisum.workflows``. So nobody's own
``models.py`` or ``pipeline/`` next to their script shadows ours. A new sub-package (a folder
with an ``__init__.py`` under one of the four) is found here without being listed.
"""

import os

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

# The base layer (wikisum.core) and the extractors, which both stages use.
BASE = [
    "numpy>=1.24",
    "pyarrow>=14",
    # Files by URL (wikisum.core.files); gs:// and s3:// with the `gcs` and `s3` extras.
    "fsspec>=2023.1",
    "sentencepiece>=0.2.0",
    "scikit-learn>=1.4",
    # The t and normal distributions of the human-evaluation statistics (scikit-learn needs it
    # too; named because wikisum imports it).
    "scipy>=1.10",
    "networkx>=3.2",
    "pyyaml>=6",
    "rouge-score>=0.1.2",
    # Words of scripts written without spaces (Chinese, Japanese, Thai, Lao, Khmer, Burmese):
    # ICU's word break iterator, through PyICU built with ICU inside (wikisum.core.language).
    "pyicu-wheels>=2.15",
    # Snowball's stemmers for ROUGE beyond English (PyStemmer, C).
    "pystemmer>=2.2",
]
# Stage two: training, decoding, evaluation, export.
STAGE_TWO = [
    # A range that the CPU build 2.13.0 satisfies: `make` installs that build first where no
    # torch is present, and a GPU build already installed is kept. 2.4 at least: the models use
    # torch.compiler.is_compiling and torch.amp.custom_fwd(device_type=...).
    "torch>=2.4",
    # `wikisum export`: model weights in the safetensors format, loadable without pickle.
    "safetensors>=0.4",
]
# Stage one (the `pipeline` extra): the Beam jobs that build the dataset.
PIPELINE = [
    "apache-beam>=2.60",
    "warcio>=1.7.4",
    "trafilatura>=1.12",
    # tensor2tensor's released WikiSum files (`ingest --t2t-wiki-content`): TFRecord checksums.
    "google-crc32c>=1.5",
    "charset-normalizer>=3.3",
    "mwparserfromhell>=0.6.6",
    # Language identification of references; ships its model (no download at run time).
    "py3langid>=0.4",
    # robots.txt as RFC 9309 reads it (wildcards, `$`, longest match) for `wikisum crawl`.
    "protego>=0.3",
    # The report's figures.
    "matplotlib>=3.8",
    # Internationalised host names in URL keys (IDNA 2008 with UTS #46, as browsers resolve).
    "idna>=3.4",
    # The local search index of `wikisum search-index` / `search`: BM25 shards built in a set
    # amount of memory and searched memory-mapped (docs/search.md says why over bm25s).
    "tantivy>=0.27",
]
EXTRAS = {
    "pipeline": PIPELINE,
    # Dataflow: the runner, gs:// paths, and `build`, with which Beam makes the sdist that
    # --setup_file stages (without it Beam falls back to `setup.py sdist`).
    "gcp": [*PIPELINE, "apache-beam[gcp]>=2.60", "build>=1.2", "gcsfs>=2023.1"],
    # Stage two on buckets without Beam: gs:// and s3:// through fsspec.
    "gcs": ["gcsfs>=2023.1"],
    "s3": ["s3fs>=2023.1"],
    # Hugging Face `datasets`, to read a build with `datasets.load_dataset(BUILD_DIR)` (the
    # dataset card's configs; wikisum itself never imports it), and `transformers`, to
    # fine-tune a pretrained checkpoint (`wikisum train --model hf --init PATH`).
    "hf": ["datasets>=2.16", "transformers>=4.45"],
    # Training logs besides RUN/log.jsonl: `wikisum train --log-to tensorboard` / `wandb`.
    "tensorboard": ["tensorboard>=2.14"],
    "wandb": ["wandb>=0.16"],
    "dev": [
        # The tests build every Beam job for Dataflow (offline, --dry_run) and stage the package.
        "apache-beam[gcp]>=2.60",
        "build>=1.2",
        "pytest>=8",
        # `make test` spreads the test files over the machine's cores (-n auto --dist loadfile).
        "pytest-xdist>=3.5",
        # Property tests (tests/workflows/test_ownership_cli.py).
        "hypothesis>=6",
        "ruff>=0.6",
        # The import ladder (pyproject.toml's [tool.importlinter]), checked by `make lint`.
        "import-linter>=2.0",
        # Reference implementations the benchmarks compare against (extractors; MinHash).
        "sumy>=0.11",
        "datasketch>=1.6",
        # The search index's peer (bench/search.py: recall, speed, memory).
        "bm25s>=0.2",
        # A test loads a build with it.
        "datasets>=2.16",
        # The tests fine-tune tiny pretrained-style checkpoints (`--model hf`).
        "transformers>=4.45",
        # Drives Debian's chromium (never a downloaded browser) in the tests that open the
        # pages the tool writes: the extractor report, the human-evaluation and compare pages.
        "playwright>=1.40",
    ],
}


def workers_build() -> bool:
    """Whether this builds the package a Beam job stages for its workers: the base layer and
    stage one, no torch (the workers never import it). Beam's stager builds that sdist while
    wikisum.pipeline.beamio.packaged_for_workers sets WIKISUM_PACKAGE=workers; a worker's pip
    then builds a wheel from the sdist, where the variable is unset, and the sdist's PKG-INFO
    (listing apache-beam as a requirement of the install itself, not of an extra) says so."""
    if os.environ.get("WIKISUM_PACKAGE") == "workers":
        return True
    pkg_info = os.path.join(os.path.dirname(os.path.abspath(__file__)), "PKG-INFO")
    if not os.path.exists(pkg_info):  # a checkout, not an sdist
        return False
    with open(pkg_info, encoding="utf-8") as f:
        return any(line.startswith("Requires-Dist: apache-beam") and "extra ==" not in line
                   for line in f)


WORKERS = workers_build()

TOP_LEVEL = ["core", "extractors", "formats", "pipeline", "models", "training", "generation",
             "workflows"]


class BuildPy(build_py):
    """The root folder is the package ``wikisum``, but of its own files only ``__init__.py``
    belongs to it: this ``setup.py`` (which would run ``setup()`` on import) stays out."""

    def find_package_modules(self, package, package_dir):
        modules = super().find_package_modules(package, package_dir)
        if package == "wikisum":
            modules = [m for m in modules if m[1] == "__init__"]
        return modules


setup(
    cmdclass={"build_py": BuildPy},
    install_requires=BASE + (PIPELINE if WORKERS else STAGE_TWO),
    extras_require=EXTRAS,
    package_dir={"wikisum": "."},
    packages=["wikisum"] + [
        f"wikisum.{name}"
        for name in find_packages(include=[p for top in TOP_LEVEL for p in (top, f"{top}.*")])
    ],
)
