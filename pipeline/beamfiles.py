"""Beam's FileSystems as :mod:`wikisum.core.files`' backend for URLs, so that the Beam jobs,
their launcher and their workers alike, read and write ``gs://`` (and every scheme Beam knows)
through the filesystems the runner configures. Registered when :mod:`wikisum.pipeline.beamio`
is imported (every Beam job imports it); stage two, which never imports Beam, keeps fsspec.
"""

from __future__ import annotations

from typing import IO

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

RAW = CompressionTypes.UNCOMPRESSED


class BeamBackend:
    def exists(self, url: str) -> bool:
        return FileSystems.exists(url)

    def is_dir(self, url: str) -> bool:
        return bool(self.entries(url, 1))

    def match(self, pattern: str) -> list[str]:
        return [m.path for m in FileSystems.match([pattern])[0].metadata_list]

    def open_read(self, url: str) -> IO[bytes]:
        return FileSystems.open(url, compression_type=RAW)

    def open_write(self, url: str) -> IO[bytes]:
        return FileSystems.create(url, compression_type=RAW)

    def delete(self, url: str) -> None:
        FileSystems.delete([url])

    def rename(self, source: str, destination: str) -> None:
        if FileSystems.exists(destination):
            FileSystems.delete([destination])
        FileSystems.rename([source], [destination])

    def entries(self, folder: str, limit: int) -> list[str]:
        """Up to ``limit`` object names under the prefix ``folder/``."""
        prefix = folder.rstrip("/") + "/"
        found = FileSystems.match([prefix + "*"], limits=[limit])[0].metadata_list
        return [m.path[len(prefix):] for m in found]
