"""What every web-search provider shares: the top result pages of a keyword, read page by page into Records
that keep the keyword; each hit's URL is a seed page for the crawl."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any, ClassVar

from geoweb.connectors.api import DEFAULT_PAGES, APIConnector, http_url, malformed
from geoweb.models import OnlineResource, Record
from geoweb.values import stripped

log = logging.getLogger("geoweb.connectors")


class SearchProvider(APIConnector):
    """A web-search API. A subclass says where to ask (``path``), how to ask for page n (``params``), how to
    read a page (``read_page``) and which keys of a hit hold its URL, title and snippet (``hit_keys``)."""

    path: ClassVar[str] = ""  # under the base URL
    max_pages: ClassVar[int | None] = None  # result pages the API serves for one query; None: no limit
    hit_keys: ClassVar[tuple[str, str, str]] = ("url", "title", "content")

    def records(self, *, query: str, pages: int = DEFAULT_PAGES) -> Iterator[Record]:
        """The hits of the first ``pages`` result pages of ``query``, each URL once; stops at the provider's
        last page. A page that fails raises ConnectorError naming it, after the earlier pages' hits."""
        last = pages if self.max_pages is None else min(pages, self.max_pages)
        if last < pages:
            log.info(
                "%s serves %d result pages a query at most: reading %d, not %d",
                self.source,
                last,
                last,
                pages,
            )
        seen: set[str] = set()
        for page in range(1, last + 1):
            what = f"{query!r} page {page}"
            answer = self.client.get(self.base_url + self.path, self.params(query, page), what)
            if not isinstance(answer, dict):
                raise malformed(self.source, what, "the answer is not a JSON object")
            items, more = self.read_page(answer, what, page)
            for rank, item in enumerate(items, 1):
                record = self._record(item, query, page, rank)
                if record is not None and record.identifier not in seen:
                    seen.add(record.identifier)
                    yield record
            if not items or not more:
                return

    def seeds(self, record: Record) -> list[tuple[str, str | None]]:
        """(url, source page) of what a record gives the crawl at level 0: the hit itself."""
        return [(record.identifier, None)]

    def params(self, query: str, page: int) -> dict[str, Any]:
        """The query parameters of result page ``page`` (from 1)."""
        raise NotImplementedError

    def read_page(self, answer: dict[str, Any], what: str, page: int) -> tuple[list[Any], bool]:
        """The page's hits and whether the provider has a next page; ConnectorError when malformed."""
        raise NotImplementedError

    def _record(self, item: Any, query: str, page: int, rank: int) -> Record | None:
        url_key, title_key, snippet_key = self.hit_keys
        url = http_url(item.get(url_key)) if isinstance(item, dict) else None
        if url is None:
            log.warning(
                "%s: %r page %d: hit %d skipped: no http(s) URL in %.200r",
                self.source,
                query,
                page,
                rank,
                item,
            )
            return None
        media_type = item.get("mime")  # Google names the media type of files it indexed
        return Record(
            source=self.source,
            identifier=url,
            title=stripped(item.get(title_key)),
            abstract=stripped(item.get(snippet_key)),
            links=[OnlineResource(url, protocol=media_type if isinstance(media_type, str) else None)],
            keyword=query,
            extra={"page": page, "rank": rank},
        )
