"""The docs hold together: every relative Markdown link names a file that exists and, with
``#anchor``, a heading of that file (GitHub's slugs); README.md stays a landing page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README_MAX_LINES = 300


def markdown_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "CONTRIBUTING.md"]
    files += sorted((ROOT / "docs").glob("*.md"))
    files += [ROOT / "experiments" / "README.md"]
    files += sorted((ROOT / "experiments").glob("*/README.md"))
    return files


FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
# [text](target) and ![alt](target); the text may hold a code span with brackets in it
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: the rendered text lower-cased, punctuation other than
    ``-`` and ``_`` removed, each space a ``-``."""
    text = CODE_SPAN.sub(lambda m: m.group(2), heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link's text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading's anchor in ``path``; a repeated one gets ``-1``, ``-2``, ... as on GitHub."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for line in prose_lines(path.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(path: Path) -> list[str]:
    """The link targets in ``path``'s prose (code spans and fenced blocks left out)."""
    targets = []
    for line in prose_lines(path.read_text(encoding="utf-8")):
        line = CODE_SPAN.sub("", line)
        targets += LINK.findall(line)
    return targets


def broken_links(path: Path) -> list[str]:
    broken = []
    for target in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # https:, mailto:, ...
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            broken.append(f"{target}: no file {dest}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.name}")
    return broken


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(path):
    assert path.is_file(), f"{path.relative_to(ROOT)} is missing"
    assert broken_links(path) == []


def test_the_readme_is_a_landing_page():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


def test_the_check_sees_what_github_renders(tmp_path):
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Other\n\n## `wikisum crawl --urls FILE --out DIR`\n")
    page.write_text("# Page: the *one* page\n\n## Notes\n\n## Notes\n\n```\n# not a heading\n"
                    "[not a link](missing.md)\n```\n\n"
                    "[a](other.md#wikisum-crawl---urls-file---out-dir) [b](#notes-1) "
                    "`[c](missing.md)` [d](https://example.org/x#y) ![e](other.md)\n"
                    "[f](missing.md) [g](#not-here) [h](other.md#other)\n")
    assert anchors(page) == {"page-the-one-page", "notes", "notes-1"}
    assert [b.split(":")[0] for b in broken_links(page)] == ["missing.md", "#not-here"]
