"""Writers of tensor2tensor's WikiSum support files, for tests: each writes what the reading
code it cites (github.com/tensorflow/tensor2tensor, tensor2tensor/data_generators/wikisum/)
expects, so the readers in wikisum.formats are tested against the format, not against
themselves. Also a real protobuf class of tf.train.Example, to check the hand-written wire
format against protobuf's own, and a stream that reads a few bytes at a time."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

from wikisum.formats.tfexample import encode_example
from wikisum.formats.tfrecord import encode_record

CONTENT_FILE = "wiki_content.tfrecords-%05d-of-01000"  # wikisum.py: WIKI_CONTENT_FILE
URLS_FILE = "wiki_urls.json-%05d-of-01000"  # wikisum.py: WIKI_URLS_FILE
WET_SEGMENT = "crawl-data/CC-MAIN-2017-39/segments/1505818685129.23/wet/"


def wiki_content_example(url: str, title: str, sections: list[tuple[str, str]]) -> bytes:
    """One serialized article as wikisum.py's ``_wiki_articles`` parses it: VarLenFeature
    bytes ``url`` and ``title`` (it takes value [0] of each) and the parallel lists
    ``section_titles`` / ``section_texts`` (it zips them; section 0 is the lead)."""
    return encode_example({
        "url": [url.encode("utf-8")],
        "title": [title.encode("utf-8")],
        "section_titles": [t.encode("utf-8") for t, _ in sections],
        "section_texts": [x.encode("utf-8") for _, x in sections],
    })


def write_wiki_content(path: Path, articles: list[dict], *, compress: bool = False) -> Path:
    """A wiki_content shard: one TFRecord per article (``{"url", "title", "sections":
    [(title, text), ...]}``), read by ``tf.data.TFRecordDataset`` in ``_wiki_articles``
    (uncompressed there; ``compress`` writes it as TFRecordOptions(GZIP) would)."""
    data = b"".join(encode_record(wiki_content_example(a["url"], a["title"], a["sections"]))
                    for a in articles)
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


def write_wiki_urls(path: Path, refs_by_wiki_url: dict[str, list]) -> Path:
    """A wiki_urls shard: one JSON object ``{wiki_url: {"refs": [...]}}``, read whole by
    wikisum.py's ``_wiki_urls_for_shard`` (``json.loads(f.read())``) and indexed
    ``wiki_urls[wiki.url]["refs"]`` in ``produce_examples``."""
    path.write_text(json.dumps({u: {"refs": refs} for u, refs in refs_by_wiki_url.items()}))
    return path


def metadata_name(wet_name: str) -> str:
    """``os.path.basename(wet_file) + METADTA_SUFFIX`` (wikisum.py:
    ``extract_references_from_wets``)."""
    return wet_name + ".metadata.json"


def write_metadata(folder: Path, wet_name: str, shards_by_url: dict[str, list[int]]) -> Path:
    """A commoncrawl_metadata file ``{ref_url: [shard_id, ...]}``, read with ``json.loads`` in
    ``extract_references_from_wets``, which writes each WET record whose URL it lists to those
    shards' reference files."""
    path = folder / metadata_name(wet_name)
    path.write_text(json.dumps(shards_by_url))
    return path


def wet_name(i: int) -> str:
    """A WET file name of CC-MAIN-2017-39's form."""
    return f"CC-MAIN-20170919112242-20170919132242-{i:05d}.warc.wet.gz"


def wet_paths_listing(names: list[str]) -> list[str]:
    """Lines of the crawl's ``wet.paths.gz`` (utils.py: ``wet_download_urls`` prefixes each
    with the S3 address)."""
    return [WET_SEGMENT + name + "\n" for name in names]


def example_class():
    """The protobuf class of tf.train.Example, built from example.proto and feature.proto's
    schema (tensorflow/core/example/), so that tests compare with protobuf itself."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    f = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(name="wikisum_test_example.proto",
                                              package="wikisum_test", syntax="proto3")

    def message(name, fields, nested=()):
        msg = file.message_type.add(name=name)
        for number, field_name, kind, label, type_name in fields:
            field = msg.field.add(name=field_name, number=number, type=kind, label=label)
            if type_name:
                field.type_name = type_name
        for entry in nested:
            msg.nested_type.add().CopyFrom(entry)
        return msg

    repeated, optional = f.LABEL_REPEATED, f.LABEL_OPTIONAL
    message("BytesList", [(1, "value", f.TYPE_BYTES, repeated, "")])
    message("FloatList", [(1, "value", f.TYPE_FLOAT, repeated, "")])
    message("Int64List", [(1, "value", f.TYPE_INT64, repeated, "")])
    feature = message("Feature", [
        (number, f"{kind}_list", f.TYPE_MESSAGE, optional, f".wikisum_test.{name}List")
        for number, kind, name in ((1, "bytes", "Bytes"), (2, "float", "Float"),
                                   (3, "int64", "Int64"))])
    feature.oneof_decl.add(name="kind")
    for field in feature.field:
        field.oneof_index = 0
    entry = descriptor_pb2.DescriptorProto(name="FeatureEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=f.TYPE_STRING, label=optional)
    entry.field.add(name="value", number=2, type=f.TYPE_MESSAGE, label=optional,
                    type_name=".wikisum_test.Feature")
    message("Features", [(1, "feature", f.TYPE_MESSAGE, repeated,
                          ".wikisum_test.Features.FeatureEntry")], nested=[entry])
    message("Example", [(1, "features", f.TYPE_MESSAGE, optional, ".wikisum_test.Features")])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("wikisum_test.Example"))


class Trickle(io.RawIOBase):
    """A stream that returns at most ``step`` bytes per read and records the largest read asked
    for: short reads at every boundary, and a check that nothing asks for a claimed length."""

    def __init__(self, data: bytes, step: int = 7):
        self.data, self.at, self.step, self.largest = data, 0, step, 0

    def readable(self):
        return True

    def read(self, n=-1):
        self.largest = max(self.largest, n)
        n = self.step if n is None or n < 0 else min(n, self.step)
        out = self.data[self.at:self.at + n]
        self.at += len(out)
        return out
