"""`wikisum search --engine`: Google's, Brave's and SearXNG's APIs played by stand-ins on
127.0.0.1 that answer in each vendor's documented format, and a clock that never waits."""

from __future__ import annotations

import argparse
import json
import logging
import random
import socket
import threading
import time
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from wikisum.core import ownership, progress
from wikisum.pipeline.search import web
from wikisum.pipeline.search.engines import ENGINES, Credentials
from wikisum.pipeline.search.results import summary_path
from wikisum.workflows import websearch

KEYS = {"google": {"WIKISUM_GOOGLE_API_KEY": "AIzaTEST-google-key-0123456789",
                   "WIKISUM_GOOGLE_CX": "cx-test-0123:abcdef"},
        "brave": {"WIKISUM_BRAVE_API_KEY": "BSA-test-brave-key-0123456789"},
        "searxng": {}}
ENGINE_NAMES = ("google", "brave", "searxng")
START = 1_760_000_000.0  # 2025-10-09T08:53:20Z, the stand-in clock's start


def urls_for(query: str, n: int = 3) -> list[str]:
    slug = query.lower().replace(" ", "-")
    return [f"https://site{i}.example.org/{slug}" for i in range(n)]


def answer(engine: str, query: str, urls: list[str]) -> dict:
    """An answer in the vendor's documented shape."""
    if engine == "google":
        body = {"kind": "customsearch#search", "queries": {"request": [{"searchTerms": query}]},
                "searchInformation": {"totalResults": str(len(urls))}}
        if urls:  # Google leaves "items" out when nothing was found
            body["items"] = [{"kind": "customsearch#result", "title": u, "link": u,
                              "displayLink": urlsplit(u).hostname} for u in urls]
        return body
    if engine == "brave":
        body = {"type": "search", "query": {"original": query}}
        if urls:  # Brave leaves "web" out when there are no web results
            body["web"] = {"type": "search", "results": [
                {"title": u, "url": u, "description": "...", "family_friendly": True}
                for u in urls]}
        return body
    return {"query": query, "number_of_results": len(urls), "answers": [], "suggestions": [],
            "results": [{"url": u, "title": u, "content": "...", "engine": "duckduckgo"}
                        for u in urls]}


def reply(status: int = 200, body=b"", headers: dict | None = None) -> tuple:
    if not isinstance(body, bytes):
        body = json.dumps(body).encode()
    return status, headers or {}, body


GOOGLE_PER_DAY = reply(429, {"error": {
    "code": 429, "status": "RESOURCE_EXHAUSTED",
    "message": "Quota exceeded for quota metric 'Queries' and limit 'Queries per day' of service "
               "'customsearch.googleapis.com' for consumer 'project_number:123'.",
    "errors": [{"message": "Quota exceeded ...", "domain": "global",
                "reason": "rateLimitExceeded"}]}})
GOOGLE_DAILY_LIMIT = reply(403, {"error": {
    "code": 403, "message": "Daily Limit Exceeded",
    "errors": [{"domain": "usageLimits", "reason": "dailyLimitExceeded",
                "message": "Daily Limit Exceeded"}]}})
BRAVE_MONTH_SPENT = reply(429, {"type": "ErrorResponse", "error": {
    "id": "x", "status": 429, "code": "RATE_LIMITED",
    "detail": "Request rate limit exceeded for plan", "meta": {"plan": "Free"}}},
    {"X-RateLimit-Limit": "1, 2000", "X-RateLimit-Policy": "1;w=1, 2000;w=2592000",
     "X-RateLimit-Remaining": "1, 0", "X-RateLimit-Reset": "1, 1419704"})
QUOTA = {"google": GOOGLE_PER_DAY, "brave": BRAVE_MONTH_SPENT}


class QuietServer(ThreadingHTTPServer):
    """A server whose client may hang up first (a request that times out): said nowhere."""

    def handle_error(self, request, client_address):
        pass


class StandIn:
    """A vendor's API on 127.0.0.1: each query's scripted replies in turn (then a normal
    answer with :func:`urls_for`), every request recorded."""

    def __init__(self, engine: str):
        self.engine = engine
        self.script: dict[str, list[tuple]] = {}
        self.delay = 0.0
        self.requests: list[tuple[str, dict, dict]] = []
        self.lock = threading.Lock()
        self.server = QuietServer(("127.0.0.1", 0), self.handler())
        self.server.block_on_close = False
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02},
                         daemon=True).start()

    @property
    def endpoint(self) -> str:
        return self.base if self.engine == "searxng" else self.base + "/search-api"

    def queries(self) -> list[str]:
        return [params.get("q", [""])[0] for _, params, _ in self.requests]

    def handler(self):
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                parts = urlsplit(self.path)
                params = parse_qs(parts.query)
                query = params.get("q", [""])[0]
                path = "/search" if stand_in.engine == "searxng" else "/search-api"
                with stand_in.lock:
                    stand_in.requests.append((parts.path, params, dict(self.headers)))
                    queued = stand_in.script.get(query)
                    if parts.path != path:
                        status, headers, body = reply(404, b"<html>Not Found</html>")
                    else:
                        status, headers, body = (queued.pop(0) if queued else reply(
                            200, answer(stand_in.engine, query, urls_for(query))))
                if stand_in.delay:
                    time.sleep(stand_in.delay)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        return Handler

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class FakeTime:
    """Clocks that move only when slept on; every sleep recorded."""

    def __init__(self, start: float = START):
        self.now = start
        self.sleeps: list[float] = []

    def timing(self) -> web.Timing:
        return web.Timing(monotonic=lambda: self.now, wall=lambda: self.now, sleep=self.sleep,
                          rng=random.Random(7))

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture(params=ENGINE_NAMES)
def engine(request) -> str:
    return request.param


@pytest.fixture
def stand_in(engine):
    server = StandIn(engine)
    yield server
    server.close()


@pytest.fixture
def clock(monkeypatch) -> FakeTime:
    fake = FakeTime()
    monkeypatch.setattr(web, "default_timing", fake.timing)
    return fake


@pytest.fixture
def keys(engine, monkeypatch) -> dict:
    for name in ("WIKISUM_GOOGLE_API_KEY", "WIKISUM_GOOGLE_CX", "WIKISUM_BRAVE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in KEYS[engine].items():
        monkeypatch.setenv(name, value)
    return KEYS[engine]


def namespace(stand_in: StandIn, out: Path, **options) -> argparse.Namespace:
    values = dict(engine=stand_in.engine, endpoint=stand_in.endpoint, cache=None, qps=None,
                  daily_quota=None, dry_run=False, price_per_1000=None, retries=3, timeout=5.0,
                  out=str(out), k=10, query="title", exclude_sites=None)
    values.update(options)
    return argparse.Namespace(**values)


def results(out: Path) -> list[dict]:
    return [json.loads(line) for line in out.read_text().splitlines()]


def summary_of(out: Path) -> dict:
    return json.loads(Path(summary_path(str(out))).read_text())


# ------------------------------------------------------------------------------------------
# Answers


def test_each_engine_is_asked_as_documented_and_its_answer_written(stand_in, keys, clock,
                                                                   tmp_path):
    stand_in.script["Loumbury"] = [reply(200, answer(stand_in.engine, "Loumbury", [
        "https://en.wikipedia.org/wiki/Loumbury", "https://www.loumbury.example/history",
        "https://www.wikiwand.com/en/Loumbury", "https://news.example.com/loumbury"]))]
    out = tmp_path / "results.jsonl"
    args = namespace(stand_in, out)
    assert websearch.run(args, ["Loumbury", "Sailhaven_(town)"]) == 0

    assert results(out) == [
        {"title": "Loumbury", "urls": ["https://www.loumbury.example/history",
                                       "https://news.example.com/loumbury"],
         "scores": [None, None], "engine": stand_in.engine, "query": "Loumbury"},
        {"title": "Sailhaven_(town)", "urls": urls_for("Sailhaven (town)"),
         "scores": [None] * 3, "engine": stand_in.engine, "query": "Sailhaven (town)"}]
    path, params, headers = stand_in.requests[0]
    headers = {k.lower(): v for k, v in headers.items()}
    if stand_in.engine == "google":
        assert params == {"cx": [keys["WIKISUM_GOOGLE_CX"]], "q": ["Loumbury"], "num": ["10"]}
        assert headers["x-goog-api-key"] == keys["WIKISUM_GOOGLE_API_KEY"]
    elif stand_in.engine == "brave":
        assert params == {"q": ["Loumbury"], "count": ["20"]}
        assert headers["x-subscription-token"] == keys["WIKISUM_BRAVE_API_KEY"]
    else:
        assert path == "/search" and params == {"q": ["Loumbury"], "format": ["json"]}
    summary = summary_of(out)
    assert summary["balanced"] and summary["stopped"] is None
    assert summary["stages"]["result_urls"] == {
        "in": 7, "kept": 5, "dropped": {"mirror": 1, "wikipedia": 1}, "balanced": True}
    assert summary["answers"] == {"asked": 2, "from_cache": 0}


def test_k_caps_the_urls_and_bad_titles_are_counted_drops_never_asked(clock, tmp_path,
                                                                      monkeypatch):
    server = StandIn("searxng")
    try:
        out = tmp_path / "r.jsonl"
        titles = ["Loumbury", "  ", "a\x07b", "loumbury", "x" * 2000, "Sailhaven"]
        assert websearch.run(namespace(server, out, k=2), titles) == 0
    finally:
        server.close()
    assert server.queries() == ["Loumbury", "Sailhaven"]
    assert [len(r["urls"]) for r in results(out)] == [2, 2]
    summary = summary_of(out)
    assert summary["stages"]["titles"]["dropped"] == {
        "control_characters": 1, "duplicate_title": 1, "empty_title": 1, "title_too_long": 1}
    assert summary["stages"]["result_urls"]["dropped"] == {"beyond_k": 2}
    assert [d[:2] for d in summary["dropped_titles"]] == [
        [2, "empty_title"], [3, "control_characters"], [4, "duplicate_title"],
        [5, "title_too_long"]]


def test_an_empty_result_is_an_answer_with_no_urls_and_is_cached(stand_in, keys, clock,
                                                                 tmp_path):
    stand_in.script["Nowhere"] = [reply(200, answer(stand_in.engine, "Nowhere", []))]
    out = tmp_path / "r.jsonl"
    assert websearch.run(namespace(stand_in, out), ["Nowhere"]) == 0
    assert results(out)[0]["urls"] == []
    assert websearch.run(namespace(stand_in, out), ["Nowhere"]) == 0
    assert stand_in.queries() == ["Nowhere"]  # the rerun answered from the cache
    assert summary_of(out)["answers"] == {"asked": 0, "from_cache": 1}


@pytest.mark.parametrize("body", [b"<html>Service Unavailable</html>", b'{"items": [',
                                  b"\xff\xfe not utf-8"])
def test_a_malformed_answer_is_a_counted_failure_naming_the_title(body, stand_in, keys, clock,
                                                                  tmp_path, capsys):
    stand_in.script["Brokenham"] = [reply(200, body)]
    out = tmp_path / "r.jsonl"
    assert websearch.run(namespace(stand_in, out), ["Loumbury", "Brokenham", "Sailhaven"]) == 1
    assert [r["title"] for r in results(out)] == ["Loumbury", "Sailhaven"]
    summary = summary_of(out)
    assert summary["stages"]["queries"]["dropped"] == {"bad_json": 1}
    assert [d[1:3] for d in summary["dropped_titles"]] == [["bad_json", "Brokenham"]]
    assert "1 titles failed (bad_json 1)" in capsys.readouterr().err
    # a failure is not cached: the rerun asks it again
    assert websearch.run(namespace(stand_in, out), ["Loumbury", "Brokenham", "Sailhaven"]) == 0
    assert stand_in.queries().count("Brokenham") == 2


WRONG_SHAPES = {
    "google": [[], {"items": {"link": "https://a.example"}}, {"items": [{"link": 7}]},
               {"items": ["https://a.example"]}, {"items": [{"title": "no link"}]}],
    "brave": [[], {"web": []}, {"web": {"results": [{"url": None}]}},
              {"web": {"results": "https://a.example"}}, {"web": {"results": [["x"]]}}],
    "searxng": [[], {"query": "x"}, {"results": [{"url": 3.5}]}, {"results": {}},
                "just a string"],
}


@pytest.mark.parametrize("which", range(5))
def test_an_answer_of_the_wrong_shape_is_a_counted_failure(which, stand_in, keys, clock,
                                                           tmp_path):
    stand_in.script["Oddity"] = [reply(200, WRONG_SHAPES[stand_in.engine][which])]
    out = tmp_path / "r.jsonl"
    assert websearch.run(namespace(stand_in, out), ["Oddity", "Loumbury"]) == 1
    assert [r["title"] for r in results(out)] == ["Loumbury"]
    summary = summary_of(out)
    assert summary["stages"]["queries"] == {"in": 2, "kept": 1, "dropped": {"bad_shape": 1},
                                            "balanced": True}
    assert summary["dropped_titles"][0][1:3] == ["bad_shape", "Oddity"]


def test_urls_that_are_no_web_pages_are_dropped_not_written(clock, tmp_path):
    server = StandIn("searxng")
    server.script["Loumbury"] = [reply(200, answer("searxng", "Loumbury", [
        "javascript:alert(1)", "", "https://ok.example/a", "\ud800"]))]
    try:
        out = tmp_path / "r.jsonl"
        assert websearch.run(namespace(server, out), ["Loumbury"]) == 0
    finally:
        server.close()
    assert results(out)[0]["urls"] == ["https://ok.example/a"]
    assert summary_of(out)["stages"]["result_urls"]["dropped"] == {"not_http": 3}


# ------------------------------------------------------------------------------------------
# Retries, rate limits, quotas


def test_a_429_waits_as_long_as_retry_after_says(stand_in, keys, clock, tmp_path):
    stand_in.script["Loumbury"] = [reply(429, {"error": {"code": 429, "message": "slow down"}},
                                         {"Retry-After": "7"})]
    out = tmp_path / "r.jsonl"
    assert websearch.run(namespace(stand_in, out, qps=1000), ["Loumbury"]) == 0
    assert stand_in.queries() == ["Loumbury", "Loumbury"]
    assert 7.0 in clock.sleeps
    assert summary_of(out)["requests"] == {"sent": 2, "retried": 1,
                                           "by_status": {"200": 1, "429": 1}}


def test_a_retry_after_date_is_waited_for_until_then(clock, tmp_path):
    server = StandIn("searxng")
    server.script["Loumbury"] = [reply(503, b"busy", {
        "Retry-After": formatdate(START + 42, usegmt=True)})]
    try:
        assert websearch.run(namespace(server, tmp_path / "r.jsonl", qps=1000),
                             ["Loumbury"]) == 0
    finally:
        server.close()
    assert clock.sleeps == [pytest.approx(42.0)]


def test_server_errors_are_retried_with_growing_jittered_backoff(stand_in, keys, clock,
                                                                 tmp_path):
    stand_in.script["Loumbury"] = [reply(503, b"busy"), reply(500, b"oops"),
                                   reply(502, b"bad gateway")]
    out = tmp_path / "r.jsonl"
    assert websearch.run(namespace(stand_in, out, qps=1000), ["Loumbury"]) == 0
    assert len(clock.sleeps) == 3
    for attempt, slept in enumerate(clock.sleeps):  # half to all of 1 s, 2 s, 4 s
        assert 0.5 * 2 ** attempt <= slept <= 2 ** attempt
    rng = random.Random(7)  # the same draws: deterministic
    assert clock.sleeps == [2 ** a * (0.5 + 0.5 * rng.random()) for a in range(3)]
    assert results(out)[0]["urls"] == urls_for("Loumbury")


def test_retries_spent_make_the_title_a_counted_failure(clock, tmp_path):
    server = StandIn("searxng")
    server.script["Loumbury"] = [reply(500, b"down")] * 3
    try:
        out = tmp_path / "r.jsonl"
        assert websearch.run(namespace(server, out, retries=2, qps=1000),
                             ["Loumbury", "Sailhaven"]) == 1
    finally:
        server.close()
    assert server.queries() == ["Loumbury"] * 3 + ["Sailhaven"]
    summary = summary_of(out)
    assert summary["stages"]["queries"]["dropped"] == {"server_error": 1}
    assert "after 3 tries" in summary["dropped_titles"][0][3]


def test_requests_are_paced_at_the_rate(clock, tmp_path):
    server = StandIn("searxng")
    try:
        assert websearch.run(namespace(server, tmp_path / "r.jsonl", qps=4),
                             ["A", "B", "C"]) == 0
    finally:
        server.close()
    assert clock.sleeps == [0.25, 0.25]


def test_brave_slows_to_the_rate_its_plan_header_names(clock, tmp_path, monkeypatch):
    monkeypatch.setenv("WIKISUM_BRAVE_API_KEY", KEYS["brave"]["WIKISUM_BRAVE_API_KEY"])
    server = StandIn("brave")
    server.script["A"] = [reply(200, answer("brave", "A", urls_for("A")),
                                {"X-RateLimit-Limit": "2, 2000"})]
    try:
        assert websearch.run(namespace(server, tmp_path / "r.jsonl", qps=100),
                             ["A", "B"]) == 0
    finally:
        server.close()
    assert clock.sleeps == [0.5]


def test_a_timeout_is_retried_then_counted(clock, tmp_path):
    server = StandIn("searxng")
    server.delay = 0.6
    try:
        out = tmp_path / "r.jsonl"
        assert websearch.run(namespace(server, out, timeout=0.2, retries=1, qps=1000),
                             ["Loumbury"]) == 1
    finally:
        server.close()
    assert summary_of(out)["stages"]["queries"]["dropped"] == {"timeout": 1}


@pytest.mark.parametrize("engine", ["google", "brave"])
def test_a_spent_vendor_quota_stops_the_run_and_a_rerun_resumes(stand_in, keys, clock,
                                                                tmp_path, capsys):
    titles = ["A", "B", "C", "D", "E"]
    stand_in.script["B"] = [QUOTA[stand_in.engine]]
    out = tmp_path / "r.jsonl"
    assert websearch.run(namespace(stand_in, out), titles) == 1
    assert stand_in.queries() == ["A", "B"]  # never retried, nothing asked after it
    # not whole: kept aside, never under the name ingest reads
    assert not out.exists()
    assert [r["title"] for r in results(tmp_path / "r.partial.jsonl")] == ["A"]
    summary = summary_of(out)
    assert summary["stopped"]["reason"] == "vendor_quota"
    assert summary["stopped"]["titles_left"] == 4
    assert summary["stages"]["queries"]["dropped"] == {"left_for_rerun": 4}
    err = capsys.readouterr().err
    assert "quota is spent" in err and "4 titles are left" in err and "resumes" in err

    assert websearch.run(namespace(stand_in, out), titles) == 0
    assert stand_in.queries() == ["A", "B", "B", "C", "D", "E"]
    assert [r["title"] for r in results(out)] == titles
    assert not (tmp_path / "r.partial.jsonl").exists()


def test_google_daily_limit_exceeded_stops_the_run(clock, tmp_path, monkeypatch):
    for name, value in KEYS["google"].items():
        monkeypatch.setenv(name, value)
    server = StandIn("google")
    server.script["A"] = [GOOGLE_DAILY_LIMIT]
    try:
        out = tmp_path / "r.jsonl"
        assert websearch.run(namespace(server, out), ["A", "B"]) == 1
    finally:
        server.close()
    assert summary_of(out)["stopped"]["titles_left"] == 2 and server.queries() == ["A"]


def test_a_per_minute_429_from_google_is_retried_not_a_stop(clock, tmp_path, monkeypatch):
    for name, value in KEYS["google"].items():
        monkeypatch.setenv(name, value)
    server = StandIn("google")
    server.script["A"] = [reply(429, {"error": {
        "code": 429, "status": "RESOURCE_EXHAUSTED",
        "message": "Quota exceeded for quota metric 'Queries' and limit 'Queries per minute'",
        "errors": [{"reason": "rateLimitExceeded", "domain": "global"}]}})]
    try:
        assert websearch.run(namespace(server, tmp_path / "r.jsonl"), ["A"]) == 0
    finally:
        server.close()
    assert server.queries() == ["A", "A"]


def test_a_refused_key_stops_the_run(clock, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WIKISUM_BRAVE_API_KEY", "BSA-wrong")
    server = StandIn("brave")
    server.script["A"] = [reply(401, {"type": "ErrorResponse", "error": {
        "status": 401, "code": "SUBSCRIPTION_TOKEN_INVALID", "detail": "invalid token"}})]
    try:
        out = tmp_path / "r.jsonl"
        assert websearch.run(namespace(server, out), ["A", "B", "C"]) == 1
    finally:
        server.close()
    assert server.queries() == ["A"]
    assert summary_of(out)["stopped"]["reason"] == "refused"
    assert "brave refused the request (HTTP 401" in capsys.readouterr().err


def test_a_wrong_endpoint_stops_the_run_at_the_first_answer(clock, tmp_path, capsys):
    server = StandIn("searxng")
    try:
        out = tmp_path / "r.jsonl"
        args = namespace(server, out, endpoint=server.base + "/not-searxng")
        assert websearch.run(args, ["A", "B"]) == 1
    finally:
        server.close()
    assert len(server.requests) == 1
    assert "is --endpoint right?" in capsys.readouterr().err


def test_a_title_source_that_breaks_is_one_line_and_its_answers_stay_cached(clock, tmp_path):
    from wikisum.pipeline.dumps import DumpError

    def titles():
        yield "A"
        raise DumpError("the dump is damaged after 1 page", 1)

    server = StandIn("searxng")
    out = tmp_path / "r.jsonl"
    try:
        with pytest.raises(SystemExit, match="reading the titles: the dump is damaged"):
            websearch.run(namespace(server, out), titles())
        assert not out.exists() and not list(tmp_path.glob(".*.tmp"))
        assert websearch.run(namespace(server, out), ["A"]) == 0
    finally:
        server.close()
    assert server.queries() == ["A"]


def test_the_daily_quota_holds_across_runs_and_resets_the_next_utc_day(clock, tmp_path,
                                                                       capsys):
    server = StandIn("searxng")
    titles = ["A", "B", "C", "D", "E"]
    out = tmp_path / "r.jsonl"
    try:
        assert websearch.run(namespace(server, out, daily_quota=2), titles[:1]) == 0
        assert websearch.run(namespace(server, out, daily_quota=2), titles) == 1
        assert server.queries() == ["A", "B"]  # two today, across the two runs
        assert [r["title"] for r in results(tmp_path / "r.partial.jsonl")] == ["A", "B"]
        summary = summary_of(out)
        assert summary["stopped"]["reason"] == "daily_quota"
        assert summary["stopped"]["titles_left"] == 3
        assert summary["daily_quota"] == {"day": "2025-10-09", "used": 2, "limit": 2}
        assert "after midnight UTC" in capsys.readouterr().err

        assert websearch.run(namespace(server, out, daily_quota=2), titles) == 1
        assert server.queries() == ["A", "B"]  # the same day: nothing more

        clock.now += 86_400
        assert websearch.run(namespace(server, out, daily_quota=2), titles) == 1
        assert websearch.run(namespace(server, out, daily_quota=0), titles) == 0  # no limit
    finally:
        server.close()
    assert server.queries() == ["A", "B", "C", "D", "E"]
    assert [r["title"] for r in results(out)] == titles
    ledger = json.loads((tmp_path / "r.cache" / "quota-searxng.json").read_text())
    assert ledger == {"engine": "searxng", "day": "2025-10-10", "used": 3}


# ------------------------------------------------------------------------------------------
# The cache


def test_a_rerun_asks_nothing_and_writes_the_same(stand_in, keys, clock, tmp_path):
    out = tmp_path / "r.jsonl"
    titles = ["Loumbury", "Sailhaven", "Ostra"]
    assert websearch.run(namespace(stand_in, out), titles) == 0
    first = out.read_bytes()
    asked = len(stand_in.requests)
    assert websearch.run(namespace(stand_in, out), titles) == 0
    assert len(stand_in.requests) == asked == 3
    assert out.read_bytes() == first
    assert summary_of(out)["answers"] == {"asked": 0, "from_cache": 3}


class Killed(BaseException):
    pass


def test_a_killed_run_resumed_asks_only_the_rest(clock, tmp_path, monkeypatch):
    server = StandIn("searxng")
    titles = ["A", "B", "C", "D", "E"]
    out = tmp_path / "r.jsonl"

    def sleep_then_die(seconds):
        if len(clock.sleeps) == 1:  # the pause before the third request
            raise Killed
        clock.sleep(seconds)

    monkeypatch.setattr(web, "default_timing", lambda: web.Timing(
        monotonic=lambda: clock.now, wall=lambda: clock.now, sleep=sleep_then_die))
    try:
        with pytest.raises(Killed):
            websearch.run(namespace(server, out), titles)
        assert server.queries() == ["A", "B"]
        assert not out.exists()  # nothing half-written
        assert [p.name for p in tmp_path.iterdir()] == ["r.cache"]
        monkeypatch.setattr(web, "default_timing", clock.timing)
        assert websearch.run(namespace(server, out), titles) == 0
    finally:
        server.close()
    assert server.queries() == ["A", "B", "C", "D", "E"]
    assert [r["title"] for r in results(out)] == titles
    assert summary_of(out)["answers"] == {"asked": 3, "from_cache": 2}


def test_a_cache_entry_that_does_not_read_is_asked_again_and_counted(clock, tmp_path):
    server = StandIn("searxng")
    out = tmp_path / "r.jsonl"
    try:
        assert websearch.run(namespace(server, out), ["A", "B"]) == 0
        entries = sorted((tmp_path / "r.cache" / "answers").rglob("*.json"))
        assert len(entries) == 2
        entries[0].write_text('{"format": 1, "urls": [')
        entries[1].write_text(json.dumps({"format": 1, "urls": [1, 2]}))
        assert websearch.run(namespace(server, out), ["A", "B"]) == 0
    finally:
        server.close()
    assert server.queries() == ["A", "B", "A", "B"]
    assert summary_of(out)["cache"] == {"bad_entries": 2}
    assert [len(r["urls"]) for r in results(out)] == [3, 3]


def test_the_cache_is_an_owned_output_and_an_earlier_runs_cache_is_taken_up(clock, tmp_path):
    server = StandIn("searxng")
    cache = tmp_path / "shared-cache"
    try:
        first = namespace(server, tmp_path / "one.jsonl", cache=str(cache))
        assert websearch.outputs(first) == [
            ownership.Output("--out", str(tmp_path / "one.jsonl"), "file"),
            ownership.Output("--out", str(tmp_path / "one.summary.json"), "file"),
            ownership.Output("--out", str(tmp_path / "one.partial.jsonl"), "file"),
            ownership.Output("--cache", str(cache), "dir")]
        with ownership.guarded("search", websearch.outputs(first)):
            assert websearch.run(first, ["A"]) == 0
        second = namespace(server, tmp_path / "two.jsonl", cache=str(cache))
        with ownership.guarded("search", websearch.outputs(second)):
            assert websearch.run(second, ["A", "B"]) == 0
        assert server.queries() == ["A", "B"]
        assert ownership.read_marker(str(cache))["command"] == "search"
        assert websearch.outputs(namespace(server, tmp_path / "r.jsonl"))[-1].path == str(
            tmp_path / "r.cache")
        assert websearch.outputs(namespace(server, tmp_path / "r.jsonl", dry_run=True)) == []

        mine = tmp_path / "mine"
        mine.mkdir()
        (mine / "notes.txt").write_text("keep")
        with pytest.raises(SystemExit, match="holds files wikisum did not write"):
            websearch.run(namespace(server, tmp_path / "x.jsonl", cache=str(mine)), ["A"])
    finally:
        server.close()
    assert (mine / "notes.txt").read_text() == "keep"


# ------------------------------------------------------------------------------------------
# Dry run


def test_a_dry_run_counts_the_queries_left_and_their_cost_and_asks_nothing(clock, tmp_path,
                                                                           capsys,
                                                                           monkeypatch):
    for name, value in KEYS["google"].items():
        monkeypatch.setenv(name, value)
    server = StandIn("google")
    out = tmp_path / "r.jsonl"
    try:
        assert websearch.run(namespace(server, out), ["A", "B"]) == 0
        before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
        stamps = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")}
        capsys.readouterr()
        titles = ["A", "B", "C", "D", "c", "", "E"]
        assert websearch.run(namespace(server, out, dry_run=True), titles) == 0
        said = capsys.readouterr().out
        assert websearch.run(namespace(server, out, dry_run=True, price_per_1000=12.5),
                             titles) == 0
        priced = capsys.readouterr().out
        assert websearch.run(namespace(server, out, dry_run=True, daily_quota=3), titles) == 0
        days = capsys.readouterr().out
    finally:
        server.close()
    assert server.queries() == ["A", "B"]  # the dry runs asked nothing
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")} == stamps
    assert "7 titles read, 5 to search (dropped: duplicate_title 1, empty_title 1)" in said
    assert "2 answered from the cache" in said and "3 queries to ask" in said
    assert "$0.01 at $5.00 per 1,000 queries (Google's documented price" in said
    assert "100 requests a UTC day, 2 used today: 3 asked today" in said
    assert "$0.04 at $12.50 per 1,000 queries (--price-per-1000)" in priced
    assert "3 requests a UTC day, 2 used today: 1 asked today, the other 2 over 1 more days" \
        in days


def test_a_dry_run_of_a_fresh_output_creates_no_cache(tmp_path, capsys):
    args = argparse.Namespace(engine="searxng", endpoint="http://127.0.0.1:9", cache=None,
                              qps=None, daily_quota=None, dry_run=True, price_per_1000=None,
                              retries=1, timeout=1.0, out=str(tmp_path / "r.jsonl"), k=10,
                              query="title", exclude_sites=None)
    assert websearch.run(args, ["A", "B"]) == 0
    assert list(tmp_path.iterdir()) == []
    said = capsys.readouterr().out
    assert "2 queries to ask" in said and "cost: none known (self-hosted" in said


# ------------------------------------------------------------------------------------------
# Secrets


@pytest.mark.parametrize("engine", ["google", "brave"])
def test_no_key_reaches_any_file_message_or_log_line(stand_in, keys, clock, tmp_path, capsys,
                                                     caplog):
    """The stand-in echoes the key in its error messages, and fails in every way it can; the
    key must still be nowhere: not in a file written (bytes, recursively), not on stdout or
    stderr, not in a log record."""
    secrets = list(keys.values())
    echo = " ".join(secrets)
    stand_in.script.update({
        "Bad request": [reply(400, {"error": {"code": 400, "message": f"bad key {echo}"}})],
        "Flaky": [reply(500, {"error": {"code": 500, "message": f"oops {echo}"}}),
                  reply(503, f"down {echo}".encode())],
        "Broken": [reply(200, f"<html>{echo}</html>".encode())],
        "Odd": [reply(200, {"items": [{"link": 1}], "web": {"results": [{"url": 1}]},
                            "echo": echo})],
        "Last": [QUOTA[stand_in.engine]],
    })
    caplog.set_level(logging.DEBUG, logger="wikisum")
    progress.set_verbosity(progress.VERBOSE)
    out = tmp_path / "r.jsonl"
    titles = ["Loumbury", "Bad request", "Flaky", "Broken", "Odd", "Last", "After"]
    assert websearch.run(namespace(stand_in, out, qps=1000), titles) == 1
    assert websearch.run(namespace(stand_in, out, qps=1000, dry_run=True), titles) == 0
    # no answer at all: a port nothing listens on
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}/search-api"
    assert websearch.run(namespace(stand_in, tmp_path / "c.jsonl", endpoint=closed, retries=1,
                                   qps=1000), ["Loumbury"]) == 1
    with pytest.raises(SystemExit) as refused:
        websearch.run(namespace(stand_in, out, endpoint="http://search.example.com/api"),
                      ["Loumbury"])
    captured = capsys.readouterr()

    summary = summary_of(out)
    assert summary["stages"]["queries"]["dropped"]["http_400"] == 1
    assert summary["stopped"]["reason"] == "vendor_quota"
    assert "***" in json.dumps(summary)  # the echoed key was blanked, not dropped silently
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(written) > 8
    texts = [p.read_bytes() for p in written] + [
        captured.out.encode(), captured.err.encode(), caplog.text.encode(),
        str(refused.value).encode(), repr(Credentials("k-SECRET", "c-SECRET")).encode()]
    from urllib.parse import quote
    for secret in secrets + ["k-SECRET", "c-SECRET"]:
        for spelling in {secret, quote(secret, safe="")}:
            assert not any(spelling.encode() in text for text in texts), spelling
    assert "https://" in str(refused.value)


def test_a_missing_key_is_one_line_naming_the_variables(tmp_path, monkeypatch):
    for name in ("WIKISUM_GOOGLE_API_KEY", "WIKISUM_GOOGLE_CX"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("WIKISUM_GOOGLE_CX", "cx-present-value")
    args = argparse.Namespace(engine="google", endpoint=None, cache=None, qps=None,
                              daily_quota=None, dry_run=False, price_per_1000=None, retries=1,
                              timeout=1.0, out=str(tmp_path / "r.jsonl"), k=10, query="title",
                              exclude_sites=None)
    with pytest.raises(SystemExit) as exc:
        websearch.run(args, ["A"])
    message = str(exc.value)
    assert "WIKISUM_GOOGLE_API_KEY" in message and "\n" not in message
    assert "cx-present-value" not in message and "WIKISUM_GOOGLE_CX" not in message
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("change, expected", [
    (dict(engine="google", k=11), "google returns at most 10 results a request"),
    (dict(engine="brave", k=21), "brave returns at most 20"),
    (dict(engine="searxng", endpoint=None), "needs --endpoint URL"),
    (dict(engine="searxng", endpoint="ftp://host/"), "must be an http:// or https:// URL"),
    (dict(engine="searxng", endpoint="http://me:pw@127.0.0.1:8888"), "user name or password"),
    (dict(engine="searxng", endpoint="http://127.0.0.1:8888/?key=x"), "must not hold a query"),
    (dict(engine="brave", endpoint="http://api.example.com/s"), "must be https://"),
])
def test_options_that_cannot_work_are_one_line_errors(change, expected, tmp_path, monkeypatch):
    for name, value in {**KEYS["google"], **KEYS["brave"]}.items():
        monkeypatch.setenv(name, value)
    values = dict(engine="searxng", endpoint="http://127.0.0.1:9", cache=None, qps=None,
                  daily_quota=None, dry_run=False, price_per_1000=None, retries=1, timeout=1.0,
                  out=str(tmp_path / "r.jsonl"), k=10, query="title", exclude_sites=None)
    values.update(change)
    with pytest.raises(SystemExit, match=expected):
        websearch.run(argparse.Namespace(**values), ["A"])
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------------------
# The library function and the command line


def test_search_titles_with_an_injected_transport(tmp_path):
    """The library function needs no server: a transport function answers."""
    asked = []

    def fetch(request, timeout):
        asked.append(request)
        query = parse_qs(urlsplit(request.url).query)["q"][0]
        if query == "Mercury":
            return 200, {}, json.dumps(answer("brave", query, [
                "https://en.m.wikipedia.org/wiki/Mercury", "https://nasa.example/mercury"
            ])).encode()
        return 500, {}, b"no"

    fake = FakeTime()
    config = web.WebSearchConfig(engine="brave", out=str(tmp_path / "r.jsonl"),
                                 cache=str(tmp_path / "cache"), endpoint=ENGINES["brave"].endpoint,
                                 query="no-disambiguation", retries=1, mirrors=())
    summary = web.search_titles(config, ["Mercury (planet)", "Mercury (element)", "Venus"],
                                Credentials(key="BSA-lib-key"), fetch=fetch,
                                timing=fake.timing())
    assert [r.headers["X-Subscription-Token"] for r in asked] == ["BSA-lib-key"] * 3
    assert all("BSA-lib-key" not in r.url for r in asked)
    assert results(tmp_path / "r.jsonl") == [
        {"title": t, "urls": ["https://nasa.example/mercury"], "scores": [None],
         "engine": "brave", "query": "Mercury"} for t in ("Mercury (planet)",
                                                           "Mercury (element)")]
    assert summary["answers"] == {"asked": 1, "from_cache": 1}  # the same query, asked once
    assert summary["stages"]["queries"]["dropped"] == {"server_error": 1}
    assert summary["stages"]["result_urls"]["dropped"] == {"wikipedia": 2}
    assert summary["options"]["engine"] == "brave" and "key" not in json.dumps(
        summary["options"])
    plan = web.plan(config, ["Mercury (planet)", "Venus", "Mars"], Credentials(key="x"),
                    timing=fake.timing())
    assert (plan["cached"], plan["queries"]) == (1, 2)


def test_brave_refuses_queries_longer_than_it_takes_without_asking(tmp_path):
    def fetch(request, timeout):
        raise AssertionError("asked")

    config = web.WebSearchConfig(engine="brave", out=str(tmp_path / "r.jsonl"),
                                 cache=str(tmp_path / "c"), endpoint=ENGINES["brave"].endpoint)
    summary = web.search_titles(config, [" ".join(["word"] * 60)], Credentials(key="k"),
                                fetch=fetch, timing=FakeTime().timing())
    assert summary["stages"]["queries"]["dropped"] == {"query_too_long": 1}


def test_the_search_command_asks_the_engine(clock, tmp_path, capsys):
    from wikisum.workflows import cli

    server = StandIn("searxng")
    titles = tmp_path / "titles.txt"
    titles.write_text("Loumbury\nSailhaven\n")
    out = tmp_path / "r.jsonl"
    try:
        assert cli.main(["search", "--engine", "searxng", "--endpoint", server.base,
                         "--titles", str(titles), "--out", str(out), "--k", "2"]) == 0
    finally:
        server.close()
    assert [r["title"] for r in results(out)] == ["Loumbury", "Sailhaven"]
    assert ownership.is_ours_file(str(out), "search")
    assert "search finished" in capsys.readouterr().out


def test_a_key_with_a_line_break_is_refused_naming_the_variable_only(tmp_path, monkeypatch,
                                                                      capsys):
    monkeypatch.setenv("WIKISUM_BRAVE_API_KEY", "secret-key\r\nX-Injected: 1")
    server = StandIn("brave")
    try:
        with pytest.raises(SystemExit) as exit_:
            websearch.run(namespace(server, tmp_path / "r.jsonl"), ["A"])
    finally:
        server.close()
    message = str(exit_.value.code)
    assert "WIKISUM_BRAVE_API_KEY" in message and "secret-key" not in message
    assert server.queries() == []


def test_two_runs_sharing_a_cache_add_up_their_requests(tmp_path):
    from wikisum.pipeline.search.webcache import QuotaLedger

    first = QuotaLedger(str(tmp_path), "brave", 10)
    second = QuotaLedger(str(tmp_path), "brave", 10)
    first.spend()
    second.spend()
    first.spend()
    assert json.loads((tmp_path / "quota-brave.json").read_text())["used"] == 3
    assert QuotaLedger(str(tmp_path), "brave", 10).remaining() == 7
