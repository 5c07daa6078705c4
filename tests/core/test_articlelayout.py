"""Whole-article targets: sections marked by pieces the vocabulary knows, split back exactly."""

import pytest

from wikisum.core import vocab
from wikisum.core.articlelayout import (
    PIECES,
    ArticleSection,
    MissingPieces,
    article_sections,
    decode_article,
    encode_article,
    markdown,
    parse_t2t_text,
    t2t_text,
)

TITLES = ["Early life", "1990s: career (part 2)", "Works & awards, 2001–2010", "Ранние годы",
          "東京の歴史", "التاريخ", "Section == with equals =="]
TEXTS = ["He was born in 1950 in a small town.", "Она родилась в Москве в 1961 году.",
         "東京は日本の首都である。", "تقع المدينة على النهر.", "Scores rose to 3.14 == pi.",
         "A text with <t>, <sec> and <eoh> written in it."]
LEAD = "  The lead,  in   1 paragraph. "


@pytest.fixture(scope="module")
def sp(tmp_path_factory):
    path = tmp_path_factory.mktemp("vocab") / "vocab.model"
    corpus = (TITLES + TEXTS + [LEAD, "See also"]) * 40 + \
        [f"filler words number {i} and more" for i in range(200)]
    vocab.train_vocab(corpus, str(path), size=400)  # appends the markers as control pieces
    model, added = vocab.with_pieces(path.read_bytes(), PIECES, control=True)
    assert added == []
    sp = vocab.load(str(path))
    assert all(sp.is_control(sp.piece_to_id(p)) for p in PIECES)
    assert [sp.id_to_piece(i) for i in range(sp.get_piece_size() - 2, sp.get_piece_size())] == \
        list(PIECES)  # last: every trained id as it was
    return sp


def _article():
    sections = [{"title": t, "level": 2, "text": TEXTS[k % len(TEXTS)]}
                for k, t in enumerate(TITLES)]
    sections.append({"title": "See also", "level": 2, "text": ""})  # a heading without text
    return article_sections(LEAD, sections)


def test_an_article_round_trips_through_the_ids(sp):
    article = _article()
    ids, boundaries = encode_article(article, sp)
    back = decode_article(ids, sp)
    # what the vocabulary's own round trip gives each title and text (NFKC etc.)
    expected = [ArticleSection(sp.decode(sp.encode(s.title)), sp.decode(sp.encode(s.text)))
                for s in article]
    assert back == expected
    assert [s.title for s in back[1:]] == TITLES + ["See also"]
    assert back[0] == ArticleSection("", "The lead, in 1 paragraph.")
    # boundaries: cumulative, the first ends the lead, the last the article
    assert boundaries[0] == len(sp.encode(article[0].text)) and boundaries[-1] == len(ids)
    assert boundaries == sorted(boundaries) and len(boundaries) == len(article)


def test_markers_written_in_a_text_are_text(sp):
    # <t> and <sep> are user-defined pieces (a text holding them yields them); the section
    # markers are control pieces, which no text yields, so they split only where placed
    article = [ArticleSection("", TEXTS[5]), ArticleSection("<sec> T <eoh>", TEXTS[5])]
    ids, boundaries = encode_article(article, sp)
    sec, end = (sp.piece_to_id(p) for p in PIECES)
    assert ids.count(sec) == 1 and ids.count(end) == 1
    back = decode_article(ids, sp)
    assert [s.text for s in back] == [sp.decode(sp.encode(TEXTS[5]))] * 2
    assert len(back) == 2 and boundaries[-1] == len(ids)


def test_a_model_output_without_title_ends_is_still_read(sp):
    sec, end = (sp.piece_to_id(p) for p in PIECES)
    ids = sp.encode("lead text") + [sec] + sp.encode("History") + [sec, end] + sp.encode("x")
    back = decode_article(ids, sp)
    assert back == [ArticleSection("", "lead text"), ArticleSection("History", ""),
                    ArticleSection("", "x")]
    assert decode_article([], sp) == [ArticleSection("", "")]


def test_a_vocabulary_without_the_section_pieces_is_refused_and_they_can_be_added(tmp_path):
    import sentencepiece as spm

    # a vocabulary of an older wikisum: no markers
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter([f"some words {i}" for i in range(100)]),
        model_prefix=str(tmp_path / "old"), vocab_size=40, hard_vocab_limit=False,
        user_defined_symbols=[vocab.TITLE_SEP, vocab.SEP], minloglevel=2)
    old = (tmp_path / "old.model").read_bytes()
    with pytest.raises(MissingPieces, match="no control piece <sec>.*with_pieces"):
        encode_article([ArticleSection("", "some words")],
                       spm.SentencePieceProcessor(model_proto=old))
    model, added = vocab.with_pieces(old, PIECES, control=True)
    assert added == list(PIECES)
    sp = spm.SentencePieceProcessor(model_proto=model)
    before = spm.SentencePieceProcessor(model_proto=old)
    assert sp.encode("some words 7") == before.encode("some words 7")  # no id moved
    ids, _ = encode_article([ArticleSection("", "some words"), ArticleSection("s", "words")], sp)
    assert decode_article(ids, sp)[1] == ArticleSection("s", "words")


def test_tensor2tensors_text_layout_and_back():
    article = [ArticleSection("", "The lead."), ArticleSection("History", "It began."),
               ArticleSection("See also", ""), ArticleSection("Works (1990–2000)", "Many.")]
    text = t2t_text(article)
    assert text == ("The lead. == History == It began. == See also == "
                    "== Works (1990–2000) == Many.")
    assert parse_t2t_text(text) == article
    assert parse_t2t_text("no sections") == [ArticleSection("", "no sections")]


def test_markdown_keeps_every_heading():
    article = [ArticleSection("", "Lead."), ArticleSection("A", "a."), ArticleSection("B", "")]
    assert markdown("Title", article) == "# Title\n\nLead.\n\n## A\n\na.\n\n## B\n"
