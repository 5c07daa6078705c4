"""Language identification of reference texts (py3langid and the model it ships).

`identify` names the language of a text; `is_wrong_language` says whether a reference should be
left out of an article in another language. Both are pure functions: the identifier is loaded
once per process, on first use, and is only read after that, so threads may share it.

The defaults are measured by ``experiments/language/run.py`` on 884 real pages and on word
windows cut from them (figures in its README): agreement with the pages' declared language does
not improve beyond the first 1,000 characters; texts of 15-19 letters are identified right only
82-86 % of the time; and from a confidence of 0.9 up, every wrong-language call on those texts
was a passage really in another language, while 99.7 % of clearly foreign pages are caught.

The identifier is py3langid's, with its per-byte feature walk done by numpy
(:mod:`wikisum.pipeline.langwalk`): the same answers, about twice as fast.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

UNDETERMINED = "und"

# Characters looked at: agreement with the benchmark pages' declared language is 95.6 % at
# 1,000 characters and for whole texts alike, and the time per text grows with its length
# (py3langid's own walk: about 1,500 texts/s on one core at 1,000 characters; the vectorised
# walk of langwalk: about 2,500).
DEFAULT_MAX_CHARS = 1000
# Fewer letters are a heading or a caption: 15-19 letters are identified right 82-86 % of the
# time, 20-29 letters 90-92 %.
DEFAULT_MIN_LETTERS = 20
# Confidence needed to call a text wrong-language. Between 0.5 and 0.9 the calls include the
# identifier's own confusions (German as Luxembourgish, English as Nigerian Pidgin).
DEFAULT_MIN_CONFIDENCE = 0.9

# The identifier's class for numbers, markup and identifiers: not a language.
_NOT_LANGUAGE = "zxx"

# Codes that name the same language as a code the model uses: deprecated ISO 639-1 codes,
# and Wikipedia edition names that are not language tags.
_ALIASES = {
    "nb": "no",  # the model has "no" (Bokmål) and "nn", no "nb"
    "iw": "he",
    "in": "id",
    "ji": "yi",
    "jw": "jv",
    "mo": "ro",
    "simple": "en",  # Simple English Wikipedia
    "be-tarask": "be",
    "be-x-old": "be",
    "zh-min-nan": "nan",  # Min Nan (mostly in Latin script): not a variety of "zh" here
}

# Classes of the model that are members of one ISO 639-3 macrolanguage count as one language:
# the model tells them apart poorly, and a reference in a sister variety is not wrong-language.
_MACROLANGUAGE = {
    "nn": "no",  # Nynorsk, the other written Norwegian
    "wuu": "zh",
    "yue": "zh",
    "ary": "ar",
    "arz": "ar",
    "uzs": "uz",
    "id": "ms",  # Indonesian is a member of the Malay macrolanguage
    "sr": "sh",  # Serbian, Croatian and Bosnian: Serbo-Croatian
    "hr": "sh",
    "bs": "sh",
    "sdh": "ku",
    "ltg": "lv",
    "gug": "gn",
    "fuv": "ff",
}

log = logging.getLogger("wikisum.language")

_lock = threading.Lock()
_identifier = None
_preload_lock = threading.Lock()
_preloading = False
_known: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Language:
    """A text's language: the model's code (ISO 639-1 where there is one, else ISO 639-3,
    e.g. "en", "de", "yue") or UNDETERMINED, and the normalised probability of that code."""

    code: str
    confidence: float  # in [0, 1]; 0.0 when undetermined


_UNKNOWN = Language(UNDETERMINED, 0.0)


def _get_identifier():
    """The process's identifier, loaded on first use (about 0.2 s from the unpacked model in
    the cache folder, its arrays checked; the first load on a machine unpacks the model, about
    0.7 s)."""
    global _identifier, _known
    if _identifier is None:
        with _lock:
            if _identifier is None:
                from py3langid.langid import MODEL_FILE, LanguageIdentifier

                if not hasattr(LanguageIdentifier, "from_model_file"):
                    # 0.3 and older ship another model (97 languages, no "zxx"), loaded another
                    # way; the defaults here were measured with 0.4's.
                    raise RuntimeError("wikisum.pipeline.language needs py3langid >= 0.4")
                from wikisum.pipeline import langwalk

                # py3langid's identifier with its feature walk vectorised: the same answers,
                # about twice as fast (its own walk where the model's layout is another), its
                # model unpacked once per machine (langwalk.cache_dir).
                identifier = langwalk.load(
                    langwalk.vectorised(LanguageIdentifier), _model_path(MODEL_FILE),
                    langwalk.shipped_model_depth(), langwalk.cache_dir())
                _known = frozenset(_language_group(code) for code in identifier.labels
                                   if code != _NOT_LANGUAGE)
                _identifier = identifier
    return _identifier


def _model_path(model_file):
    from pathlib import Path

    from py3langid.langid import MODEL_DIR

    path = Path(model_file)
    return path if path.is_absolute() else Path(MODEL_DIR) / path


def identify(text: str, *, max_chars: int = DEFAULT_MAX_CHARS,
             min_letters: int = DEFAULT_MIN_LETTERS) -> Language:
    """The language of `text`, judged on at most `max_chars` characters of it.

    UNDETERMINED when the characters looked at hold fewer than `min_letters` letters, or when
    the model answers that they are not language (numbers, markup).
    """
    # The text's start, not windows spread over it: the start of a reference's main text is
    # its body, while a window that falls on a passage in another script (a Japanese quote in
    # an English article) can decide a joined sample on its own, and averaging the windows'
    # answers lowers the confidence of every clearly foreign text (experiments/language/run.py).
    return identify_many([text], max_chars=max_chars, min_letters=min_letters)[0]


def _has_letters(sample: str, wanted: int) -> bool:
    """Whether ``sample`` holds at least ``wanted`` letters (``str.isalpha``), read only up to
    the letter that makes the count: a page's text reaches 20 letters in its first few dozen
    characters of the 1,000 looked at."""
    if wanted <= 0:
        return True
    count = 0
    for char in sample:
        if char.isalpha():
            count += 1
            if count >= wanted:
                return True
    return False


def identify_many(texts: list[str], *, max_chars: int = DEFAULT_MAX_CHARS,
                  min_letters: int = DEFAULT_MIN_LETTERS) -> list[Language]:
    """:func:`identify` of each text, the texts' features found together (one walk over all
    of them, where the identifier allows it): the same answers, in less time a text."""
    samples = [text[:max_chars] for text in texts]
    wanted = max(min_letters, 1)
    todo = [i for i, sample in enumerate(samples) if _has_letters(sample, wanted)]
    out = [_UNKNOWN] * len(texts)
    if not todo:
        return out
    identifier = _get_identifier()
    chosen = [samples[i] for i in todo]
    answers = (identifier.classify_many(chosen) if hasattr(identifier, "classify_many")
               else [identifier.classify(sample) for sample in chosen])
    for i, (code, confidence) in zip(todo, answers, strict=True):
        if code != _NOT_LANGUAGE and code != UNDETERMINED:
            out[i] = Language(code, min(max(float(confidence), 0.0), 1.0))
    return out


def _language_group(code: str) -> str:
    code = code.strip().lower().replace("_", "-")
    if code in _ALIASES:
        code = _ALIASES[code]
    else:
        code = code.split("-", 1)[0]  # "en-GB" -> "en", "zh-yue" -> "zh"
    return _MACROLANGUAGE.get(code, code)


def is_wrong_language(found: Language, wanted: str, *,
                      min_confidence: float = DEFAULT_MIN_CONFIDENCE) -> bool:
    """Whether a text identified as `found` is, with confidence, not in language `wanted`.

    `wanted` is a language code or tag ("de", "en-GB", "nb", a Wikipedia edition such as
    "simple"); empty or "any" turns the check off, and so does a language the model does not
    know (it could never answer it). Members of one macrolanguage count as the same language
    ("no" and "nn", "zh" and "yue", "sr" and "hr").
    """
    wanted = wanted.strip().lower()
    if not wanted or wanted == "any" or found.code == UNDETERMINED:
        return False
    if found.confidence < min_confidence:
        return False
    want = _language_group(wanted)
    _get_identifier()
    if want not in _known:
        return False
    return _language_group(found.code) != want


def load() -> None:
    """Loads the model now (once per process); raises if py3langid is missing or too old."""
    _get_identifier()


def preload() -> None:
    """Starts loading the model in a background thread (once per process) and returns: an
    :func:`identify` or :func:`load` meanwhile waits for it (or, called before the thread has
    begun, loads the model itself; once either way). Most of the load is decompression,
    which leaves the interpreter to other threads, so a launcher that builds its job meanwhile
    (about a second) gets the model for next to nothing. An error is left to the next
    :func:`load`, which raises it."""
    global _preloading
    with _preload_lock:  # not _lock, which a load holds throughout
        if _identifier is not None or _preloading:
            return
        _preloading = True
    threading.Thread(target=_preload, name="wikisum-language-model", daemon=True).start()


def _preload() -> None:
    try:
        _get_identifier()
    except Exception:  # noqa: BLE001 - raised again by the next load() or identify()
        log.debug("the language model did not load in the background", exc_info=True)


def is_known(code: str) -> bool:
    """Whether the model can answer `code` (a code or tag, as `is_wrong_language` takes it)."""
    _get_identifier()
    return _language_group(code) in _known
