"""The sites whose pages are never search results: Wikipedia (every language edition, desktop
and mobile) and the sites that copy it.

The paper leaves Wikipedia out of the search results, and the mirrors with it: a mirror's page
is the article itself, which the model would learn to copy. Ingest's clone filter also drops
such pages by what they say; this list keeps them out of the index and the results before that,
by where they are. ``--exclude-sites FILE`` replaces the mirrors (Wikipedia stays out always).
"""

from __future__ import annotations

from urllib.parse import urlsplit

# Wikipedia and the Wikimedia sites that serve its text.
WIKIPEDIA_SITES = ("wikipedia.org", "wikimedia.org", "wikipedia.com")

# Sites that republish Wikipedia's articles whole (as listed on Wikipedia's own "Mirrors and
# forks" pages, the ones that still serve pages).
MIRROR_SITES = (
    "wikiwand.com", "wikizero.com", "wiki2.org", "wikimili.com", "dbpedia.org",
    "infogalactic.com", "everything.explained.today", "en-academic.com", "enacademic.com",
    "encyclopedia.thefreedictionary.com", "justapedia.org", "wikibrief.org", "wikiless.org",
    "wikipedia.moesalih.com", "wiki.alquds.edu", "alchetron.com", "wikitia.com",
)


def site_list(path: str | None) -> tuple[str, ...]:
    """The mirrors to keep out: the bundled :data:`MIRROR_SITES`, or the hosts listed in the
    file at ``path`` (one a line; ``#`` starts a comment; ``www.`` and a scheme are ignored).

    Raises:
        ValueError: a line that is not a host name, naming the file and the line.
    """
    if path is None:
        return MIRROR_SITES
    hosts = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            host = site_host(line)
            if host is None:
                raise ValueError(f"{path}, line {number}: {line[:100]!r} is not a host name")
            hosts.append(host)
    return tuple(hosts)


def site_host(text: str) -> str | None:
    """A host name from a line of a site list (``example.org``, ``https://www.example.org/``),
    lowercased, without ``www.``; None where there is none."""
    text = text.strip()
    if "://" not in text:
        text = "http://" + text
    try:
        host = (urlsplit(text).hostname or "").rstrip(".").lower()
    except ValueError:
        return None
    if host.startswith("www."):
        host = host[4:]
    if not host or any(c.isspace() for c in host) or "." not in host:
        return None
    return host


def excluded(url: str, mirrors: tuple[str, ...] = MIRROR_SITES) -> str | None:
    """Why ``url`` may not be a search result: ``wikipedia`` or ``mirror`` (its host is one of
    the sites or under one); None for any other page."""
    try:
        host = (urlsplit(url.strip()).hostname or "").rstrip(".").lower()
    except ValueError:
        return None
    for reason, sites in (("wikipedia", WIKIPEDIA_SITES), ("mirror", mirrors)):
        for site in sites:
            if host == site or host.endswith("." + site):
                return reason
    return None
