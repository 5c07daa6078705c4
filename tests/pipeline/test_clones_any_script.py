"""The clone filter in scripts written without spaces: a mirror that only removes the spaces is
still a clone, and another page in the same script is not."""

import pytest

from wikisum.pipeline.clones import DEFAULT_CLONE_THRESHOLD, clone_recall

LEADS = {
    "zh": ("北京市，简称京，是中华人民共和国的首都，也是全国的政治、文化、国际交往和科技创新中心。"
           "北京 位于 华北平原 北部，东与天津市相连，其余均与河北省相邻。"),
    "ja": ("東京都は、日本の首都であり、関東地方に位置する都である。 都庁所在地は新宿区。"
           "人口は約1400万人で、日本の都道府県の中で最も多い。"),
    "th": ("กรุงเทพมหานคร เป็นเมืองหลวงและนครที่มีประชากรมากที่สุดของประเทศไทย "
           "ตั้งอยู่บนที่ราบลุ่มแม่น้ำเจ้าพระยา"),
}
OTHER = {
    "zh": "上海市位于长江入海口，是重要的港口城市和金融中心，人口超过两千万。",
    "ja": "大阪府は近畿地方に位置し、商業の中心地として古くから栄えてきた。",
    "th": "เชียงใหม่เป็นจังหวัดทางภาคเหนือของประเทศไทย มีภูเขาและวัดเก่าแก่มากมาย",
}


@pytest.mark.parametrize("lang", sorted(LEADS))
def test_a_mirror_that_only_removes_spaces_is_a_clone(lang):
    lead = LEADS[lang]
    for measure in ("unigram", "content"):
        assert clone_recall(lead, lead.replace(" ", ""), measure, lang) > 0.9


@pytest.mark.parametrize("lang", sorted(LEADS))
def test_another_page_in_the_same_script_is_not_a_clone(lang):
    for measure in ("unigram", "content"):
        assert clone_recall(LEADS[lang], OTHER[lang], measure, lang) < DEFAULT_CLONE_THRESHOLD
