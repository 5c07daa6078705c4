"""Which lines of a page's main text are page furniture rather than the article.

trafilatura already leaves out most of a page's chrome; what reaches the paragraph filter is the
main text plus the furniture that sits inside the article's container: share bars, "read more"
links, bylines and photo credits, cookie and newsletter prompts, tag lists and buttons. Those
lines are recognised here by what they say, in the languages the references mostly come in
(English, German, French, Spanish, Italian, Dutch, Polish, Portuguese), never by their length:
a short line is as often a heading, a list item or a caption of the article (measured on real
pages, ``bench/extraction.py``), and those are kept.

`boilerplate_reason` is a pure function of one line; each reason is counted by the ingest job.
"""

from __future__ import annotations

import itertools
import re

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
    compartilhar imprimer imprimir stampa afdrukken drukuj wyślij senden send
""".split())
# A share bar names at least one network or share verb; "on", "it" alone are not a share bar.
_SOCIAL_NAMES = frozenset("""
    facebook twitter linkedin xing whatsapp pinterest instagram telegram reddit tumblr flipboard
    mastodon bluesky messenger share teilen tweet partager compartir condividi delen
    udostępnij compartilhar email
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
        "powiązane artykuły", "polecane") + r")(?:\s*[:»›>|…]|\.\.\.|$)"
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
    if len(lowered) <= _LONG_LINE:
        tokens = _WORD.findall(lowered)
    else:  # past every rule's limit once it has more words than the longest: those are enough
        tokens = [m.group() for m in itertools.islice(_WORD.finditer(lowered),
                                                      _ANY_RULE_WORDS + 1)]
    n = len(tokens)
    if not n:
        return None
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
    # Two short items between bars ("Home | News"), or three between any separators
    # ("Home » News » Sport"; two would catch "Berlin / Hamburg").
    if _SEPARATOR_CHAR.search(text) is None:
        return None
    items = [item for item in _SEPARATORS.split(text) if item.strip()]
    if (len(items) >= 3 or len(items) == 2 and _BARS.search(text)) \
            and all(len(_WORD.findall(item)) <= _MAX_ITEM_WORDS for item in items):
        return NAVIGATION
    return None
