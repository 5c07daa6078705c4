"""The Beam plumbing every job shares: the bounded sorting shard writer, the commit that makes a
job's files visible at once, input files matched by the job, and the dry-run switch."""

from __future__ import annotations

import json
import random
import tracemalloc
from pathlib import Path

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
from apache_beam.testing.util import assert_that, equal_to

from wikisum.core import shards
from wikisum.pipeline import beamio
from wikisum.pipeline.beamio import writes

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False),
                    pa.field("text", pa.string(), nullable=False)])


def rows(n: int, seed: int = 0, width: int = 50) -> list[dict]:
    rng = random.Random(seed)
    out = [{"id": i // 2, "text": f"{i:06d}" + "x" * rng.randint(0, width)} for i in range(n)]
    rng.shuffle(out)
    return out


# --------------------------------------------------------------------------------------------
# write_sorted_table


def test_sorted_writer_sorts_and_orders_equal_keys_by_the_row(tmp_path):
    data = rows(500)
    path = tmp_path / "s.parquet"
    assert shards.write_sorted_table(iter(data), str(path), SCHEMA, lambda r: r["id"]) == 500
    got = pq.read_table(path).to_pylist()
    assert [r["id"] for r in got] == sorted(r["id"] for r in data)
    # ids repeat (i // 2): the tie is broken by the row's bytes, never by arrival order
    assert got == sorted(data, key=lambda r: (r["id"], shards.pickle.dumps(
        r, protocol=shards.pickle.HIGHEST_PROTOCOL)))


def test_sorted_writer_gives_the_same_bytes_whatever_the_order_and_the_buffer(tmp_path):
    outputs = []
    for seed, buffer_bytes in [(0, 1 << 30), (1, 2_000), (2, 300)]:
        path = tmp_path / f"{seed}.parquet"
        data = rows(400)
        random.Random(seed).shuffle(data)
        shards.write_sorted_table(iter(data), str(path), SCHEMA, lambda r: r["id"],
                                  buffer_bytes=buffer_bytes, row_group_bytes=4_000)
        outputs.append(path.read_bytes())
    assert outputs[0] == outputs[1] == outputs[2]
    assert pq.ParquetFile(tmp_path / "0.parquet").metadata.num_row_groups > 3


def test_sorted_writer_keeps_memory_bounded_whatever_the_shard_size(tmp_path):
    """32 MB of rows, streamed from a generator, through a 1 MB buffer and 1 MB row groups: the
    writer's Python allocations stay under 12 MB (8 measured; the old writer's sorted list of
    rows alone was 32 MB here, before its Arrow table and the file's bytes)."""
    def generate():
        for i in range(4_000):
            yield {"id": (i * 7919) % 4_000, "text": f"{i:05d}" * 1_600}

    tracemalloc.start()
    try:
        n = shards.write_sorted_table(generate(), str(tmp_path / "big.parquet"), SCHEMA,
                                      lambda r: r["id"], buffer_bytes=1 << 20,
                                      row_group_bytes=1 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert n == 4_000
    assert peak < 12 * 2**20, f"peak {peak / 2**20:.1f} MiB"
    ids = pq.read_table(tmp_path / "big.parquet", columns=["id"]).column("id").to_pylist()
    assert ids == list(range(4_000))


def test_sorted_writer_writes_an_empty_shard_with_its_schema(tmp_path):
    path = tmp_path / "empty.parquet"
    assert shards.write_sorted_table(iter([]), str(path), SCHEMA, lambda r: r["id"]) == 0
    table = pq.read_table(path)
    assert table.num_rows == 0 and table.schema.equals(SCHEMA)
    assert not list(tmp_path.glob(".*"))  # no temporary file left


# --------------------------------------------------------------------------------------------
# commit


def stage(tmp_path: Path, names: list[str], token: str = "t") -> list[beamio.Staged]:
    staging = tmp_path / f".temp-{token}"
    staging.mkdir(exist_ok=True)
    out = []
    for name in names:
        temporary = staging / f"{name.replace('/', '_')}.part"
        temporary.write_text(f"new {name}")
        out.append(beamio.Staged(str(tmp_path / name), str(temporary), 1))
    return out


def test_commit_replaces_the_old_set_and_writes_the_record_last(tmp_path):
    (tmp_path / "t").mkdir()
    for name in ("t/t-00000-of-00003.parquet", "t/t-00001-of-00003.parquet",
                 "t/t-00002-of-00003.parquet", "other.txt"):
        (tmp_path / name).write_text("old")
    (tmp_path / "summary.json").write_text("old")
    staged = stage(tmp_path, ["t/t-00000-of-00002.parquet", "t/t-00001-of-00002.parquet"])
    beamio.commit(staged, str(tmp_path / "summary.json"), "new record",
                  [str(tmp_path / "t" / "t-*.parquet")], str(tmp_path / ".temp-t"))
    assert sorted(p.name for p in (tmp_path / "t").iterdir()) == [
        "t-00000-of-00002.parquet", "t-00001-of-00002.parquet"]
    assert (tmp_path / "t" / "t-00001-of-00002.parquet").read_text() == \
        "new t/t-00001-of-00002.parquet"
    assert (tmp_path / "summary.json").read_text() == "new record"
    assert (tmp_path / "other.txt").read_text() == "old"  # not the job's: untouched
    assert not (tmp_path / ".temp-t").exists()


def test_a_retried_commit_finishes_what_a_failed_one_started(tmp_path, monkeypatch):
    staged = stage(tmp_path, [f"t/t-{i:05d}-of-00004.parquet" for i in range(4)])
    renamed = []
    real = shards.rename

    def fail_on_third(source, destination):
        if len(renamed) == 2:
            raise OSError("worker lost")
        renamed.append(destination)
        real(source, destination)

    monkeypatch.setattr(shards, "rename", fail_on_third)
    record = str(tmp_path / "summary.json")
    with pytest.raises(OSError, match="worker lost"):
        beamio.commit(staged, record, "done", [str(tmp_path / "t" / "t-*.parquet")])
    assert not (tmp_path / "summary.json").exists()  # a partial set has no record
    monkeypatch.setattr(shards, "rename", real)
    beamio.commit(staged, record, "done", [str(tmp_path / "t" / "t-*.parquet")])
    assert len(list((tmp_path / "t").glob("*.parquet"))) == 4
    assert (tmp_path / "summary.json").read_text() == "done"


def test_a_staged_file_lost_before_its_commit_is_an_error(tmp_path):
    staged = stage(tmp_path, ["a.txt"])
    Path(staged[0].temporary).unlink()
    with pytest.raises(FileNotFoundError, match="was staged but is gone"):
        beamio.commit(staged, str(tmp_path / "r.json"), "x", [])
    assert not (tmp_path / "r.json").exists()


def test_write_shards_and_commit_in_a_pipeline(tmp_path):
    out = tmp_path / "out"
    finals = {i: shards.shard_path(str(out / "t"), "t", i, 3) for i in range(3)}
    staging = beamio.temp_dir(str(out), "tok")
    with BeamTestPipeline(runner=beamio.LocalRunner()) as p:
        staged = (p | beam.Create([(i % 2, {"id": i, "text": str(i)}) for i in range(10)])
                  | beamio.WriteShards(finals, staging, SCHEMA, lambda r: r["id"]))
        total = p | "Total" >> beam.Create([10])
        _ = staged | beamio.Commit(str(out / "done.json"),
                                   lambda files, n: json.dumps([n, [f.rows for f in files]]),
                                   [str(out / "t" / "t-*.parquet")], staging, side=[total])
    assert json.loads((out / "done.json").read_text()) == [10, [5, 5, 0]]
    assert pq.read_table(out / "t" / "t-00002-of-00003.parquet").num_rows == 0  # empty shard
    assert [r["id"] for r in pq.read_table(out / "t" / "t-00000-of-00003.parquet").to_pylist()
            ] == [0, 2, 4, 6, 8]
    assert not Path(staging).exists()


def test_spilled_shards_are_the_shards_write_shards_writes(tmp_path):
    """Rows from two PCollections, most written by their bundles to part files (a tiny spill
    bound), the rest carried as rows: the same files, row for row, as WriteShards writes."""
    data = rows(600, seed=3)
    shuffled, spilled = tmp_path / "shuffled", tmp_path / "spilled"
    finals = {folder: {i: shards.shard_path(str(folder), "t", i, 3) for i in range(3)}
              for folder in (shuffled, spilled)}
    with BeamTestPipeline(runner=beamio.LocalRunner()) as p:
        _ = (p | "All" >> beam.Create([(r["id"] % 3, r) for r in data])
             | beamio.WriteShards(finals[shuffled], str(tmp_path / "s1"), SCHEMA,
                                  lambda r: r["id"]))
        halves = (p | "One" >> beam.Create(data[:400]), p | "Two" >> beam.Create(data[400:]))
        _ = halves | beamio.WriteSpilledShards(finals[spilled], str(tmp_path / "s2"), SCHEMA,
                                               lambda r: r["id"] % 3, lambda r: r["id"],
                                               spill_bytes=2000)
    # One part file per spill (it was one per shard and spill): a row group for each shard.
    parts = [pq.ParquetFile(p) for p in (tmp_path / "s2" / "parts").glob("*.parquet")]
    assert len(parts) > 10
    for part in parts:
        spill = part.read().to_pylist()
        assert sum(map(writes._row_bytes, spill)) >= 2000
        assert part.num_row_groups == len({r["id"] % 3 for r in spill}) > 1
        assert all(len({r["id"] % 3 for r in part.read_row_group(i).to_pylist()}) == 1
                   for i in range(part.num_row_groups))
    staged = {folder: sorted(Path(folder).parent.glob(f"s{n}/t-*")) for n, folder in
              ((1, shuffled), (2, spilled))}
    assert [p.name.split(".")[0] for p in staged[spilled]] == [
        p.name.split(".")[0] for p in staged[shuffled]] == [
        f"t-0000{i}-of-00003" for i in range(3)]
    for a, b in zip(staged[shuffled], staged[spilled], strict=True):
        assert pq.read_table(a).to_pylist() == pq.read_table(b).to_pylist()
    assert sum(pq.read_table(b).num_rows for b in staged[spilled]) == 600


# --------------------------------------------------------------------------------------------
# Inputs and options


def test_split_patterns():
    assert beamio.split_patterns(["a,b", " c ,", "a"]) == ["a", "b", "c"]


def test_match_files_at_run_time(tmp_path):
    for name in ("a.txt", "b.txt", "c.log"):
        (tmp_path / name).write_text(name)
    with BeamTestPipeline(runner=beamio.LocalRunner()) as p:
        paths = p | beamio.MatchFiles([f"{tmp_path}/*.txt,{tmp_path}/a.txt", f"{tmp_path}/*.log"])
        assert_that(paths, equal_to([str(tmp_path / n) for n in ("a.txt", "b.txt", "c.log")]))
    with BeamTestPipeline(runner=beamio.LocalRunner()) as p:
        none = p | beamio.MatchFiles([f"{tmp_path}/*.nope"], required=False)
        assert_that(none, equal_to([]))


def test_match_paths_gives_each_path_once_in_the_order_found(tmp_path):
    for name in ("a.txt", "b.txt", "c.log"):
        (tmp_path / name).write_text(name)
    assert beamio.match_paths([f"{tmp_path}/a.txt", f"{tmp_path}/*.txt", f"{tmp_path}/*.nope"],
                              required=False) == [str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]
    with pytest.raises(OSError, match=r"\*\.nope"):
        beamio.match_paths([f"{tmp_path}/*.txt", f"{tmp_path}/*.nope"])
    assert beamio.match_paths([]) == []  # a job given no glob of a kind (no --wet)


def _combined(fn: beam.CombineFn, parts: list[list]):
    """What Beam makes of ``fn`` over inputs split into parts (each part added up on its own,
    then merged, as a combiner lifted over workers does)."""
    accumulators = []
    for part in parts:
        accumulator = fn.create_accumulator()
        for item in part:
            accumulator = fn.add_input(accumulator, item)
        accumulators.append(accumulator)
    return fn.extract_output(fn.merge_accumulators(accumulators))


def test_sum_by_key_adds_up_tallies_across_parts_in_key_order():
    parts = [[(("records", "in"), 2), (("files", "in"), 1)], [],
             [(("records", "in"), 3), (("records", "kept"), 1)]]
    assert _combined(beamio.SumByKey(), parts) == [
        (("files", "in"), 1), (("records", "in"), 5), (("records", "kept"), 1)]
    assert _combined(beamio.SumByKey(), [[]]) == []
    with BeamTestPipeline(runner=beamio.LocalRunner()) as p:
        totals = (p | beam.Create([(("a", "x"), 1), (("a", "x"), 2), (("b", "y"), 4)])
                  | beamio.SumTallies())
        assert_that(totals, equal_to([[(("a", "x"), 3), (("b", "y"), 4)]]))


def test_distinct_sorted_gives_each_string_once_in_order_across_parts_without_none():
    assert _combined(beamio.DistinctSorted(), [["b", "a", None], ["a", "c"], []]) == [
        "a", "b", "c"]
    assert _combined(beamio.DistinctSorted(), [[None]]) == []
    assert _combined(beamio.DistinctSorted(), []) == []


@pytest.mark.parametrize("argv, inside", [
    ([], True), (["--direct_running_mode", "in_memory", "--direct_num_workers", "2"], True),
    (["--direct_running_mode", "multi_threading"], True),
    (["--direct_running_mode", "multi_processing"], False),
    (["--runner", "DataflowRunner"], False)])
def test_workers_in_this_process(argv, inside):
    assert beamio.workers_in_this_process(PipelineOptions(argv)) is inside


def test_a_required_glob_that_matches_nothing_fails_the_job_naming_it(tmp_path):
    with pytest.raises(Exception, match=r"\*\.nope"):
        with BeamTestPipeline(runner=beamio.LocalRunner()) as p:
            _ = p | beamio.MatchFiles([f"{tmp_path}/*.nope"])


@pytest.mark.parametrize("value, dry", [("true", True), ("True", True), (True, True),
                                        ("false", False), (False, False), (None, False)])
def test_dry_run_flag(value, dry):
    argv = [] if value is None else [f"--dry_run={value}"]
    assert beamio.is_dry_run(PipelineOptions(argv)) is dry


def test_a_dry_run_on_a_runner_that_would_run_the_job_is_refused():
    with pytest.raises(ValueError, match="DataflowRunner only"):
        beamio.launch("x", PipelineOptions(["--dry_run", "true"]), lambda p: None, [])
