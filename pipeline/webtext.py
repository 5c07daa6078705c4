"""Web page bytes -> main text -> prose paragraphs.

Three steps, each a pure function: `decode_body` turns a captured body into text,
`extract_main_text` keeps the page's main content (trafilatura), and `split_paragraphs` with
`paragraph_drop_reason` cut it into the paragraphs the extractors rank.

This is what datatrove and trafilatura call *extraction* (a page's main text). The paper's
*extractors* (``wikisum.extractors``) come after it: they rank an article's reference
paragraphs, they do not read pages.

The module is not called `html` so that it can never shadow the standard library's `html`.
"""

from __future__ import annotations

import codecs
import functools
import queue
import re
import threading
import time
from collections.abc import Callable, Sequence
from configparser import ConfigParser
from typing import TypeVar

import charset_normalizer
import trafilatura
from trafilatura.settings import DEFAULT_CONFIG

_T = TypeVar("_T")


class DecodeError(ValueError):
    """The body is not text (an image, an archive, compressed bytes)."""


class ExtractionError(RuntimeError):
    """Main-text extraction failed on this page."""


class ExtractionTimeout(ExtractionError):
    """Main-text extraction took longer than the page's time limit."""


# --- Decoding -----------------------------------------------------------------------------------

# How many leading bytes may hold a `<meta charset>`; HTML requires it within the first 1024
# bytes, but real pages put it later, after long comments or scripts.
_META_SCAN_BYTES = 4096

# Labels decoded with a superset, as browsers do (WHATWG Encoding Standard): pages labelled
# latin-1 or ASCII are very often really windows-1252 (curly quotes in 0x80-0x9F), and the
# superset decodes every page the narrower label would.
_SUPERSETS = {
    codecs.lookup(label).name: codecs.lookup(superset).name
    for label, superset in {
        "latin-1": "cp1252",
        "ascii": "cp1252",
        "iso-8859-9": "cp1254",
        "iso-8859-11": "cp874",
        "tis-620": "cp874",
        "gb2312": "gb18030",
        "gbk": "gb18030",
        "euc-kr": "cp949",
        "shift_jis": "cp932",
    }.items()
}

# A `<meta>` can only be read if the bytes are ASCII-compatible, so a page whose meta says UTF-16
# is really in an ASCII-compatible encoding; browsers take UTF-8 then.
_UTF16_OR_32 = frozenset(
    codecs.lookup(label).name
    for label in ("utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be")
)

_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

_HEADER_CHARSET = re.compile(r"charset\s*=\s*[\"']?\s*([^\s;\"',]+)", re.IGNORECASE)
_META_CHARSET = re.compile(
    rb"<meta\b[^>]*?charset\s*=\s*[\"']?\s*([A-Za-z0-9_.:-]+)", re.IGNORECASE
)

# Leading bytes of common non-text payloads that are sometimes served as text/html.
# Formats whose header is printable (PDF, GIF) would pass the control-character test below;
# the others are here because checking a prefix is cheaper than decoding.
_BINARY_MAGIC = (
    b"%PDF-", b"GIF87a", b"GIF89a", b"\x89PNG", b"\xff\xd8\xff", b"PK\x03\x04", b"\x1f\x8b",
    b"\xfd7zXZ", b"7z\xbc\xaf", b"\x7fELF",
)

# Decoded text is taken for binary when more than this share of its first characters are
# control characters (other than tab, newlines, form feed and ESC) or U+FFFD. Text in a wrong
# single-byte encoding is still readable letters; bytes that are not text at all are not.
_BINARY_SAMPLE_CHARS = 4096
_MAX_BINARY_SHARE = 0.05
_TEXT_CONTROLS = frozenset("\t\n\r\f\x1b")
# What a text does not hold: the C0 controls but _TEXT_CONTROLS, DEL, and U+FFFD (a byte the
# codec could not decode).
_BINARY_CHARS = re.compile("[" + "".join(
    re.escape(chr(c)) for c in (*range(0x20), 0x7F, 0xFFFD)
    if chr(c) not in _TEXT_CONTROLS) + "]")


def decode_body(body: bytes, content_type: str | None) -> tuple[str, str]:
    """Decodes an HTTP body into text, trying the page's own declarations before guessing.

    The encodings tried, in order: a byte order mark; the `charset` of the Content-Type header;
    a `<meta charset=...>` or `<meta http-equiv="Content-Type" content="...; charset=...">` in
    the first 4 KB; charset-normalizer's detection; UTF-8 with replacement characters. A BOM
    comes first, as in browsers: it cannot be there by accident, while headers are often
    server-wide defaults that are wrong for the page. A step is skipped when it names no known
    encoding, when the body does not decode strictly with it, or when the result looks binary.
    Latin-1 and ASCII labels decode as windows-1252 (see `_SUPERSETS`).

    Args:
        body: The raw HTTP body (after transfer and content decoding).
        content_type: The Content-Type header value, if any.

    Returns:
        The text and the Python codec name used (e.g. "utf-8", "cp1252").

    Raises:
        DecodeError: The body is not text: a known binary signature, or no decoding yields
            mostly printable characters.
    """
    if body.startswith(_BINARY_MAGIC):
        raise DecodeError(f"binary signature {body[:8]!r}")

    for bom, encoding in _BOMS:
        if body.startswith(bom):
            text = _try_decode(body[len(bom) :], encoding)
            if text is not None:
                return text, encoding

    header = _HEADER_CHARSET.search(content_type or "")
    meta = _META_CHARSET.search(body[:_META_SCAN_BYTES])
    declared = [
        _codec(header.group(1)) if header else None,
        _codec(meta.group(1).decode("ascii"), from_meta=True) if meta else None,
    ]
    for encoding in declared:
        if encoding is not None:
            text = _try_decode(body, encoding)
            if text is not None:
                return text, encoding

    best = charset_normalizer.from_bytes(body).best()
    if best is not None:
        encoding = _codec(best.encoding)
        if encoding is not None:
            text = _try_decode(body, encoding)
            if text is not None:
                return text, encoding

    text = body.decode("utf-8", errors="replace")
    if _looks_binary(text):
        raise DecodeError("no encoding yields text")
    return text, "utf-8"


def _codec(label: str, *, from_meta: bool = False) -> str | None:
    """The Python codec name for a charset label, or None for an unknown label."""
    try:
        name = codecs.lookup(label.strip().strip("\"'")).name
    except (LookupError, ValueError):
        return None
    if from_meta and name in _UTF16_OR_32:
        return "utf-8"
    return _SUPERSETS.get(name, name)


def _try_decode(body: bytes, encoding: str) -> str | None:
    try:
        text = body.decode(encoding)
    except (ValueError, LookupError):
        # ValueError covers UnicodeDecodeError and codecs that refuse to decode at all
        # ("undefined"); LookupError covers bytes-to-bytes codecs such as "base64".
        return None
    return None if _looks_binary(text) else text


def _looks_binary(text: str) -> bool:
    sample = text[:_BINARY_SAMPLE_CHARS]
    if not sample:
        return False
    bad = len(_BINARY_CHARS.findall(sample))  # one C loop, not one Python step a character
    return bad > _MAX_BINARY_SHARE * len(sample)


# --- Main-text extraction -----------------------------------------------------------------------

# Pages longer than this are cut before extraction. Main content sits near the start of real
# pages, and lxml parses a truncated page without complaint; cutting keeps the cost of one page
# bounded, which matters because a running extraction cannot be stopped (see below).
DEFAULT_MAX_CHARS = 2_000_000

# Generous: trafilatura takes tens of milliseconds on a typical page and rarely over a second.
DEFAULT_TIMEOUT_S = 20.0


def extract_main_text(
    html: str,
    url: str | None = None,
    *,
    max_chars: int = DEFAULT_MAX_CHARS,
    timeout_s: float | None = DEFAULT_TIMEOUT_S,
) -> str:
    """The main text of a page (trafilatura), paragraphs separated by newlines.

    Comments and tables are left out. trafilatura's deduplication is off: it keeps a
    process-wide LRU cache of seen segments, so with it the output for a page would depend on
    which pages the same worker happened to process before.

    trafilatura itself has no time limit on `extract` (its `EXTRACTION_TIMEOUT` setting applies
    only to its command-line batch mode), and a signal-based alarm would only work in the main
    thread, while Beam runs DoFns in worker threads. So the extraction runs in a helper thread
    that the caller waits on for at most `timeout_s`. Python cannot stop a thread: on timeout the
    helper keeps running in the background until it finishes, and its result is discarded.
    `max_chars` bounds how long that can be. :func:`extract_main_texts` does many pages in one
    hand-off to the helper.

    Args:
        html: The decoded page.
        url: The page URL, used by trafilatura for relative links and some heuristics.
        max_chars: The page is cut to this many characters before extraction.
        timeout_s: Seconds to wait for the extraction; None waits without limit (and runs in
            the calling thread).

    Returns:
        The main text, or "" when the page has none.

    Raises:
        ExtractionTimeout: The extraction took longer than `timeout_s`.
        ExtractionError: trafilatura raised.
    """
    if timeout_s is None:
        return _extract_page(html, url, max_chars)
    [text] = extract_main_texts([(html, url)], max_chars=max_chars, timeout_s=timeout_s)
    if isinstance(text, Exception):
        raise text
    return text


def extract_main_texts(
    pages: Sequence[tuple[str, str | None]],
    *,
    max_chars: int = DEFAULT_MAX_CHARS,
    timeout_s: float | None = DEFAULT_TIMEOUT_S,
) -> list[str | Exception]:
    """:func:`extract_main_text` of each ``(html, url)``, in order: the main text, or in its
    place the `ExtractionError` (or `ExtractionTimeout`) that the page alone would raise.

    With a time limit, the pages go to the helper thread in one hand-off and are extracted
    one after the other there, while the caller sleeps until the batch is done or the page
    under way has taken `timeout_s` (counted from when the page started). A page past its
    limit is `ExtractionTimeout`; its helper is left to finish that page alone (it starts no
    other), and the pages after it go to a fresh helper. One hand-off per page instead cost
    about 6 % of the extraction's time on small pages (the sample's, a few milliseconds each),
    nothing measurable on real ones (bench/extraction_call.py, docs/benchmarks.md). An
    error on the caller's side (a helper thread that cannot start) is handed back in place of
    each page it leaves undone; the pages done before it keep their texts.
    """
    if timeout_s is None:
        return [_extract_or_error(html, url, max_chars) for html, url in pages]
    if not 0 < timeout_s <= threading.TIMEOUT_MAX:
        raise ValueError(f"timeout_s must be positive and at most {threading.TIMEOUT_MAX}, "
                         f"got {timeout_s}")
    pages = list(pages)
    texts: list[str | Exception] = []
    while len(texts) < len(pages):
        try:
            worker = getattr(_workers, "thread", None)
            if worker is None:
                worker = _workers.thread = _ExtractionThread()
            done, finished = worker.run(
                [functools.partial(_extract_or_error, html, url, max_chars)
                 for html, url in pages[len(texts):]], timeout_s)
        except Exception as error:  # noqa: BLE001 - the caller's side, not a page's
            _retire()
            return texts + [error] * (len(pages) - len(texts))
        except BaseException:  # an interrupt: the batch is given up, its helper with it
            _retire()
            raise
        texts += done
        if not finished:
            # The helper is still busy with the runaway page: retire it (it exits once that
            # page is done) and give this calling thread a fresh one for the pages after it.
            _retire()
            texts.append(ExtractionTimeout(f"extraction took longer than {timeout_s} s"))
    return texts


def _retire() -> None:
    """Let this calling thread's helper exit once it is idle; the next call starts another."""
    worker = getattr(_workers, "thread", None)
    _workers.thread = None
    if worker is not None:
        worker.requests.put(None)


def _extract_page(html: str, url: str | None, max_chars: int) -> str:
    html = html[:max_chars]
    if not html.strip():
        return ""
    try:
        text = trafilatura.extract(
            html,
            url=url,
            output_format="txt",
            include_comments=False,
            include_tables=False,
            include_images=False,
            include_links=False,
            include_formatting=False,
            deduplicate=False,
            with_metadata=False,
            config=_SETTINGS,
        )
    except Exception as error:
        raise ExtractionError(f"{type(error).__name__}: {error}") from error
    return (text or "").strip()


class _SettingsReadOnce(ConfigParser):
    """trafilatura's settings, each value converted once and kept: trafilatura reads them
    through ``getint`` and its siblings, builds its ``Extractor`` (eight of them) on every
    call, and configparser's lookup and interpolation took about 2 % of a small page's
    extraction. The values are those of ``trafilatura.settings.DEFAULT_CONFIG``, which nothing
    here changes; a call with any keyword (``fallback``, ``raw``, ``vars``) is not kept."""

    def __init__(self, settings: ConfigParser) -> None:
        super().__init__()
        self.read_dict({"DEFAULT": dict(settings.defaults()),
                        **{name: dict(settings.items(name, raw=True))
                           for name in settings.sections()}})
        self._values: dict[tuple[str, str, str], object] = {}

    def _read(self, how: str, section: str, option: str, kwargs: dict):
        if kwargs:
            return getattr(ConfigParser, how)(self, section, option, **kwargs)
        key = (how, section, option)
        try:
            return self._values[key]
        except KeyError:
            value = self._values[key] = getattr(ConfigParser, how)(self, section, option)
            return value

    def get(self, section, option, **kwargs):  # type: ignore[override]
        return self._read("get", section, option, kwargs)

    def getint(self, section, option, **kwargs):  # type: ignore[override]
        return self._read("getint", section, option, kwargs)

    def getfloat(self, section, option, **kwargs):  # type: ignore[override]
        return self._read("getfloat", section, option, kwargs)

    def getboolean(self, section, option, **kwargs):  # type: ignore[override]
        return self._read("getboolean", section, option, kwargs)


_SETTINGS = _SettingsReadOnce(DEFAULT_CONFIG)


def _extract_or_error(html: str, url: str | None, max_chars: int) -> str | ExtractionError:
    try:
        return _extract_page(html, url, max_chars)
    except ExtractionError as error:
        return error


class _Batch:
    """Pages handed to an :class:`_ExtractionThread`: their calls, the results so far, which
    call is under way since when (``current``), and whether the caller has given up
    (``cancelled``). The helper starts a call, and records its result, only under ``lock``
    and while not cancelled; the caller reads and cancels under it: so a batch given up at
    page k holds the results of the pages before it, and no later page is started."""

    def __init__(self, functions: list[Callable[[], _T]]) -> None:
        self.functions: list[Callable[[], _T]] | None = functions
        self.results: list[_T] = []
        self.current = (0, time.monotonic())
        self.cancelled = False
        self.error: BaseException | None = None
        self.lock = threading.Lock()
        self.done = threading.Event()

    def start(self, index: int) -> bool:
        """The helper: whether call ``index`` may start (then its clock starts now)."""
        with self.lock:
            if self.cancelled:
                return False
            self.current = (index, time.monotonic())
            return True

    def overdue(self, timeout_s: float) -> float:
        """The caller: seconds left to the call under way (> 0), else 0 after cancelling."""
        with self.lock:
            index, started = self.current
            if len(self.results) > index:  # done with it, the next not started yet
                return timeout_s
            left = started + timeout_s - time.monotonic()
            if left <= 0:
                self.cancelled = True
                return 0.0
            return left


class _ExtractionThread:
    """A long-lived daemon thread that runs extractions for one calling thread.

    Starting a thread per page costs more than a small page's extraction; this one is reused.
    A daemon, so that a runaway extraction never keeps the process from exiting.
    """

    def __init__(self) -> None:
        self.requests: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="extract_main_text", daemon=True).start()

    def _serve(self) -> None:
        while True:
            batch = self.requests.get()
            if batch is None:  # retired: finish and exit
                return
            self._run(batch)
            del batch  # an idle helper holds no page

    @staticmethod
    def _run(batch: _Batch) -> None:
        functions, batch.functions = batch.functions or [], None
        try:
            for index, function in enumerate(functions):
                if not batch.start(index):
                    break
                try:
                    value = function()
                except BaseException as error:  # handed to the waiting thread, which re-raises
                    batch.error = error
                    break
                with batch.lock:
                    batch.results.append(value)
        finally:
            batch.done.set()

    def run(self, functions: list[Callable[[], _T]], timeout_s: float) -> tuple[list[_T], bool]:
        """The results of ``functions`` called in turn, and True; or, where one takes longer
        than ``timeout_s``, the results before it and False (this helper is then still busy)."""
        batch = _Batch(functions)
        self.requests.put(batch)
        try:
            wait_s = timeout_s
            while not batch.done.wait(wait_s):
                wait_s = batch.overdue(timeout_s)
                if not wait_s:
                    with batch.lock:
                        return batch.results[:batch.current[0]], False
        except BaseException:
            with batch.lock:
                batch.cancelled = True
            raise
        if batch.error is not None:
            raise batch.error
        return batch.results, True


_workers = threading.local()
