"""SearXNG, the self-hosted metasearch engine: free, and the default for users without a paid key.

``GET {url}/search?q=Q&format=json&pageno=P``; about 20 hits a page and no next-page flag, so an empty page
ends a query. JSON must be enabled in the instance's settings.yml (``search.formats``), else it answers 403.
When its engines are blocked, SearXNG answers 200 with no results and names them in
``unresponsive_engines``: a first page like that is an error, never a silent empty seed list.
Settings: url (the instance).
"""

from __future__ import annotations

import logging
from typing import Any

from geoweb.connectors.api import JSONClient, malformed
from geoweb.connectors.base import ConnectorError
from geoweb.connectors.search.base import SearchProvider

log = logging.getLogger("geoweb.connectors")

JSON_OFF = "the instance does not serve JSON: add json to search.formats in its settings.yml"


class SearXNG(SearchProvider):
    name = "searxng"
    path = "/search"
    required = ("url",)
    hit_keys = ("url", "title", "content")

    def make_client(self, **options: Any) -> JSONClient:
        # 403 is the JSON switch, not a quota; 429 is the instance's bot limiter
        return super().make_client(quota_statuses=(429,), hints={403: JSON_OFF}, **options)

    def params(self, query: str, page: int) -> dict[str, Any]:
        return {"q": query, "format": "json", "pageno": page}

    def read_page(self, answer: dict[str, Any], what: str, page: int) -> tuple[list[Any], bool]:
        results = answer.get("results")
        unresponsive = answer.get("unresponsive_engines") or []
        if not isinstance(results, list) or not isinstance(unresponsive, list):
            raise malformed(self.source, what, "results or unresponsive_engines is not a list")
        if unresponsive:
            engines = ", ".join(_engine(e) for e in unresponsive)
            if not results and page == 1:
                raise ConnectorError(f"{self.source}: {what}: no results; unresponsive engines: {engines}")
            log.warning("%s: %s: unresponsive engines: %s", self.source, what, engines)
        return results, True


def _engine(entry: Any) -> str:
    """``["google", "Suspended: too many requests"]`` as ``google (Suspended: too many requests)``."""
    if isinstance(entry, list) and len(entry) == 2:
        return f"{entry[0]} ({entry[1]})"
    return str(entry)
