"""The Google Custom Search JSON API (Programmable Search Engine): 10 hits a page, 100 a query.

``GET https://www.googleapis.com/customsearch/v1?cx=CX&q=Q&start=S&num=10`` with the key in the
``X-goog-api-key`` header (Google's alternative to ``key=`` in the URL, which would carry it into logs).
Closed to new customers; existing ones have until 1 January 2027. Settings: key, cx (the engine id).
"""

from __future__ import annotations

from typing import Any

from geoweb.connectors.api import malformed
from geoweb.connectors.search.base import SearchProvider


class Google(SearchProvider):
    name = "google"
    url = "https://www.googleapis.com/customsearch/v1"
    key_header = "X-goog-api-key"
    required = ("key", "cx")
    options = frozenset({"cx"})
    page_size = 10
    max_page_size = 10
    max_pages = 10  # the API serves results 1 to 100 (start <= 91)
    hit_keys = ("link", "title", "snippet")

    def params(self, query: str, page: int) -> dict[str, Any]:
        return {
            "cx": self.config["cx"],
            "q": query,
            "start": 1 + (page - 1) * self.page_size,
            "num": self.page_size,
        }

    def read_page(self, answer: dict[str, Any], what: str, page: int) -> tuple[list[Any], bool]:
        # no "items" is how Google says "nothing (more) found"; searchInformation is in every answer
        if not isinstance(answer.get("searchInformation"), dict):
            raise malformed(self.source, what, "no searchInformation")
        items = answer.get("items", [])
        queries = answer.get("queries", {})
        if not isinstance(items, list) or not isinstance(queries, dict):
            raise malformed(self.source, what, "items is not a list or queries not an object")
        return items, bool(queries.get("nextPage"))
