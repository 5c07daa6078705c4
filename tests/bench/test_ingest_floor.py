"""bench/ingest.py's floor: a Beam job that only reads and cleans, counting what the loop counts."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import ingest  # noqa: E402


def test_the_floor_counts_the_records_pages_and_kept_pages_the_loop_counts(tmp_path, capsys):
    from wikisum.pipeline.ingest.config import CleanConfig
    from wikisum.pipeline.sample import corpus as sample

    sample.write_sample(tmp_path, articles=3, seed=0)
    files = sorted(str(p) for p in (tmp_path / "warc").glob("*.warc.gz")) + \
        sorted(str(p) for p in (tmp_path / "wet").glob("*.warc.wet.gz"))
    config = CleanConfig()
    loop = [sum(n) for n in zip(*(ingest.read_and_clean(f, config) for f in files),
                                strict=True)]
    assert loop[0] > loop[1] > loop[2] > 0  # records hold more than pages; some are kept

    assert ingest.floor_child(files) == 0
    line = next(x for x in capsys.readouterr().out.splitlines()
                if x.startswith("BENCH_FLOOR "))
    floor = json.loads(line[len("BENCH_FLOOR "):])
    assert [floor["records"], floor["pages"], floor["kept"]] == loop
    assert floor["job_s"] > floor["import_s"] >= 0
