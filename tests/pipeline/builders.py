"""Small inputs the pipeline tests build: a tiny dump, references, headline pairs (imported as
``builders``)."""

from __future__ import annotations

import random
from pathlib import Path

from wikisum.core.records import Reference
from wikisum.workflows import cli

DUMP = """<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" version="0.11">
  <page><title>Alpha</title><ns>0</ns><id>1</id>
    <revision><id>10</id><text>'''Alpha''' is a letter.</text></revision></page>
  <page><title>Beta</title><ns>0</ns><id>2</id><redirect title="Alpha" />
    <revision><id>11</id><text>#REDIRECT [[Alpha]]</text></revision></page>
  <page><title>Talk:Alpha</title><ns>1</ns><id>3</id>
    <revision><id>12</id><text>chat</text></revision></page>
</mediawiki>
"""


def reference(url, date, container="warc", source_file="f", offset=0, text="p") -> Reference:
    return Reference(url, source_file, offset, f"<{date}{offset}>", date, container, (text,))


WORDS = ("the minister said on monday that talks with rebels would resume in the capital after "
         "police reported clashes near border towns while shares fell sharply as oil prices "
         "rose and officials warned of new floods").split()


def sentences(n: int, seed: int, low: int, high: int, words: tuple[str, ...] | list[str] = WORDS
              ) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(words) for _ in range(rng.randint(low, high))) for _ in range(n)]


def write_pairs(folder: Path, name: str, sources: list[str], targets: list[str]) -> tuple[str, str]:
    folder.mkdir(parents=True, exist_ok=True)
    source, target = folder / f"{name}.article.txt", folder / f"{name}.title.txt"
    source.write_text("".join(line + "\n" for line in sources))
    target.write_text("".join(line + "\n" for line in targets))
    return str(source), str(target)


def convert(source: str, target: str, split: str, out: Path, *extra: str) -> int:
    return cli.main(["convert-pairs", "--source", source, "--target", target, "--split", split,
                     "--out", str(out), *extra])
