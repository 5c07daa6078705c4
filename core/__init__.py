"""The base layer both stages stand on; it imports neither Beam, torch, nor the command line.

Progress and verbosity (worker counters included), text normalisation and word counting, typed
records, Parquet schemas, shard naming and whole-set checks, files by path or URL (fsspec, or
Beam's FileSystems inside the Beam jobs), the dataset loader, the vocabulary, ownership of
output folders, and the statistics of the report and evaluation.
"""
