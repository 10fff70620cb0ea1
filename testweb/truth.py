"""The ground truth: which resource a perfect crawl finds, at which level, and how.

Computed from the page graph of testweb/web.py by a breadth-first walk from the seeds, as the crawler walks it:
once obeying robots.txt (resources found this way are ``via: links``), once ignoring it (``robots-excluded``
for what only that finds). Resources whose only trace is a catalogue record are ``via: catalogue``, one level
below the catalogue. A link to anything that is neither a page, a planted resource nor a decoy is a bug in
the web and stops the build.
"""

from __future__ import annotations

from collections import deque
from html import unescape
from typing import Any
from urllib.parse import urljoin

from testweb import catalogue, web
from testweb.layout import SOFTWARE, origin
from testweb.model import Planted, canonical


def page_index() -> dict[str, tuple[web.Site, web.Page]]:
    return {site.origin + page.path: (site, page) for site in web.SITES for page in site.pages}


def disallowed_prefixes() -> list[str]:
    return [site.origin + path for site in web.SITES for path in site.disallowed]


def link_targets(url: str, page: web.Page) -> list[str]:
    """Absolute URLs of a page's links, as a browser resolves them."""
    return [urljoin(page.base_href or url, unescape(link.href)) for link in page.links]


def walk(planted: dict[str, Planted], *, obey_robots: bool) -> dict[str, tuple[int, str]]:
    """Breadth-first from the seeds: canonical URL of each planted resource reached -> (level, source page)."""
    pages = page_index()
    blocked = disallowed_prefixes() if obey_robots else []
    decoys = {d.url for d in web.DECOYS_LIST}
    levels = dict.fromkeys(web.SEEDS, 0)
    found: dict[str, tuple[int, str]] = {}
    queue = deque(web.SEEDS)
    while queue:
        url = queue.popleft()
        for target in link_targets(url, pages[url][1]):
            if any(target.startswith(prefix) for prefix in blocked):
                continue
            if target in pages:
                if target not in levels:
                    levels[target] = levels[url] + 1
                    queue.append(target)
            elif canonical(target) in planted:
                found.setdefault(canonical(target), (levels[url] + 1, url))
            elif target in web.ALIASES:
                found.setdefault(web.ALIASES[target], (levels[url] + 1, url))
            elif canonical(target) not in decoys:
                raise ValueError(f"{url} links to {target}: neither a page, a planted resource nor a decoy")
    return found


def reach_from_others(reached: dict[str, tuple[int, str, str]]) -> None:
    """Lowers the level of resources found from another planted one (``web.REACHED_FROM``) when that is
    sooner than by links; one pass per edge settles every chain of them."""
    for _ in web.REACHED_FROM:
        for url, other, hops in web.REACHED_FROM:
            if other not in reached:
                continue
            level, source, via = reached[other]
            if url not in reached or level + hops < reached[url][0]:
                reached[url] = (level + hops, source if hops == 0 else other, via)


def manifest() -> dict[str, Any]:
    planted = {p.url: p for p in web.planted()}
    reached = {url: (*found, "links") for url, found in walk(planted, obey_robots=True).items()}
    reach_from_others(reached)
    for url, (level, source) in walk(planted, obey_robots=False).items():
        reached.setdefault(url, (level, source, "robots-excluded"))
    csw_level = reached[catalogue.URL][0]
    for record in catalogue.RECORDS:
        for _, link in record.links:
            reached.setdefault(canonical(link), (csw_level + 1, catalogue.URL, "catalogue"))
    missing = sorted(set(planted) - set(reached))
    if missing:
        raise ValueError(f"planted but reachable neither by links nor by the catalogue: {missing}")
    resources = []
    for url, item in planted.items():
        level, source, via = reached[url]
        for type_, datasets in item.datasets.items():
            entry = {"url": url, "type": type_, "level": level, "via": via, "source_page": source}
            entry |= {"datasets": list(datasets)} | ({"note": item.note} if item.note else {})
            entry |= {"title": item.title} if item.titled else {}
            resources.append(entry)
    return {
        "seeds": list(web.SEEDS),
        "resources": resources,
        "decoys": [{"url": d.url, "why": d.why} for d in web.DECOYS_LIST],
        "robots_disallowed": disallowed_prefixes(),
        "crawl_delays": {site.origin: site.crawl_delay for site in web.SITES if site.crawl_delay is not None},
        "servers": {origin(port): software for port, software in SOFTWARE.items()},
    }
