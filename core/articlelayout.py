"""Whole Wikipedia articles as model targets (Liu et al. 2018, section 6), and back.

An article target is its lead, then each later section as a heading and its text, in the
order tensor2tensor's WikiSum writes them (``_encode_wiki_sections`` in
tensor2tensor/data_generators/wikisum/wikisum.py): the lead has no heading, and
``boundaries`` holds the token count after each section, cumulative (its
``section_boundaries``; ``boundaries[0]`` ends the lead).

tensor2tensor writes a heading as the text `` == Title == `` and encodes it with the rest, so
a decoded article is split back only by finding ``==`` in the text, which a section's own text
may hold as well. Here a heading is ``<sec>``, the title's pieces, then ``<eoh>``
(:data:`PIECES`): control pieces of the vocabulary, which sentencepiece never produces from
text (unlike its user-defined pieces, ``<t>`` and ``<sep>``, which a text holding them
yields), so the ids split back into exactly the sections they were made of whatever the
titles and texts hold. :func:`t2t_text` writes an article in tensor2tensor's text layout, for
reading and for its tools.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

SECTION = "<sec>"  # starts a section after the lead; its title follows
HEADING_END = "<eoh>"  # ends a section's title
PIECES = (SECTION, HEADING_END)  # control pieces: wikisum.core.vocab.with_pieces(control=True)


@dataclass(frozen=True)
class ArticleSection:
    title: str  # "" for the lead
    text: str


@dataclass(frozen=True)
class Article:
    """A whole article: its title and its sections, the lead first (title "")."""

    title: str
    sections: tuple[ArticleSection, ...]

    @property
    def lead(self) -> str:
        return self.sections[0].text if self.sections else ""

    @property
    def headings(self) -> list[str]:
        """The titles of the sections after the lead."""
        return [s.title for s in self.sections[1:]]

    @property
    def text(self) -> str:
        """The article in tensor2tensor's text layout (:func:`t2t_text`)."""
        return t2t_text(self.sections)

    def markdown(self) -> str:
        return markdown(self.title, self.sections)

    def __str__(self) -> str:
        return self.text


def article_sections(lead: str, sections: Iterable[dict]) -> list[ArticleSection]:
    """An ingested article (its ``lead`` and ``sections`` rows: title, level, text) as the lead
    and its later sections. A section without text keeps its heading (a parent section whose
    text is all in its subsections); levels are not kept, as tensor2tensor keeps none."""
    out = [ArticleSection("", " ".join(lead.split()))]
    for section in sections:
        out.append(ArticleSection(" ".join(section["title"].split()),
                                  " ".join(section["text"].split())))
    return out


class MissingPieces(ValueError):
    """The vocabulary lacks the pieces that mark sections."""


def section_ids(sp) -> tuple[int, int]:
    """The ids of ``<sec>`` and ``<eoh>`` in ``sp``.

    Raises:
        MissingPieces: one of them is not a control piece of ``sp`` (a vocabulary made
            before whole articles: ``wikisum.core.vocab.with_pieces(model, PIECES,
            control=True)`` adds them, every other id kept).
    """
    ids = []
    for piece in PIECES:
        i = sp.piece_to_id(piece)
        if i == sp.unk_id() or sp.id_to_piece(i) != piece or not sp.is_control(i):
            raise MissingPieces(f"the vocabulary has no control piece {piece}, which marks a "
                                "section of an article target: add it with "
                                "wikisum.core.vocab.with_pieces(model, PIECES, control=True) "
                                "(every other id kept)")
        ids.append(i)
    return ids[0], ids[1]


def encode_article(sections: Sequence[ArticleSection], sp) -> tuple[list[int], list[int]]:
    """The ids of an article (the lead first, as :func:`article_sections` gives it) and the
    token count after each section, cumulative; no ``</s>``."""
    sec, end_title = section_ids(sp)
    ids: list[int] = []
    boundaries: list[int] = []
    for k, section in enumerate(sections):
        if k:
            ids += [sec, *sp.encode(section.title), end_title]
        ids += sp.encode(section.text)
        boundaries.append(len(ids))
    return ids, boundaries


def decode_article(ids: Sequence[int], sp) -> list[ArticleSection]:
    """The sections of an article's ids, as :func:`encode_article` made them or as a model
    wrote them: the ids before the first ``<sec>`` are the lead; each ``<sec>`` starts a
    section whose title runs to the next ``<eoh>`` (to the section's end when a model wrote
    none: the whole section is then its title, with no text)."""
    sec, end_title = section_ids(sp)
    ids = [int(i) for i in ids]
    starts = [k for k, i in enumerate(ids) if i == sec]
    pieces = [ids[: starts[0] if starts else len(ids)]]
    for a, b in zip(starts, [*starts[1:], len(ids)], strict=False):
        pieces.append(ids[a + 1: b])
    out = [ArticleSection("", sp.decode([i for i in pieces[0] if i != end_title]).strip())]
    for piece in pieces[1:]:
        cut = piece.index(end_title) if end_title in piece else len(piece)
        title = sp.decode(piece[:cut]).strip()
        text = sp.decode([i for i in piece[cut + 1:] if i != end_title]).strip()
        out.append(ArticleSection(title, text))
    return out


def t2t_text(sections: Sequence[ArticleSection]) -> str:
    """An article as tensor2tensor's WikiSum targets read as text: the lead, then
    `` == Title == `` and the text of each later section."""
    parts = [sections[0].text] if sections else []
    for section in sections[1:]:
        parts.append(f"== {section.title} ==")
        if section.text:
            parts.append(section.text)
    return " ".join(p for p in parts if p)


_HEADING = re.compile(r"(?:^|\s)== (.+?) ==(?=\s|$)")


def parse_t2t_text(text: str) -> list[ArticleSection]:
    """:func:`t2t_text` read back: the sections of an article in tensor2tensor's text layout.
    Exact for titles that hold no `` == `` (the layout cannot tell those apart)."""
    marks = list(_HEADING.finditer(text))
    out = [ArticleSection("", text[: marks[0].start() if marks else len(text)].strip())]
    for m, nxt in zip(marks, [*marks[1:], None], strict=False):
        end = nxt.start() if nxt else len(text)
        out.append(ArticleSection(m.group(1).strip(), text[m.end(): end].strip()))
    return out


def markdown(title: str, sections: Sequence[ArticleSection]) -> str:
    """An article as Markdown: its title, the lead, each section under a ``##`` heading."""
    lines = [f"# {title}", ""] if title else []
    if sections and sections[0].text:
        lines += [sections[0].text, ""]
    for section in sections[1:]:
        lines += [f"## {section.title}", ""]
        if section.text:
            lines += [section.text, ""]
    return "\n".join(lines).rstrip() + "\n"
