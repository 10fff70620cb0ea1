"""The Brave Search API: up to 20 hits a page, 10 pages a query (``offset`` 0 to 9).

``GET https://api.search.brave.com/res/v1/web/search?q=Q&count=20&offset=O`` with the key in the
``X-Subscription-Token`` header. Every answer reports the plan's rate windows (one per second, one per
month) in ``X-RateLimit-Remaining`` / ``X-RateLimit-Reset``: a spent short window is waited out before the
next request, a spent month ends in QuotaExceeded. Settings: key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from geoweb.connectors.api import JSONClient, malformed
from geoweb.connectors.search.base import SearchProvider
from geoweb.fetch.fetcher import retry_after_seconds


class Brave(SearchProvider):
    name = "brave"
    url = "https://api.search.brave.com/res/v1"
    path = "/web/search"
    key_header = "X-Subscription-Token"
    required = ("key",)
    page_size = 20
    max_page_size = 20
    max_pages = 10
    hit_keys = ("url", "title", "description")

    def make_client(self, **options: Any) -> JSONClient:
        return super().make_client(pace=rate_limit_wait, **options)

    def params(self, query: str, page: int) -> dict[str, Any]:
        return {"q": query, "count": self.page_size, "offset": page - 1}

    def read_page(self, answer: dict[str, Any], what: str, page: int) -> tuple[list[Any], bool]:
        if answer.get("type") != "search":
            raise malformed(self.source, what, f"type is {answer.get('type')!r}, not 'search'")
        web = answer.get("web", {"results": []})  # left out when nothing was found
        query = answer.get("query", {})
        results = web.get("results") if isinstance(web, dict) else None
        if not isinstance(results, list) or not isinstance(query, dict):
            raise malformed(self.source, what, "web.results is not a list or query not an object")
        return results, bool(query.get("more_results_available"))


def rate_limit_wait(headers: Mapping[str, str]) -> float | None:
    """Seconds until the spent rate windows reset (the headers list one value per window, e.g.
    ``X-RateLimit-Remaining: 0, 1990`` with ``X-RateLimit-Reset: 1, 2591000``); else Retry-After, if any."""
    remaining = _numbers(headers.get("X-RateLimit-Remaining"))
    reset = _numbers(headers.get("X-RateLimit-Reset"))
    spent = [seconds for left, seconds in zip(remaining, reset, strict=False) if left <= 0]
    return max(spent) if spent else retry_after_seconds(headers.get("Retry-After"))


def _numbers(header: str | None) -> list[float]:
    try:
        return [float(v) for v in (header or "").split(",") if v.strip()]
    except ValueError:
        return []
