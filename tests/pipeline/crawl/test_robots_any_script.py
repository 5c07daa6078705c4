"""robots.txt rules of any script apply to the URL the crawler asks for (an IDN host as
punycode, its path percent-encoded as UTF-8), whether a rule is written raw or
percent-encoded, with upper- or lower-case hex."""

import pytest

from wikisum.pipeline.crawl.checks import check_url
from wikisum.pipeline.crawl.robots import robots_policy

# (the rule's path raw, the same path percent-encoded), in Cyrillic, Japanese, Arabic, Hindi
# and Chinese
PATHS = [("/приватно/", "/%D0%BF%D1%80%D0%B8%D0%B2%D0%B0%D1%82%D0%BD%D0%BE/"),
         ("/東京", "/%E6%9D%B1%E4%BA%AC"),
         ("/خاص/", "/%D8%AE%D8%A7%D8%B5/"),
         ("/निजी", "/%E0%A4%A8%E0%A4%BF%E0%A4%9C%E0%A5%80"),
         ("/私人/", "/%E7%A7%81%E4%BA%BA/")]
HOSTS = ["http://пример.укр", "https://日本語.jp", "http://مثال.إختبار", "http://उदाहरण.भारत",
         "http://中国.cn"]


@pytest.mark.parametrize(("raw", "encoded"), PATHS)
@pytest.mark.parametrize("spelling", ["raw", "upper", "lower"])
def test_a_rule_refuses_its_path_and_nothing_else(raw, encoded, spelling):
    rule = {"raw": raw, "upper": encoded, "lower": encoded.lower()}[spelling]
    policy = robots_policy(200, f"User-agent: *\nDisallow: {rule}\n".encode(), "wikisum")
    for host in HOSTS:
        for path, refused in ((raw + "x", True), (encoded + "y", True), ("/open", False)):
            url, refusal = check_url(host + path)
            assert refusal == "" and url.isascii()
            assert (policy.refusal(url, "wikisum") is not None) is refused, (rule, url)
