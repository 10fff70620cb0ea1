"""robots.txt (RFC 9309): one parsed file per origin, fetched once, obeyed for every request to it."""

from __future__ import annotations

import asyncio
import logging
import re
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from protego import Protego
from yarl import URL

from geoweb.errors import BlockedAddress, FetchError, RobotsDisallowed, TooManyRedirects
from geoweb.fetch.response import Response

log = logging.getLogger(__name__)

ROBOTS_MAX_BYTES = 500 * 1024  # RFC 9309 2.5: crawlers must parse at least 500 KiB
ROBOTS_MAX_REDIRECTS = 5  # RFC 9309 2.3.1.2

_ALLOW_ALL = ""
_DISALLOW_ALL = "User-agent: *\nDisallow: /\n"

RobotsFetch = Callable[[str], Awaitable[Response]]


@dataclass(frozen=True, slots=True)
class RobotsRules:
    """What one origin's robots.txt says to us."""

    parser: Protego
    crawl_delay: float | None  # seconds, already capped


def product_token(user_agent: str) -> str:
    """The name robots.txt groups match against: 'GeoWebHarvester' of 'GeoWebHarvester/0.1 (+url)'."""
    return re.split(r"[/\s]", user_agent.strip(), maxsplit=1)[0]


class RobotsCache:
    """Answers "may we fetch this URL?" per origin, fetching each robots.txt once.

    ``fetch`` fetches a robots.txt URL (through the address guard, following redirects, size-capped) and
    raises ``FetchError`` on failure. Concurrent callers of one origin wait for the same fetch.
    """

    def __init__(
        self,
        fetch: RobotsFetch,
        *,
        user_agent: str,
        max_crawl_delay: float,
        allow_on_5xx: bool = False,
        stats: Counter | None = None,
    ):
        self._fetch = fetch
        self._agent = product_token(user_agent)
        self._max_crawl_delay = max_crawl_delay
        self._unreachable = _ALLOW_ALL if allow_on_5xx else _DISALLOW_ALL
        self._stats = stats if stats is not None else Counter()
        self._rules: dict[str, asyncio.Task[RobotsRules]] = {}

    async def check(self, url: URL, origin: str) -> float | None:
        """The crawl delay for us on ``url``'s origin, or ``RobotsDisallowed`` if ``url`` is disallowed."""
        pending = self._rules.get(origin)
        if pending is None:
            robots_url = str(url.origin().with_path("/robots.txt"))
            pending = self._rules[origin] = asyncio.ensure_future(self._load(robots_url))
        try:
            # shield: one caller giving up must not cancel the fetch the others wait for
            rules = pending.result() if pending.done() else await asyncio.shield(pending)
        except BlockedAddress as exc:  # the origin itself is off limits, not just its robots.txt
            raise BlockedAddress(str(exc), url=str(url)) from None
        if not rules.parser.can_fetch(str(url), self._agent):
            self._stats["robots/forbidden"] += 1
            raise RobotsDisallowed(f"robots.txt disallows {url}", url=str(url))
        return rules.crawl_delay

    def close(self) -> None:
        """Cancel robots.txt fetches still running."""
        for pending in self._rules.values():
            pending.cancel()

    async def _load(self, robots_url: str) -> RobotsRules:
        try:
            response = await self._fetch(robots_url)
        except BlockedAddress as exc:
            if exc.url == robots_url:
                raise  # the origin itself is off limits
            return self._failed(robots_url, str(exc))  # only where robots.txt redirects to
        except TooManyRedirects:
            return self._rules_from(_ALLOW_ALL)  # RFC 9309 2.3.1.2: treated as unavailable
        except FetchError as exc:
            return self._failed(robots_url, str(exc))
        if 200 <= response.status < 300:
            self._stats["robots/fetched"] += 1
            return self._rules_from(response.text())
        # 429 asks us to slow down, like a 5xx; other 4xx mean "no robots.txt" (RFC 9309 2.3.1.3)
        if response.status == 429 or response.status >= 500:
            return self._failed(robots_url, f"HTTP {response.status}")
        return self._rules_from(_ALLOW_ALL)

    def _failed(self, robots_url: str, reason: str) -> RobotsRules:
        self._stats["robots/fetch_error"] += 1
        verdict = "allowing" if self._unreachable == _ALLOW_ALL else "disallowing"
        log.info("robots.txt unreachable, %s the whole origin: %s: %s", verdict, robots_url, reason)
        return self._rules_from(self._unreachable)

    def _rules_from(self, text: str) -> RobotsRules:
        parser = Protego.parse(text)
        delay = parser.crawl_delay(self._agent)
        if delay is not None:
            # "not >= 0" also drops NaN; an endless delay is capped like any other long one
            delay = min(delay, self._max_crawl_delay) if delay >= 0 else None
        return RobotsRules(parser, delay)
