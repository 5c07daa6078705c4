"""Wikitext of any language: citations in local templates, URLs ending at any whitespace,
local redirect words, the dump's namespace names, disambiguation pages."""

from __future__ import annotations

import pytest

from wikisum.pipeline.dumps import SiteInfo
from wikisum.pipeline.wikitext import parse_article


def _urls(text: str, site: SiteInfo | None = None) -> list[str]:
    return list(parse_article("T", text, "xx", site).citation_urls)


# -- citations in templates of any name -------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    # Russian: {{Статья}}, {{Cite web}} with Russian values
    ("Москва — столица.<ref>{{Статья |автор=Иванов |заглавие=О Москве "
     "|ссылка=https://ru.example/moskva |архив=https://web.archive.org/web/2020/"
     "https://ru.example/moskva}}</ref>", ["https://ru.example/moskva"]),
    # Arabic: {{استشهاد ويب}} with its localised parameter names
    ("القاهرة عاصمة مصر.<ref>{{استشهاد ويب|مسار=https://ar.example/cairo|عنوان=القاهرة"
     "|مسار أرشيف=https://archive.today/2020/https://ar.example/cairo}}</ref>",
     ["https://ar.example/cairo"]),
    # Chinese: {{網頁引用}} with an archive copy under a Chinese name
    ("北京是中国的首都。<ref>{{網頁引用|網址=https://zh.example/beijing|標題=北京"
     "|存檔網址=https://zh.example/archive/beijing}}</ref>", ["https://zh.example/beijing"]),
    # Hindi: {{वेब सन्दर्भ}}; a positional URL of any template
    ("भारत एक देश है।<ref>{{वेब सन्दर्भ|url=https://hi.example/bharat|title=भारत}}</ref>"
     "<ref>{{URL|https://hi.example/url}}</ref>",
     ["https://hi.example/bharat", "https://hi.example/url"]),
    # Japanese: {{Citation}} and {{Cite web}} beside {{Webarchive}}, whose URL is an archive copy
    ("東京は首都である。<ref>{{Citation|url=https://ja.example/tokyo|title=東京}}</ref>"
     "<ref>{{Cite web|url=https://ja.example/b}} {{Webarchive|url=https://web.archive.org/web/"
     "2019/https://ja.example/b|date=2019}}</ref>",
     ["https://ja.example/tokyo", "https://ja.example/b"]),
])
def test_a_url_parameter_of_any_template_in_a_ref_is_a_citation(text, expected):
    assert _urls(text) == expected


def test_a_template_outside_a_ref_cites_nothing():
    assert _urls("{{Інфобокс|сайт=https://uk.example/site}} Київ — столиця України.") == []


def test_archive_hosts_are_left_out_whatever_the_parameter_name():
    text = ("Text.<ref>{{Источник|ссылка=https://ru.example/a"
            "|копия=http://www.webcitation.org/abc}}</ref>")
    assert _urls(text) == ["https://ru.example/a"]


# -- a URL ends at whitespace of any kind ---------------------------------------------------

@pytest.mark.parametrize(("space", "after"), [
    ("\u3000", "「経済成長で少数言語が失われる、研究」AFPBB\u30002014年09月03日"),  # ideographic
    ("\u00a0", "лекція"),  # no-break space
    ("\u2003", "مقالة"),  # em space
    ("\u202f", "लेख"),  # narrow no-break space
    (" ", "文章"),
])
def test_a_bare_url_in_a_ref_ends_at_any_whitespace(space, after):
    text = f"本文。<ref>https://www.afpbb.com/articles/-/3024935{space}{after}</ref>"
    assert _urls(text) == ["https://www.afpbb.com/articles/-/3024935"]


def test_a_url_parameter_ends_at_whitespace_as_mediawiki_links_it():
    text = ("Текст.<ref>{{Cite web|title=Журнал|url=https://www.perets.org.ua/ "
            "Журнал_перець_1970_23/}}</ref>")
    assert _urls(text) == ["https://www.perets.org.ua/"]
    assert all(not any(ch.isspace() for ch in u) for u in _urls(text))


def test_a_bare_url_shown_in_prose_keeps_the_text_after_it():
    lead = parse_article("T", "詳細は https://x.jp/a\u3000を参照。", "ja").lead
    assert "を参照" in lead


# -- redirects in every language -------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "#REDIRECT [[Target]]", "#redirect:[[Target]]", "#転送 [[東京]]",
    "#перенаправлення [[Київ]]", "#ПЕРЕНАПРАВЛЕНИЕ [[Москва]]", "#đổi [[Hà Nội]]",
    "#تحويل [[القاهرة]]", "#重定向 [[北京]]", "#अनुप्रेषित [[भारत]]",
    "  #WEITERLEITUNG [[Köln]]\n\n{{Weiterleitungshinweis}}",
])
def test_a_redirect_is_recognised_by_its_local_word(text):
    article = parse_article("T", text, "xx")
    assert article.is_redirect
    assert article.lead == "" and article.citation_urls == ()


@pytest.mark.parametrize("text", [
    "# [[Tokyo]] is a list item.\n# another", "#1 [[X]] first", "Text #転送 [[東京]]",
    "# The [[Beatles]]\n# The [[Rolling Stones]]", "# Москва [[Россия]]",
    "#[[X]]", "## [[X]]",
])
def test_a_list_item_is_not_a_redirect(text):
    assert not parse_article("T", text, "xx").is_redirect


# -- the dump's namespace names ----------------------------------------------------------------

SITES = {
    "uk": SiteInfo("ukwiki", ((6, "Файл"), (14, "Категорія"), (-2, "Медіа"))),
    "ja": SiteInfo("jawiki", ((6, "ファイル"), (14, "Category"), (-2, "メディア"))),
    "vi": SiteInfo("viwiki", ((6, "Tập tin"), (14, "Thể loại"))),
    "ar": SiteInfo("arwiki", ((6, "ملف"), (14, "تصنيف"))),
    "ru": SiteInfo("ruwiki", ((6, "Файл"), (14, "Категория"))),
    "zh": SiteInfo("zhwiki", ((6, "File"), (14, "Category"))),
    "hi": SiteInfo("hiwiki", ((6, "चित्र"), (14, "श्रेणी"))),
}


@pytest.mark.parametrize(("lang", "text", "lead"), [
    ("uk", "[[Файл:Kyiv.jpg|міні|Підпис]]\nКиїв — столиця.\n[[Категорія:Міста України]]",
     "Київ — столиця."),
    ("ja", "[[ファイル:Tokyo.jpg|thumb|説明]]東京は首都である。[[Category:日本の都市]]",
     "東京は首都である。"),
    ("vi", "Hà Nội là thủ đô.[[Thể loại:Thủ đô]][[Thể_loại:Hà Nội]][[Tập tin:X.png]]",
     "Hà Nội là thủ đô."),
    ("ar", "القاهرة عاصمة مصر.[[تصنيف:عواصم]][[ملف:Cairo.jpg|تصغير|القاهرة]]",
     "القاهرة عاصمة مصر."),
    ("ru", "Москва — столица.[[Категория:Столицы]][[Файл:Moscow.jpg]]", "Москва — столица."),
    ("zh", "北京是中国的首都。[[Category:首都]][[File:Beijing.jpg|缩略图|北京]]",
     "北京是中国的首都。"),
    ("hi", "भारत एक देश है।[[श्रेणी:देश]][[चित्र:India.png|अंगूठाकार|भारत]]", "भारत एक देश है।"),
])
def test_file_and_category_links_in_the_dumps_namespaces_are_not_text(lang, text, lead):
    assert parse_article("T", text, lang, SITES[lang]).lead == lead


def test_a_local_category_name_is_known_only_from_the_siteinfo():
    text = "Hà Nội là thủ đô. [[Thể loại:Thủ đô]]"
    assert "Thủ đô" not in parse_article("T", text, "vi", SITES["vi"]).lead.split("thủ đô.")[1]
    assert "Thể loại" not in parse_article("T", text, "vi", SITES["vi"]).lead
    assert "Thủ đô" in parse_article("T", text, "vi").lead  # without it: an ordinary link


def test_a_link_to_a_category_page_with_a_leading_colon_stays_visible():
    text = "Див. [[:Категорія:Міста України]] тут."
    assert parse_article("T", text, "uk", SITES["uk"]).lead == "Див. Категорія:Міста України тут."


# -- disambiguation pages ----------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "'''X''' может означать:\n* [[X (город)]]\n__DISAMBIG__",
    "'''タイ'''\n* [[タイ王国]]\n{{Aimai}}",
    "'''Ядро''' може означати:\n* [[Ядро атома]]\n{{Неоднозначність}}",
    "'''Hoa''' có thể là:\n* [[Hoa (thực vật)]]\n{{Trang định hướng}}",
    "'''北京'''可以指：\n* [[北京市]]\n{{消歧义}}",
    "'''القاهرة''' قد تشير إلى:\n* [[القاهرة (مدينة)]]\n{{توضيح}}",
])
def test_disambiguation_pages_are_recognised(text):
    assert parse_article("T", text, "xx").is_disambiguation


def test_a_disambiguation_needed_tag_is_not_a_disambiguation_page():
    text = "'''東京'''は日本の首都である{{要曖昧さ回避|date=2020年1月}}。"
    assert not parse_article("T", text, "ja").is_disambiguation
