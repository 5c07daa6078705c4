"""The Markdown page of predicted articles in the records' language: a record in another
language than English has its title and cells in an element carrying its lang and direction;
English records are written as they always were."""

from wikisum.generation.articleview import content_attrs, markdown_page, record_markdown

ARABIC = {"id": "ar-0", "title": "مصر", "lang": "ar",
          "prediction": "مصر دولة في شمال أفريقيا (عاصمتها القاهرة).",
          "reference": "مصر دولة عربية، ويبلغ عدد سكانها 104 ملايين (2020).",
          "prediction_sections": [{"title": "", "text": "مصر دولة في شمال أفريقيا."},
                                  {"title": "التاريخ", "text": "تاريخ طويل."}],
          "reference_sections": [{"title": "", "text": "مصر دولة عربية."},
                                 {"title": "التاريخ", "text": "حضارة قديمة."}]}


def test_a_right_to_left_record_is_marked_right_to_left():
    page = record_markdown(ARABIC)
    assert page.startswith('## <span lang="ar" dir="rtl">مصر</span>\n')
    assert '| <div lang="ar" dir="rtl">مصر دولة في شمال أفريقيا.</div> | ' \
           '<div lang="ar" dir="rtl">مصر دولة عربية.</div> |' in page
    assert '<div lang="ar" dir="rtl">**التاريخ**<br>تاريخ طويل.</div>' in page
    assert "| Predicted | Reference |" in page  # the interface stays as it is


def test_languages_and_records_without_one():
    assert content_attrs({"lang": "ja", "prediction": "東京", "reference": "東京都"}) == \
        'lang="ja" dir="ltr"'
    # no language, Hebrew text: the direction alone
    assert content_attrs({"prediction": "ירושלים", "reference": "ירושלים היא עיר"}) == \
        'dir="rtl"'
    assert content_attrs({"lang": "en", "prediction": "x", "reference": "y"}) == ""
    assert content_attrs({"prediction": "Egypt", "reference": "Egypt is a country."}) == ""


def test_an_english_page_is_unchanged():
    record = {"id": 1, "title": "Egypt", "prediction": "Egypt is | a country.",
              "reference": "Egypt is a country."}
    assert markdown_page([record]) == ("## Egypt\n\n| Predicted | Reference |\n| --- | --- |\n"
                                       "| Egypt is \\| a country. | Egypt is a country. |\n")
