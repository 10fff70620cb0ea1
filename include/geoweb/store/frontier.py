"""Rows of the crawl frontier: which shard a URL belongs to, and one row per URL with what became of it."""

from __future__ import annotations

import logging
import zlib
from typing import TYPE_CHECKING

from geoweb.errors import RobotsDisallowed
from geoweb.links.normalize import origin
from geoweb.links.priority import Link
from geoweb.store.clean import MAX_URL_BYTES, Cleaner, storable_url

if TYPE_CHECKING:
    from geoweb.crawl.engine import Page

log = logging.getLogger("geoweb.store")

COLUMNS = (
    "run_id", "url", "level", "shard", "origin", "source_page", "keyword", "status", "error_reason", "error_message",
    "score",
)  # fmt: skip


def shard_of(origin: str, shards: int) -> int:
    """The shard of an origin: crc32, stable across processes (``hash()`` is salted per process)."""
    if shards < 1:
        raise ValueError(f"shards must be at least 1, not {shards}")
    return zlib.crc32(origin.encode("utf-8", "replace")) % shards


def outcome(page: Page) -> tuple[str, str | None, str | None]:
    """(status, error reason, error message) of a page: robots.txt refusals are skipped, not failed; a page
    of a host set aside is deferred, with the reason."""
    if page.deferred is not None:
        return "deferred", page.deferred, "not fetched: its host was set aside for the run"
    if page.error is None:
        return "fetched", None, None
    status = "skipped" if isinstance(page.error, RobotsDisallowed) else "error"
    return status, page.error.reason, Cleaner().text(str(page.error), "error message")


class FrontierRows:
    """Frontier rows of one run, one per URL (the first added wins), sorted by URL for writing: concurrent
    writers then lock rows in one order and cannot deadlock."""

    def __init__(self, run_id: str, shards: int):
        self.run_id = run_id
        self.shards = shards
        self.rows: dict[str, tuple] = {}

    def add(
        self,
        url: str,
        level: int,
        source_page: str | None,
        keyword: str | None,
        status: str = "discovered",
        error_reason: str | None = None,
        error_message: str | None = None,
        score: float = 0.0,
    ) -> None:
        if storable_url(url) is None:
            log.warning(
                "%.200r not stored in the frontier: not a URL of at most %d bytes", url, MAX_URL_BYTES
            )
            return
        if url in self.rows:
            return
        clean = Cleaner()
        host = origin(url)
        self.rows[url] = (
            self.run_id, url, level, shard_of(host, self.shards), host, storable_url(source_page),
            clean.text(keyword, "keyword"), status, error_reason, error_message, score,
        )  # fmt: skip
        clean.log_changes(url)

    def add_pages(self, pages: list[Page], keyword_of: dict[str, str | None]) -> None:
        """Each page with its outcome, then its scored links one level down, inheriting the page's search
        keyword."""
        for page in pages:
            self.add(page.url, page.level, page.source, keyword_of.get(page.url), *outcome(page))
        for page in pages:
            for url, source, score in (Link(*link) for link in page.links):  # (url, source) scores 0
                self.add(url, page.level + 1, source, keyword_of.get(page.url), score=score)

    def sorted(self) -> list[tuple]:
        return [self.rows[url] for url in sorted(self.rows)]
