"""Texts in Arabic, Hebrew, Japanese and English for the tests of the pages the tool writes
(the report, the compare and human-evaluation pages), with numbers and brackets inside them:
where those land is what a page's direction decides. Imported by its bare name
(``rtl_texts``; ``tests/`` is on the path as the folder of the root conftest)."""

from __future__ import annotations

# lang -> (title, reference lead, prediction A, prediction B)
TEXTS = {
    "ar": ("مصر",
           "مصر (رسمياً: جمهورية مصر العربية) دولة عربية تقع في شمال أفريقيا، ويبلغ عدد سكانها "
           "نحو 104 ملايين نسمة (2020). عاصمتها القاهرة، وأكبر مدنها.",
           "مصر دولة في شمال أفريقيا، عاصمتها القاهرة، ويبلغ عدد سكانها 104 ملايين.",
           "جمهورية مصر العربية دولة عربية (عاصمتها القاهرة) في أفريقيا."),
    "he": ("ירושלים",
           "ירושלים היא עיר הבירה של ישראל והעיר הגדולה ביותר בה, עם כ-981,000 תושבים (2021). "
           "העיר שוכנת בהרי יהודה.",
           "ירושלים היא עיר הבירה של ישראל, עם 981,000 תושבים.",
           "ירושלים (בערבית: القدس) שוכנת בהרי יהודה."),
    "ja": ("東京都",
           "東京都は、日本の首都であり、関東地方に位置する都である。人口は約1,400万人（2023年）で、"
           "日本最大の都市である。",
           "東京都は日本の首都であり、人口は約1,400万人である。",
           "東京は関東地方に位置する日本最大の都市（首都）である。"),
    "en": ("Egypt",
           "Egypt (officially the Arab Republic of Egypt) is a country in North Africa with "
           "about 104 million people (2020). Its capital is Cairo.",
           "Egypt is a country in North Africa; its capital is Cairo.",
           "The Arab Republic of Egypt (capital: Cairo) is in Africa."),
}


def records(lang: str, side: int, count: int = 2, with_lang: bool = True) -> list[dict]:
    """Predictions records of ``count`` examples in ``lang``: side 0 is system A, 1 system B.
    ``with_lang=False`` leaves out the records' ``lang`` (as older predictions files do)."""
    title, lead, a, b = TEXTS[lang]
    out = []
    for i in range(count):
        record = {"id": f"{lang}-{i}", "title": title, "reference": lead,
                  "prediction": (a, b)[side] if i % 2 == 0 else (b, a)[side]}
        if with_lang:
            record["lang"] = lang
        out.append(record)
    return out
