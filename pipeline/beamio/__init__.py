"""Beam plumbing every job shares, one module a job: :mod:`.tallies` (accounting: tallies and
dead letters), :mod:`.runner` (the runner, the launch, a dry run, progress), :mod:`.inputs`
(file globs matched by the job when it runs, URL lists), :mod:`.writes` (Parquet shards in
bounded memory) and :mod:`.committing` (staged files made visible all at once, the completion
record last). A job imports the names it uses from here; no job imports another job.

Nothing here touches a filesystem while a pipeline is built: inputs are matched by the job
itself (:class:`MatchFiles`), so a Dataflow job can be built and validated offline (``--dry_run
true``). Nothing here changes Beam: every runner, option and transform is Beam's own, used
through Beam's public classes.
"""

from wikisum.core import files
from wikisum.pipeline.beamfiles import BeamBackend
from wikisum.pipeline.beamio.committing import (
    Commit,
    CommitRun,
    Staged,
    commit,
    describe_set,
    new_token,
    publish,
    stage_text,
    staging_path,
    temp_dir,
)
from wikisum.pipeline.beamio.inputs import (
    MatchFiles,
    Values,
    count_distinct_lines,
    count_files,
    is_t2t_url_list,
    list_urls,
    match_paths,
    split_patterns,
    url_lines,
)
from wikisum.pipeline.beamio.runner import (
    DIRECT_RUNNERS,
    IN_PROCESS_MODES,
    PACKAGE_ENV,
    WORKER_LOG_LEVEL,
    WORKER_LOG_LEVELS,
    LocalRunner,
    describe_dry_run,
    is_dry_run,
    is_local,
    launch,
    packaged_for_workers,
    runner_for,
    running_mode,
    watch_job,
    worker_options,
    workers_in_this_process,
)
from wikisum.pipeline.beamio.tallies import (
    COUNTERS,
    DEAD,
    FILES,
    TALLY,
    DistinctSorted,
    SumByKey,
    SumTallies,
    Tallying,
    dead,
    tally,
)
from wikisum.pipeline.beamio.writes import SPILL_BYTES, WriteShards, WriteSpilledShards

__all__ = [
    "COUNTERS", "DEAD", "DIRECT_RUNNERS", "FILES", "IN_PROCESS_MODES", "PACKAGE_ENV",
    "SPILL_BYTES", "TALLY", "WORKER_LOG_LEVEL", "WORKER_LOG_LEVELS", "Commit", "CommitRun",
    "DistinctSorted", "LocalRunner", "MatchFiles", "Staged", "SumByKey", "SumTallies",
    "Tallying", "Values", "WriteShards", "WriteSpilledShards", "commit", "count_distinct_lines",
    "count_files", "dead", "describe_dry_run", "describe_set", "is_dry_run", "is_local",
    "is_t2t_url_list", "launch", "list_urls", "match_paths", "new_token", "packaged_for_workers",
    "publish", "runner_for", "running_mode", "split_patterns", "stage_text", "staging_path",
    "tally", "temp_dir", "url_lines", "watch_job", "worker_options", "workers_in_this_process",
]

# A Beam job (its launcher and its workers: every job imports this package) reads and writes
# URLs through Beam's FileSystems; stage two, which never imports Beam, through fsspec.
files.use_backend(BeamBackend())
