"""The paragraph filter and the furniture rules in every script: prose kept, menus, buttons and
notices dropped, each with its reason; English lines judged as they always were."""

from __future__ import annotations

import pytest
from scripts import SAMPLES

from wikisum.core.boilerplate import boilerplate_reason
from wikisum.core.paragraphs import has_sentence_end, paragraph_drop_reason

# One line of prose each, as a WET conversion gives it (a line of the page's visible text).
PROSE = {
    "ar": "هل تعلم أن القاهرة هي أكبر مدينة في أفريقيا والعالم العربي؟",
    "ar_stop": "القاهرة هي عاصمة مصر وأكبر مدنها، وتقع على ضفاف نهر النيل في شمال البلاد.",
    "fa": "تهران پایتخت ایران و بزرگ‌ترین شهر این کشور است.",
    "ur": "لاہور پاکستان کا دوسرا سب سے بڑا شہر ہے۔",
    "th": "กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย เมืองนี้ตั้งอยู่ริมแม่น้ำเจ้าพระยา",
    "lo": "ວຽງຈັນເປັນນະຄອນຫຼວງຂອງລາວ ເມືອງນີ້ຕັ້ງຢູ່ແຄມແມ່ນ້ຳຂອງ",
    "zh": "北京是中华人民共和国的首都，也是全国的政治和文化中心。",
    "zh_run_on": "北京是中华人民共和国的首都。这座城市有三千多年的历史",
    "ja": "東京都は日本の首都である。関東地方の南部に位置する。",
    "hi": "दिल्ली भारत की राजधानी है। यह शहर यमुना नदी के किनारे बसा है।",
    "ru": "Москва — столица России. Город стоит на реке Москве.",
    "hy": "Երևանը Հայաստանի մայրաքաղաքն է։ Քաղաքը գտնվում է Հրազդան գետի ափին։",
    "am": "አዲስ አበባ የኢትዮጵያ ዋና ከተማ ናት። ከተማዋ በተራሮች የተከበበች ናት።",
    "my": "ရန်ကုန်သည် မြန်မာနိုင်ငံ၏ အကြီးဆုံးမြို့ ဖြစ်သည်။ မြို့သည် မြစ်ကမ်းပေါ်တွင် တည်ရှိသည်။",
}

# Furniture, and the reason it is dropped for in main text (by what it says).
FURNITURE = [
    ("Читайте также: Путин встретился с премьер-министром Индии", "read_more"),
    ("Поделиться ВКонтакте Одноклассники Telegram", "share"),
    ("Мы используем файлы cookie, чтобы сайт работал лучше. Продолжая пользоваться сайтом, "
     "вы соглашаетесь с этим.", "cookie"),
    ("© 2024 ООО «Новости». Все права защищены.", "byline"),
    ("Главная", "navigation"),
    ("Главная » Новости » Политика", "navigation"),
    ("Войти", "call_to_action"),
    ("Читайте також: Зеленський зустрівся з прем'єр-міністром", "read_more"),
    ("関連記事", "read_more"),
    ("当サイトではCookieを使用しています。サイトを利用することで同意したものとみなします。",
     "cookie"),
    ("トップへ戻る", "navigation"),
    ("ホーム > ニュース > 国内", "navigation"),
    ("分享到：微信 微博 QQ空间", "share"),
    ("相关文章：北京市举行新闻发布会", "read_more"),
    ("返回顶部", "navigation"),
    ("版权所有 © 2024 新华网", "byline"),
    ("作者：张三", "byline"),
    ("首页 | 新闻 | 体育", "navigation"),
    ("اقرأ أيضا: الرئيس يلتقي وزير الخارجية", "read_more"),
    ("الرئيسية", "navigation"),
    ("جميع الحقوق محفوظة © 2024", "byline"),
    ("نستخدم ملفات تعريف الارتباط لتحسين تجربتك على موقعنا.", "cookie"),
    ("تابعونا على", "call_to_action"),
    ("बहुत ज़्यादा", None),  # two words of Hindi: a heading, kept
    ("यह भी पढ़ें: दिल्ली में भारी बारिश", "read_more"),
    ("मुख पृष्ठ", "navigation"),
    ("बीबीसी हिंदी | होम | भारत | विदेश", "navigation"),
    ("หน้าแรก", "navigation"),
    ("อ่านต่อ", "read_more"),
    ("관련기사", "read_more"),
    ("더 보기", "read_more"),
    ("Xem thêm: Hà Nội mưa lớn", "read_more"),
    ("Chia sẻ Facebook Zalo", "share"),
    ("بیشتر بخوانید: ایران", "read_more"),
    ("Baca juga: Jokowi resmikan jalan tol", "read_more"),
]


@pytest.mark.parametrize("key", sorted(PROSE))
def test_prose_of_every_script_is_kept_as_plain_text(key):
    assert paragraph_drop_reason(PROSE[key], main_text=False) is None
    assert paragraph_drop_reason(PROSE[key]) is None


@pytest.mark.parametrize("lang,first,second", SAMPLES, ids=[s[0] for s in SAMPLES])
def test_two_sentences_of_each_tested_script_are_a_kept_line(lang, first, second):
    line = f"{first} {second}"
    assert has_sentence_end(line), line
    assert paragraph_drop_reason(line, main_text=False) is None


@pytest.mark.parametrize("line,reason", FURNITURE, ids=[f[0][:24] for f in FURNITURE])
def test_furniture_in_other_languages_is_dropped_with_its_reason(line, reason):
    assert boilerplate_reason(line) == reason
    assert paragraph_drop_reason(line) == reason


@pytest.mark.parametrize("line", [
    "หน้าแรก ข่าว กีฬา บันเทิง ติดต่อเรา",  # Thai menu: one to two words between spaces
    "首页 新闻 体育 娱乐 财经 科技 汽车 房产 教育 旅游 健康 时尚 视频 图片 论坛 博客",
    "Главная Новости Спорт Культура Контакты",
    "ニュース",
    "الرئيسية أخبار رياضة",
])
def test_menus_without_sentences_are_dropped_from_plain_text(line):
    assert paragraph_drop_reason(line, main_text=False) in ("no_sentence", "too_few_words",
                                                             "navigation")


def test_a_run_of_thai_words_between_spaces_is_a_sentence_and_a_menu_item_is_not():
    assert has_sentence_end("กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย")
    assert not has_sentence_end("หน้าแรก ข่าว กีฬา บันเทิง ติดต่อเรา")


def test_an_ideographic_stop_ends_a_sentence_after_a_letter_not_before_one_or_after_a_digit():
    assert has_sentence_end("北京是首都。人口很多")
    assert has_sentence_end("他说「好」。然后走了")
    assert not has_sentence_end("．新浪[引用日期2014-05-19]")
    assert not has_sentence_end("1．新浪 2．网易")


def test_a_caseless_line_is_never_a_title_by_its_capitals():
    # 15 words or more, no sentence end: kept as prose where capitals do not say otherwise
    arabic = ("تقع المدينة على ضفاف نهر النيل وهي من أكبر المدن في القارة الأفريقية "
              "ويعيش فيها ملايين الناس منذ قرون طويلة")
    assert paragraph_drop_reason(arabic, main_text=False) is None
    # the same length in title case is a title, as it always was
    title = " ".join(["The Great River Flows Through The Old City"] * 2)
    assert paragraph_drop_reason(title, main_text=False) == "no_sentence"


@pytest.mark.parametrize("line,main_text,reason", [
    ("The river flows through the old city.", False, None),
    ("Home News Sport Culture Contact Us", False, "no_sentence"),
    ("Home | News | Sport", True, "navigation"),
    ("Read more", True, "read_more"),
    ("Share on Facebook", True, "share"),
    ("We use cookies to improve your experience on our site.", True, "cookie"),
    ("Bodmin is a town in Cornwall, England, United Kingdom", False, "no_sentence"),
    ("It was 3.5 km long and ran past example.com headquarters", False, "no_sentence"),
    ("Weiterlesen", True, "read_more"),
    ("Datenschutzerklärung | Impressum", True, "navigation"),
])
def test_lines_in_latin_languages_are_judged_as_before(line, main_text, reason):
    assert paragraph_drop_reason(line, main_text=main_text) == reason
