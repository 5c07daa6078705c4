"""Which lines of a page's main text are page furniture rather than the article.

trafilatura already leaves out most of a page's chrome; what reaches the paragraph filter is the
main text plus the furniture that sits inside the article's container: share bars, "read more"
links, bylines and photo credits, cookie and newsletter prompts, tag lists and buttons. Those
lines are recognised here by what they say, never by their length: a short line is as often a
heading, a list item or a caption of the article (measured on real pages,
``bench/extraction.py``), and those are kept. The rules know English, German, French, Spanish,
Italian, Dutch, Polish, Portuguese, Indonesian and Turkish, and the commonest furniture of the
largest Wikipedias written in other scripts or with their own letters: Russian, Ukrainian,
Japanese, Chinese (simplified and traditional), Arabic, Persian, Hindi, Korean, Vietnamese and
Thai (`_OTHER_LABELS` and the patterns after it). A line in another language is judged by the
rules that do not depend on words: menus and breadcrumbs between separators, copyright signs.
Words are counted by `wikisum.core.text.words`, which segments Chinese, Japanese and Thai, so
that a paragraph in those scripts is not one "word" short enough for every rule.

`boilerplate_reason` is a pure function of one line; each reason is counted by the ingest job.
"""

from __future__ import annotations

import itertools
import re

from wikisum.core.text import words

# The reasons, in the order they are tested.
COOKIE = "cookie"
SHARE = "share"
READ_MORE = "read_more"
CALL_TO_ACTION = "call_to_action"
BYLINE = "byline"
NAVIGATION = "navigation"
REASONS = (COOKIE, SHARE, READ_MORE, CALL_TO_ACTION, BYLINE, NAVIGATION)

# Lines longer than these many words are prose whatever they start with: the rules only judge
# what could be a button, a label or a one-line notice.
_MAX_WORDS = {COOKIE: 50, SHARE: 12, READ_MORE: 16, CALL_TO_ACTION: 25, BYLINE: 12,
              NAVIGATION: 12}
_ANY_RULE_WORDS = max(_MAX_WORDS.values())
# Characters past which a line's words are counted only up to _ANY_RULE_WORDS + 1 (a paragraph
# of prose: one findall over all of it cost more than the rules; below, findall is quicker).
_LONG_LINE = 400


def _alternatives(*phrases: str) -> str:
    # Longest first, so that "read more" is tried before "read".
    return "|".join(sorted(phrases, key=len, reverse=True))


# Characters a furniture line is decorated with: arrows, bullets, stars, brackets.
_DECORATION = " \t>»›<«‹*•·|-–—_=~+#:()[]"

_COOKIE_WORD = re.compile(r"\bcookies?\b|\bciasteczk|\bgdpr\b|\bdsgvo\b")
# A notice speaks of the site or to the reader; prose about cookies (a court ruling) does not.
_NOTICE_SUBJECT = re.compile(
    r"\b(?:we|our|you|your|this (?:web)?site|wir|unsere?|diese (?:web)?seite|diese website"
    r"|nous|notre|vous|ce site|usamos|utilizamos|nuestro|este sitio|utilizziamo|questo sito"
    r"|wij|onze|używamy|nasz\w*)\b")
_CONSENT = re.compile(
    r"\b(?:use|uses|using|accept|consent|agree|settings|preferences|privacy|verwende\w*|nutz\w*"
    r"|akzeptier\w*|zustimm\w*|einverstanden|einstellungen|datenschutz\w*|utilis\w*|accept\w*"
    r"|paramètres|utiliza\w*|acepta\w*|configuración|utilizz\w*|accett\w*|gebruik\w*"
    r"|akkoord|używa\w*|zgod\w*|ustawie\w*|usa\w*|aceit\w*)\b")

_SOCIAL = frozenset("""
    facebook twitter x linkedin xing whatsapp pinterest instagram telegram reddit tumblr
    flipboard mastodon bluesky threads messenger youtube tiktok email e mail sms print drucken
    share shares teilen teile tweet tweets pin it on auf per via this artikel article beitrag
    diesen dieser den the link kopieren copy partager compartir condividi delen udostępnij
    compartilhar imprimer imprimir stampa afdrukken drukuj wyślij senden send bagikan
    paylaş chia sẻ partilhar compartilhe vk vkontakte weibo wechat kakaotalk zalo odnoklassniki
""".split())
# A share bar names at least one network or share verb; "on", "it" alone are not a share bar.
_SOCIAL_NAMES = frozenset("""
    facebook twitter linkedin xing whatsapp pinterest instagram telegram reddit tumblr flipboard
    mastodon bluesky messenger share teilen tweet partager compartir condividi delen
    udostępnij compartilhar email bagikan paylaş partilhar compartilhe vk vkontakte weibo
    wechat kakaotalk zalo odnoklassniki
""".split())
_SHARE_START = re.compile(
    r"^(?:" + _alternatives(
        "share this", "share on", "share via", "share article", "share the article",
        "teilen auf", "teilen per", "jetzt teilen", "artikel teilen", "beitrag teilen",
        "seite teilen", "partager sur", "partager cet article", "compartir en",
        "compartir en redes", "condividi su", "delen op", "udostępnij na", "compartilhe no",
        "tweet this", "pin it") + r")\b")

_READ_MORE = re.compile(
    r"^(?:" + _alternatives(
        "read more", "read also", "read next", "read the full", "continue reading",
        "related articles", "related posts", "related stories", "related content", "related",
        "see also", "you may also like", "you might also like", "you may also be interested",
        "recommended for you", "recommended", "more on this", "more from", "more stories",
        "more news", "more articles", "most read", "most popular", "trending",
        "weiterlesen", "mehr lesen", "mehr dazu", "mehr zum thema", "mehr themen", "mehr aus",
        "mehr über", "mehr zu", "mehr news", "lesen sie auch", "lesen sie mehr",
        "lesen sie hier", "lesen sie weiter", "lies auch", "auch interessant",
        "das könnte sie auch interessieren", "das könnte sie interessieren",
        "das könnte dich auch interessieren", "das könnte dich interessieren",
        "ebenfalls interessant", "weitere beiträge", "weitere artikel", "weitere informationen",
        "weitere infos", "weitere themen", "weitere news", "weitere nachrichten",
        "weitere links", "empfohlene beiträge", "empfohlene artikel", "ähnliche beiträge",
        "ähnliche artikel", "verwandte beiträge", "verwandte artikel", "verwandte themen",
        "top-themen", "top themen", "meistgelesen", "meistgelesene artikel", "zum artikel",
        "lire aussi", "à lire aussi", "a lire aussi", "lire la suite", "voir aussi",
        "sur le même sujet", "le puede interesar", "te puede interesar", "lee también",
        "lea también", "leer más", "ver también", "leggi anche", "leggi tutto",
        "continua a leggere", "lees ook", "lees meer", "lees verder", "czytaj też",
        "czytaj także", "czytaj więcej", "czytaj dalej", "zobacz też", "zobacz także",
        "zobacz również", "leia também", "leia mais", "veja também", "saiba mais",
        "auch lesen", "schon gelesen", "zum weiterlesen", "weiterführende links",
        "lea más", "lea también", "puedes ver", "ver más", "también te puede interesar",
        "contenido relacionado", "notas relacionadas", "noticias relacionadas",
        "artículos relacionados", "más sobre", "pour lire la suite", "lire plus",
        "articles similaires", "articoli correlati", "potrebbe interessarti",
        "artigos relacionados", "notícias relacionadas", "gerelateerde artikelen",
        "powiązane artykuły", "polecane", "baca juga", "baca selengkapnya", "selengkapnya",
        "berita terkait", "artikel terkait", "devamını oku", "ilgili haberler",
        "benzer haberler", "xem thêm", "đọc thêm", "đọc tiếp", "tin liên quan",
        "bài viết liên quan", "tin cùng chuyên mục", "leia também", "veja mais"
    ) + r")(?:\s*[:»›>|…]|\.\.\.|$)"
    # A one-word "see:" or "read:" before another article's title.
    r"|^(?:lea|lee|lees|mire|mira|véase|siehe|see|voir|zobacz|czytaj|leggi|leia|veja)\s*:")

_DATE_LABELS = (
    "updated", "last updated", "last modified", "published", "posted", "posted on",
    "aktualisiert", "aktualisiert am", "zuletzt aktualisiert", "veröffentlicht",
    "veröffentlicht am", "erschienen am", "stand", "letzte änderung", "erstellt am",
    "publié", "publié le", "mis à jour", "mis à jour le", "publicado", "actualizado",
    "pubblicato", "aggiornato", "gepubliceerd", "bijgewerkt", "opublikowano",
    "zaktualizowano", "atualizado")
_DATE = (r"(?:\d{1,2}[./-]\d{1,2}[./-]\d{2,4}|\d{4}-\d{2}-\d{2}"
         r"|\d{1,2}\.?\s+[^\W\d_]+\.?\s+\d{4}|[^\W\d_]+\.?\s+\d{1,2},?\s+\d{4})")
_DATED = re.compile(
    r"^(?:" + _alternatives(*_DATE_LABELS, "erstellt von \\S+ am") + r")\s+"
    r"(?:(?:am|on|le|el|il|op|em|dnia)\s+)?(?:[^\W\d_]+,?\s+)?" + _DATE)

# Calls to action: a label that is the whole line ("Anzeige"), a line that opens with an
# imperative or a prompt ("Subscribe now ...", "Jetzt spenden"), or, anywhere in a short line,
# a phrase that only a prompt uses ("... sign up to our newsletter ...").
_ACTION_LABEL = re.compile(
    r"^(?:" + _alternatives(
        "advertisement", "sponsored", "sponsored content", "anzeige", "werbung", "gesponsert",
        "publicité", "publicidad", "pubblicità", "advertentie", "reklama", "publicidade",
        "newsletter", "abo", "login", "log in", "sign in", "sign up", "register", "subscribe",
        "anmelden", "registrieren", "abonnieren", "no comments", "keine kommentare") + r")$")
_ACTION_START = re.compile(
    r"^(?:" + _alternatives(
        "sign up", "sign in", "log in", "subscribe now", "subscribe to", "subscribe for",
        "register now", "create an account", "leave a comment", "leave a reply",
        "add a comment", "post a comment", "comments are closed", "support us",
        "donate now", "never miss", "get our", "get the latest", "jetzt abonnieren",
        "jetzt anmelden", "jetzt registrieren", "jetzt spenden", "jetzt bestellen",
        "newsletter abonnieren", "melden sie sich", "registrieren sie sich",
        "schreibe einen kommentar", "hinterlasse einen kommentar", "kommentar schreiben",
        "unterstütze", "unterstützen sie", "abonnez-vous", "inscrivez-vous",
        "s'abonner", "suscríbete", "regístrate", "hazte miembro", "iscriviti",
        "abbonati", "abonneer", "zapisz się", "zaloguj się", "subskrybuj", "wesprzyj",
        "assine", "inscreva-se", "du musst eingeloggt", "sie müssen eingeloggt",
        "you must be logged in") + r")\b")
_ACTION_ANYWHERE = re.compile(
    r"\b(?:" + _alternatives(
        "our newsletter", "unseren newsletter", "unserem newsletter", "unseres newsletters",
        "zum newsletter", "notre newsletter", "nuestro newsletter", "la nostra newsletter",
        "sign up for", "sign up to", "subscribe to our", "subscribe now",
        "eingeloggt sein", "um kommentare zu schreiben", "comments are closed",
        "leave a comment", "support our journalism", "unterstützen sie unsere",
        "for the full story") + r")\b")

# Author, date, credit and contact lines: a label and a colon ("Foto: dpa", "Kontakt:"), or a
# date label and a date ("Aktualisiert am 17.01.2021", "Updated 3 May 2020").
_BYLINE_LABEL = re.compile(
    r"^(?:" + _alternatives(
        "written by", "posted by", "published by", "geschrieben von", "verfasst von",
        "autor", "autorin", "author", "redakteur", "redakteurin", "redaktion", "text",
        "foto", "fotos", "photo", "photos", "bild", "bilder", "bildquelle", "image", "images",
        "picture", "quelle", "source", "credit", "credits", "copyright", "zdjęcie",
        "zdjęcia", "źródło", "crédit", "crédits", "crédito", "fuente", "fonte", "auteur",
        "titelbild", "bildnachweis", "release date", "news date", "date", "datum",
        "kontakt", "pressekontakt", "contact", "telefon", "tel", "tel.", "fax", "e-mail",
        "email", "ansprechpartner", "ansprechpartnerin", "pressesprecher",
        "pressesprecherin", *_DATE_LABELS) + r")\s*:")
# "Fot. Name / Agency", the Polish photo credit, has neither colon nor digit.
_FOT = re.compile(r"^fot\.\s")
# Reading-time notes ("5 min read", "Lesezeit: 3 Minuten").
_READING_TIME = re.compile(
    r"\bmin(?:ute)?s? read\b|\blesezeit\b|\blesedauer\b|\btemps de lecture\b"
    r"|\btiempo de lectura\b|\btempo di lettura\b|\bleestijd\b|\bczas czytania\b"
    r"|\bprzeczytasz w\b|\btempo de leitura\b")
_BY_NAME = re.compile(r"^(?i:by|von|par|por|przez)\s+(?:[A-ZÀ-ÖØ-Þ][\w.'’-]*\s*){2,4}$")
_COPYRIGHT = re.compile(r"^(?:©|\(c\)|copyright\s*(?:©|\(c\)|\d{4}|:))")
_RIGHTS = re.compile(
    r"all rights reserved|alle rechte vorbehalten|tous droits réservés"
    r"|todos los derechos reservados|tutti i diritti riservati|alle rechten voorbehouden"
    r"|wszelkie prawa zastrzeżone|todos os direitos reservados|ohne gewähr"
    r"|chroniony prawem autorskim")

_NAVIGATION_LINE = re.compile(
    r"^(?:" + _alternatives(
        "home", "startseite", "menu", "menü", "navigation", "back to top", "nach oben",
        "zurück", "zurück zur übersicht", "zur übersicht", "back", "previous", "next",
        "previous post", "next post", "vorheriger beitrag", "nächster beitrag",
        "vorheriger artikel", "nächster artikel", "print", "drucken", "download",
        "click here", "hier klicken", "klicken sie hier", "click to enlarge",
        "zum vergrößern klicken", "bild anzeigen", "bild vergrößern", "show image",
        "show more", "mehr anzeigen", "learn more", "mehr erfahren", "buy now", "jetzt kaufen",
        "add to cart", "in den warenkorb", "skip to content", "zum inhalt springen",
        "retour", "accueil", "imprimer", "volver", "inicio", "imprimir", "torna su",
        "stampa", "terug", "drukuj", "powrót", "voltar", "table of contents", "contents",
        "inhaltsverzeichnis", "inhalt", "sommaire", "índice", "indice", "spis treści",
        "inhoudsopgave", "accept", "accept all", "akzeptieren", "alle akzeptieren", "agree",
        "i agree", "reject", "decline", "ablehnen", "accepter", "aceptar", "accetta",
        "akceptuję") + r")$")
# Footer links: a line made only of these words ("Privacy policy Terms", "Impressum |
# Datenschutz | AGB").
_FOOTER = frozenset("""
    privacy policy terms of use and conditions service imprint legal notice cookie cookies
    impressum datenschutz datenschutzerklärung agb nutzungsbedingungen kontakt contact about us
    sitemap disclaimer haftungsausschluss mentions légales confidentialité cgu aviso legal
    política de privacidad privacidad términos condiciones polityka prywatności regulamin
    privacybeleid voorwaarden informativa
""".split())
# A footer line names at least one of these ("Privacy policy Terms"), not just "About" or "Use".
_FOOTER_NAMES = frozenset("""
    privacy imprint impressum datenschutz datenschutzerklärung agb nutzungsbedingungen
    sitemap disclaimer haftungsausschluss confidentialité cgu privacidad regulamin
    privacybeleid terms cookies
""".split())
_LABEL_LIST = re.compile(
    r"^(?:" + _alternatives(
        "tags", "tag", "schlagwörter", "schlagworte", "stichwörter", "kategorie",
        "kategorien", "categories", "category", "filed under", "posted in", "themen",
        "rubrik", "tagi", "étiquettes", "catégories", "etiquetas", "categorías",
        "categorie", "trefwoorden") + r")\s*:")
# Menu separators; a line of three or more short items between them is a menu or breadcrumbs.
_SEPARATORS = re.compile(r"\s[|•·»›¦>/]\s|\s?[|•·¦]\s?")
# Every separator holds one of these: a line without any is one item (a quick scan first; few
# lines have one, and splitting every line cost a quarter of this module's time).
_SEPARATOR_CHAR = re.compile(r"[|•·»›¦>/]")
_BARS = re.compile(r"[|•·¦]")
_MAX_ITEM_WORDS = 4

_WORD = re.compile(r"[^\W_]+")
_NON_ASCII_LETTER = re.compile(r"[^\x00-\x7f\W\d_]")  # a letter (or digit) beyond ASCII

# --- Other scripts -------------------------------------------------------------------------
# The furniture of the largest Wikipedias written in other scripts, and Vietnamese: Russian,
# Ukrainian, Japanese, Chinese (simplified and traditional), Arabic, Persian, Hindi, Korean,
# Thai. Chinese, Japanese and Thai write no space between words and Korean and Arabic attach
# particles and articles to them, so the phrases are matched without word boundaries: at a
# line's start, as the whole line (spaces ignored: "더 보기" and "더보기" are one label), or
# anywhere in a short notice.

# Whole lines: buttons, menu items, labels.
_OTHER_LABELS = {
    NAVIGATION: (
        "главная", "главная страница", "на главную", "меню", "наверх", "назад", "вперёд",
        "вперед", "далее", "печать", "версия для печати", "содержание", "поиск",
        "карта сайта", "контакты", "о нас", "политика конфиденциальности",
        "пользовательское соглашение", "принять", "принять все", "согласен", "головна",
        "на головну", "нагору", "друк", "зміст", "пошук", "контакти", "про нас",
        "політика конфіденційності", "прийняти", "погоджуюсь",
        "ホーム", "トップ", "トップページ", "メニュー", "トップへ戻る", "ページの先頭へ",
        "ページトップへ", "ページの先頭に戻る", "前へ", "次へ", "戻る", "印刷", "目次", "検索",
        "サイトマップ", "お問い合わせ", "プライバシーポリシー", "利用規約", "会社概要",
        "同意する", "同意します",
        "首页", "首頁", "主页", "返回", "返回顶部", "回到顶部", "返回首页", "上一篇", "下一篇",
        "上一页", "下一页", "打印", "目录", "目錄", "菜单", "選單", "搜索", "搜尋", "网站地图",
        "網站地圖", "联系我们", "聯絡我們", "關於我們", "关于我们", "隐私政策", "隱私權政策",
        "使用条款", "使用條款", "接受", "同意", "我同意", "全部接受",
        "الرئيسية", "الصفحة الرئيسية", "القائمة", "العودة", "رجوع", "طباعة", "التالي",
        "السابق", "المحتويات", "بحث", "اتصل بنا", "من نحن", "سياسة الخصوصية",
        "شروط الاستخدام", "موافق", "قبول", "أوافق",
        "صفحه اصلی", "خانه", "بازگشت", "چاپ", "بعدی", "قبلی", "فهرست", "جستجو", "تماس با ما",
        "درباره ما", "حریم خصوصی", "موافقم",
        "मुख पृष्ठ", "होम", "वापस", "प्रिंट", "अगला", "पिछला", "विषय सूची", "खोजें",
        "हमसे संपर्क करें", "हमारे बारे में", "गोपनीयता नीति", "स्वीकार करें",
        "홈", "메뉴", "맨 위로", "위로", "이전", "다음", "목록", "인쇄", "이전글", "다음글",
        "검색", "사이트맵", "회사소개", "개인정보처리방침", "이용약관", "동의", "동의합니다",
        "trang chủ", "quay lại", "về đầu trang", "lên đầu trang", "mục lục", "tìm kiếm",
        "liên hệ", "chính sách bảo mật", "điều khoản sử dụng", "đồng ý", "chấp nhận",
        "หน้าแรก", "กลับขึ้นด้านบน", "ค้นหา", "ติดต่อเรา", "เกี่ยวกับเรา",
        "นโยบายความเป็นส่วนตัว", "ยอมรับ", "ยอมรับทั้งหมด",
    ),
    CALL_TO_ACTION: (
        "реклама", "подписаться", "подпишитесь", "войти", "вход", "регистрация",
        "комментарии", "підписатися", "увійти", "реєстрація", "коментарі",
        "広告", "スポンサーリンク", "ログイン", "新規登録", "会員登録", "購読する", "コメント",
        "广告", "廣告", "登录", "登入", "注册", "註冊", "订阅", "訂閱", "评论", "評論",
        "إعلان", "تسجيل الدخول", "اشترك", "اشترك الآن", "سجل الآن", "التعليقات",
        "تبلیغات", "ورود", "ثبت نام", "عضویت", "نظرات",
        "विज्ञापन", "लॉग इन", "साइन इन", "सब्सक्राइब करें", "रजिस्टर करें", "टिप्पणियाँ",
        "광고", "로그인", "회원가입", "구독", "구독하기", "댓글",
        "quảng cáo", "đăng nhập", "đăng ký", "đăng ký ngay", "bình luận",
        "โฆษณา", "เข้าสู่ระบบ", "สมัครสมาชิก",
    ),
    READ_MORE: (
        "подробнее", "читать далее", "читать ещё", "читать еще", "детальніше", "читати далі",
        "続きを読む", "もっと見る", "もっと読む", "詳しくはこちら", "詳細はこちら",
        "阅读更多", "閱讀更多", "阅读全文", "閱讀全文", "查看更多", "查看全文",
        "اقرأ المزيد", "المزيد", "ادامه مطلب", "और पढ़ें", "आगे पढ़ें",
        "더 보기", "더보기", "xem thêm", "อ่านต่อ", "อ่านเพิ่มเติม",
    ),
    SHARE: ("поделиться", "поділитися", "シェア", "シェアする", "ツイート", "分享", "转发",
            "شارك", "مشاركة", "اشتراک گذاری", "اشتراک‌گذاری", "शेयर करें", "साझा करें",
            "공유", "공유하기", "chia sẻ", "แชร์"),
}
_DECORATION_OTHER = _DECORATION + "【】「」『』〈〉《》［］（）：▶►▸▼→←↑↓»«›‹…"


def _compact(text: str) -> str:
    return "".join(text.strip(_DECORATION_OTHER).split())


_OTHER_LABEL_REASON = {_compact(label): reason for reason, labels in _OTHER_LABELS.items()
                       for label in labels}


def _starting(*phrases: str) -> re.Pattern[str]:
    """A line that starts with one of ``phrases``; where a phrase ends in a letter with case
    (Cyrillic, Vietnamese), not followed by another letter."""
    def one(phrase):
        return re.escape(phrase) + (r"(?!\w)" if phrase[-1].isupper() or phrase[-1].islower()
                                    else "")
    return re.compile("^(?:" + "|".join(one(p) for p in sorted(phrases, key=len, reverse=True))
                      + ")")


# A line that opens with "Read also:", "Related articles" and goes on with a title or nothing.
_OTHER_READ_MORE = re.compile(
    r"^(?:" + _alternatives(
        "читайте также", "читать также", "смотрите также", "см. также", "похожие статьи",
        "похожие новости", "другие новости", "материалы по теме", "новости по теме", "по теме",
        "самое читаемое", "популярное", "рекомендуем", "читайте також", "читайте ще",
        "дивіться також", "див. також", "схожі статті", "інші новини", "новини за темою",
        "по темі", "популярне", "рекомендуємо",
        "関連記事", "関連ニュース", "おすすめ記事", "こちらもおすすめ", "あわせて読みたい",
        "合わせて読みたい", "人気記事", "こちらもどうぞ", "相关文章", "相關文章", "相关阅读",
        "相關閱讀", "相关新闻", "相關新聞", "相关推荐", "相關推薦", "推荐阅读", "推薦閱讀",
        "延伸阅读", "延伸閱讀", "热门文章", "熱門文章", "更多新闻", "更多新聞",
        "اقرأ أيضا", "اقرأ أيضاً", "اقرأ ايضا", "مقالات ذات صلة", "أخبار ذات صلة",
        "الأكثر قراءة", "شاهد أيضا", "شاهد أيضاً", "بیشتر بخوانید", "بخوانید", "مطالب مرتبط",
        "اخبار مرتبط", "پربازدیدترین", "यह भी पढ़ें", "ये भी पढ़ें", "इसे भी पढ़ें",
        "संबंधित खबरें", "संबंधित लेख", "관련 기사", "관련기사", "많이 본 뉴스",
        "추천 기사", "함께 보면 좋은", "ข่าวที่เกี่ยวข้อง", "บทความที่เกี่ยวข้อง",
        "บทความแนะนำ") + r")(?:\s*[:：»›>|…]|\.\.\.|$)")
_OTHER_SHARE_START = _starting(
    "поделиться в", "поделиться с", "поділитися в", "поділитись", "シェアする", "分享到",
    "分享至", "شارك على", "شارك عبر", "اشتراک در", "शेयर करें", "공유하기", "chia sẻ lên",
    "แชร์ไปยัง")
# Network names and share words: a line made only of these (and separators) is a share bar.
_OTHER_SOCIAL_NAMES = ("вконтакте", "одноклассники", "微信", "微博", "qq空间", "qq空間",
                       "朋友圈", "はてなブックマーク", "はてブ", "line", "카카오톡", "카카오스토리",
                       "네이버", "밴드", "zalo", "facebook", "twitter", "telegram", "whatsapp",
                       "linkedin", "pinterest", "reddit", "email", "e-mail", "vk", "weibo",
                       "wechat")
_OTHER_SOCIAL_WORDS = tuple(_OTHER_LABELS[SHARE]) + (
    "分享到", "分享至", "で", "に", "を", "到", "至", "в", "у", "على", "عبر", "در", "पर", "에",
    "lên", "ไปยัง")
_OTHER_SOCIAL = re.compile("|".join(
    re.escape(p) for p in sorted(_OTHER_SOCIAL_NAMES + _OTHER_SOCIAL_WORDS, key=len,
                                 reverse=True)))
_OTHER_SOCIAL_NAME = re.compile("|".join(
    re.escape(p) for p in sorted(_OTHER_SOCIAL_NAMES, key=len, reverse=True)))

_OTHER_ACTION_START = _starting(
    "подпишитесь на", "подписывайтесь на", "оставьте комментарий", "оставить комментарий",
    "зарегистрируйтесь", "авторизуйтесь", "підпишіться на", "підписуйтесь на",
    "залиште коментар", "コメントを書く", "コメントする", "ログインして", "メールマガジン",
    "订阅我们", "关注我们", "關注我們", "扫码关注", "欢迎关注", "发表评论", "發表評論",
    "اشترك في", "اشترك الآن", "تابعونا على", "تابعنا على", "اترك تعليقا", "اترك تعليقاً",
    "أضف تعليق", "ما را دنبال کنید", "عضو کانال", "دیدگاه خود را بنویسید",
    "हमें फॉलो करें", "सब्सक्राइब करें", "टिप्पणी करें", "구독하기", "댓글 쓰기",
    "댓글을 입력", "뉴스레터", "đăng ký nhận", "theo dõi chúng tôi", "để lại bình luận",
    "gửi bình luận", "ติดตามเรา", "สมัครรับ")
_OTHER_BYLINE_LABEL = re.compile(
    r"^(?:" + _alternatives(
        "автор", "авторы", "фото", "источник", "текст", "дата публикации", "опубликовано",
        "обновлено", "корреспондент", "редактор", "джерело", "опубліковано", "оновлено",
        "著者", "写真", "出典", "撮影", "文", "公開日", "更新日", "投稿日", "作者", "来源",
        "來源", "图片来源", "圖片來源", "摄影", "攝影", "责任编辑", "責任編輯", "编辑", "編輯",
        "记者", "記者", "发布时间", "發布時間", "更新时间", "更新時間", "المصدر", "الكاتب",
        "تصوير", "بقلم", "تاريخ النشر", "آخر تحديث", "نویسنده", "منبع", "عکس",
        "تاریخ انتشار", "लेखक", "स्रोत", "फोटो", "अपडेट", "प्रकाशित", "기자", "출처", "사진",
        "입력", "수정", "작성자", "tác giả", "nguồn", "ảnh", "cập nhật", "ngày đăng",
        "ผู้เขียน", "ที่มา", "ภาพ") + r")\s*[:：]")
_OTHER_RIGHTS = re.compile(
    "все права защищены|всі права захищені|усі права захищені|無断転載|無断複製|版权所有|"
    "版權所有|保留所有权利|جميع الحقوق محفوظة|کلیه حقوق|تمامی حقوق|सर्वाधिकार सुरक्षित|"
    "무단 전재|무단전재|재배포 금지|저작권자|bản quyền thuộc|giữ bản quyền|สงวนลิขสิทธิ์")
# A cookie notice: the word, a verb of use or consent, and the site or the reader.
_OTHER_COOKIE_WORD = re.compile(
    "cookie|куки|クッキー|쿠키|کوکی|كوكيز|ملفات تعريف الارتباط|कुकी|คุกกี้")
_OTHER_CONSENT = re.compile(
    "использ|соглас|принима|продолжая|використов|погоджу|прийма|使用|利用|同意|接受|继续|"
    "استخدام|نستخدم|يستخدم|موافق|استفاده|उपयोग|इस्तेमाल|सहमत|사용|이용|동의|sử dụng|đồng ý|"
    "chấp nhận|ใช้|ยอมรับ")
_OTHER_NOTICE_SUBJECT = re.compile(
    r"(?<!\w)(?:мы|вы|наш\w*|ваш\w*|ми|ви|сайт\w*)(?!\w)|当サイト|本サイト|このサイト|"
    "当社|弊社|本网站|本網站|本站|我们|我們|您|موقعنا|هذا الموقع|نحن|نستخدم|این سایت|"
    "وب‌سایت|ما از|हम|आप|वेबसाइट|당사|저희|본 사이트|귀하|chúng tôi|bạn|trang web|เว็บไซต์|"
    "เรา|คุณ")


def boilerplate_reason(line: str) -> str | None:
    """Why `line` is page furniture, or None when it may be the article's.

    Reasons: ``cookie`` (a cookie or consent notice), ``share`` (a share bar: only share verbs
    and network names, or "Share on ..."), ``read_more`` ("Read more", "Lesen Sie auch: ...",
    "Related articles"), ``call_to_action`` (subscribe, sign in, comment, donate,
    advertisement labels), ``byline`` (author, date, photo credit, copyright lines), and
    ``navigation`` (a menu or breadcrumb row, a tag or category list, a lone button such as
    "Print" or "Back to top"). Each rule applies only up to a length (`_MAX_WORDS`): a longer
    line is prose.
    """
    text = line.strip(_DECORATION)
    lowered = text.lower()
    # A line whose letters are all ASCII (curly quotes and dashes aside) is split as it always
    # was, and only the Latin rules can apply to it.
    ascii_line = lowered.isascii() or _NON_ASCII_LETTER.search(lowered) is None
    if ascii_line:
        if len(lowered) <= _LONG_LINE:
            tokens = _WORD.findall(lowered)
        else:  # past every rule's limit once it has more words than the longest: enough
            tokens = [m.group() for m in itertools.islice(_WORD.finditer(lowered),
                                                          _ANY_RULE_WORDS + 1)]
    else:
        tokens = _words(lowered)
    n = len(tokens)
    if not n:
        return None
    reason = _latin_reason(line, text, lowered, tokens, n)
    if reason is None and not ascii_line:
        reason = _other_reason(lowered, n)
    if reason is not None:
        return reason
    # Two short items between bars ("Home | News"), or three between any separators
    # ("Home » News » Sport"; two would catch "Berlin / Hamburg").
    if _SEPARATOR_CHAR.search(text) is None:
        return None
    items = [item for item in _SEPARATORS.split(text) if item.strip()]
    if (len(items) >= 3 or len(items) == 2 and _BARS.search(text)) \
            and all(len(_item_words(item)) <= _MAX_ITEM_WORDS for item in items):
        return NAVIGATION
    return None


def _words(lowered: str) -> list[str]:
    """The words of a line that is not ASCII (`wikisum.core.text.words`: marks kept inside
    words, Chinese, Japanese and Thai segmented); of a long line, enough of them to tell that
    it is longer than every rule's limit."""
    if len(lowered) > _LONG_LINE:
        head = words(lowered[:_LONG_LINE])
        if len(head) > _ANY_RULE_WORDS:
            return head[:_ANY_RULE_WORDS + 1]
    return words(lowered)


def _item_words(item: str) -> list[str]:
    return _WORD.findall(item) if item.isascii() else words(item)


def _latin_reason(line: str, text: str, lowered: str, tokens: list[str], n: int) -> str | None:
    """The rules of the languages written in the Latin alphabet."""
    if n <= _MAX_WORDS[COOKIE] and _COOKIE_WORD.search(lowered) \
            and _CONSENT.search(lowered) and _NOTICE_SUBJECT.search(lowered):
        return COOKIE
    if n <= _MAX_WORDS[SHARE] and (all(t in _SOCIAL for t in tokens)
                                   and any(t in _SOCIAL_NAMES for t in tokens)
                                   or _SHARE_START.match(lowered)):
        return SHARE
    if n <= _MAX_WORDS[READ_MORE] and _READ_MORE.match(lowered):
        return READ_MORE
    if n <= _MAX_WORDS[CALL_TO_ACTION] and (_ACTION_LABEL.match(lowered)
                                            or _ACTION_START.match(lowered)
                                            or _ACTION_ANYWHERE.search(lowered)):
        return CALL_TO_ACTION
    if n <= _MAX_WORDS[BYLINE] and (
            # the line with its decoration stripped but a final colon kept ("Kontakt:")
            _BYLINE_LABEL.match(line.strip(_DECORATION.replace(":", "")).lower())
            or _DATED.match(lowered) or _FOT.match(lowered)
            or _READING_TIME.search(lowered) or _BY_NAME.match(text)
            or _COPYRIGHT.match(lowered) or _RIGHTS.search(lowered)):
        return BYLINE
    if n <= _MAX_WORDS[NAVIGATION] and (_NAVIGATION_LINE.match(" ".join(tokens))
                                        or _LABEL_LIST.match(lowered)
                                        or all(t in _FOOTER for t in tokens)
                                        and any(t in _FOOTER_NAMES for t in tokens)):
        return NAVIGATION
    return None


def _other_reason(lowered: str, n: int) -> str | None:
    """The rules of the languages in `_OTHER_LABELS`, for a line that is not ASCII."""
    compact = _compact(lowered)
    label = _OTHER_LABEL_REASON.get(compact)
    if label is not None and n <= _MAX_WORDS[label]:
        return label
    if n <= _MAX_WORDS[COOKIE] and _OTHER_COOKIE_WORD.search(lowered) \
            and _OTHER_CONSENT.search(lowered) and _OTHER_NOTICE_SUBJECT.search(lowered):
        return COOKIE
    if n <= _MAX_WORDS[SHARE] and (
            _OTHER_SHARE_START.match(lowered)
            or _OTHER_SOCIAL_NAME.search(compact)
            and not any(ch.isalpha() for ch in _OTHER_SOCIAL.sub("", compact))):
        return SHARE
    if n <= _MAX_WORDS[READ_MORE] and _OTHER_READ_MORE.match(lowered):
        return READ_MORE
    if n <= _MAX_WORDS[CALL_TO_ACTION] and _OTHER_ACTION_START.match(lowered):
        return CALL_TO_ACTION
    if n <= _MAX_WORDS[BYLINE] and (_OTHER_BYLINE_LABEL.match(lowered)
                                    or _OTHER_RIGHTS.search(lowered)):
        return BYLINE
    return None
