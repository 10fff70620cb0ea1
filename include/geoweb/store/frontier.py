"""The crawl frontier (the ``frontier`` table): every URL of a run once, with its shard (its origin's) and what
became of it. A crawl's pages are committed here with the resources they found; a level's budget ranks its
URLs in the crawl's order of priority, computed in SQL as ``links.priority.by_priority`` computes it.
"""

from __future__ import annotations

import logging
import zlib

import psycopg2
from psycopg2.extras import execute_values

from geoweb.errors import RobotsDisallowed
from geoweb.links.normalize import origin
from geoweb.links.priority import kept_count
from geoweb.models import Link, Page, URLStatus
from geoweb.store.clean import MAX_URL_BYTES, Cleaner, storable_url
from geoweb.store.repository import PAGE_SIZE, Repository
from geoweb.store.resources import upsert_run_resources
from geoweb.store.rows import ResourceRows, resource_rows

log = logging.getLogger("geoweb.store")

COLUMNS = (
    "run_id", "url", "level", "shard", "origin", "source_page", "keyword", "status", "error_reason", "error_message",
    "score",
)  # fmt: skip
# SQLSTATE classes of data the database refuses (data exception, program limit): a page whose rows
# hit one is marked as failed; any other error (a lost connection, a run never begun) propagates, and the
# pages stay to be redone.
REFUSED_DATA = ("22", "54")

# links.priority.shuffle_key and by_priority in PostgreSQL, over a table with ``url`` and ``score``: text
# compared byte by byte (collation "C") is UTF-8 in code point order, as Python compares strings
SQL_SHUFFLE_KEY = "('x' || left(md5(url), 15))::bit(60)::bigint, url COLLATE \"C\""
SQL_BY_PRIORITY = f"score DESC, {SQL_SHUFFLE_KEY}"

# A URL already in the frontier keeps its level; only an outcome (not 'discovered') updates it. Rows come
# back when inserted or updated, so for new links the count is the number of URLs new to the run.
_UPSERT = f"""
INSERT INTO frontier AS f ({", ".join(COLUMNS)}) VALUES %s
ON CONFLICT (run_id, url) DO UPDATE SET
    status = EXCLUDED.status, error_reason = EXCLUDED.error_reason, error_message = EXCLUDED.error_message,
    updated_at = now()
WHERE EXCLUDED.status <> '{URLStatus.DISCOVERED}'
RETURNING 1
"""
# The level's URLs in the order of links.priority.by_priority; those past the first %(kept)s or scoring below
# %(min_score)s are skipped, locked in key order like every write.
_SKIP_OVER_BUDGET = f"""
WITH ranked AS (
    SELECT url, score, row_number() OVER (ORDER BY {SQL_BY_PRIORITY}) AS position
    FROM frontier WHERE run_id = %(run_id)s AND level = %(level)s
), dropped AS (
    SELECT f.url FROM frontier f JOIN ranked USING (url)
    WHERE f.run_id = %(run_id)s AND f.status = '{URLStatus.DISCOVERED}'
        AND (ranked.position > %(kept)s OR ranked.score < %(min_score)s)
    ORDER BY f.url FOR UPDATE OF f
)
UPDATE frontier f SET status = '{URLStatus.SKIPPED}', error_reason = 'budget',
    error_message = 'not followed: under the link budget', updated_at = now()
FROM dropped WHERE f.run_id = %(run_id)s AND f.url = dropped.url
"""


def shard_of(origin: str, shards: int) -> int:
    """The shard of an origin: crc32, stable across processes (``hash()`` is salted per process)."""
    if shards < 1:
        raise ValueError(f"shards must be at least 1, not {shards}")
    return zlib.crc32(origin.encode("utf-8", "replace")) % shards


def outcome(page: Page) -> tuple[URLStatus, str | None, str | None]:
    """(status, error reason, error message) of a page: robots.txt refusals are skipped, not failed; a page
    of a host set aside, or whose answer did not fit in the crawl's memory bound, is deferred, with the
    reason."""
    if page.deferred is not None:
        if page.deferred == "memory_budget":
            return URLStatus.DEFERRED, page.deferred, "not read: the answer did not fit in the memory bound"
        return URLStatus.DEFERRED, page.deferred, "not fetched: its host was set aside for the run"
    if page.error is None:
        return URLStatus.FETCHED, None, None
    status = URLStatus.SKIPPED if isinstance(page.error, RobotsDisallowed) else URLStatus.ERROR
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
        status: URLStatus = URLStatus.DISCOVERED,
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


class Frontier(Repository):
    """Each run's URLs: added level by level, read shard by shard, budgeted, and committed with what their
    pages found."""

    def add_urls(
        self, run_id: str, level: int, links: list[tuple[str, str | None, str | None]], shards: int
    ) -> int:
        """Add (url, source page, search keyword) links at ``level``; URLs the run already has are kept as
        they are. Returns how many URLs were new to the run."""
        rows = FrontierRows(run_id, shards)
        for url, source_page, keyword in links:
            rows.add(url, level, source_page, keyword)
        with self._transaction() as cur:
            return _write(cur, rows)

    def pending_shards(self, run_id: str, level: int) -> list[int]:
        """Shards of a level with URLs still to fetch."""
        with self._transaction() as cur:
            cur.execute(
                "SELECT DISTINCT shard FROM frontier WHERE run_id = %s AND level = %s AND status = %s "
                "ORDER BY shard",
                (run_id, level, URLStatus.DISCOVERED),
            )
            return [row[0] for row in cur.fetchall()]

    def pending_urls(
        self, run_id: str, level: int, shard: int
    ) -> list[tuple[str, str | None, str | None, float]]:
        """(url, source page, search keyword, link score) of a shard's URLs still to fetch, best score first."""
        with self._transaction() as cur:
            cur.execute(
                "SELECT url, source_page, keyword, score FROM frontier "
                "WHERE run_id = %s AND level = %s AND shard = %s AND status = %s "
                "ORDER BY score DESC, url",
                (run_id, level, shard, URLStatus.DISCOVERED),
            )
            return cur.fetchall()

    def skip_over_budget(self, run_id: str, level: int, fraction: float, min_score: float) -> int:
        """Mark the URLs of a level the link budget does not follow 'skipped' (reason 'budget'); returns how
        many are skipped. The budget is taken over all the level's URLs, whatever their status, in the order
        of ``by_priority``, so redoing it skips the same set."""
        with self._transaction() as cur:
            cur.execute("SELECT count(*) FROM frontier WHERE run_id = %s AND level = %s", (run_id, level))
            kept = kept_count(cur.fetchone()[0], fraction)
            cur.execute(
                _SKIP_OVER_BUDGET,
                {"run_id": run_id, "level": level, "kept": kept, "min_score": min_score},
            )
            cur.execute(
                "SELECT count(*) FROM frontier WHERE run_id = %s AND level = %s AND error_reason = 'budget'",
                (run_id, level),
            )
            return cur.fetchone()[0]

    def origin_counts(self, run_id: str, origins: list[str]) -> dict[str, int]:
        """Frontier URLs per origin (every level, every status): what a host's page budget has used."""
        with self._transaction() as cur:
            cur.execute(
                "SELECT origin, count(*) FROM frontier WHERE run_id = %s AND origin = ANY(%s) GROUP BY origin",
                (run_id, list(origins)),
            )
            counts = dict(cur.fetchall())
        return {o: counts.get(o, 0) for o in origins}

    def set_aside(self, run_id: str) -> dict[str, str]:
        """The origins a crawl of the run set aside, with the reason of each (a later shard defers them too)."""
        with self._transaction() as cur:
            cur.execute(
                "SELECT DISTINCT ON (origin) origin, error_reason FROM frontier "
                "WHERE run_id = %s AND status = %s ORDER BY origin, updated_at",
                (run_id, URLStatus.DEFERRED),
            )
            return dict(cur.fetchall())

    def commit_pages(
        self, run_id: str, pages: list[Page], shards: int, keyword_of: dict[str, str | None] | None = None
    ) -> None:
        """Save what the pages found, in one transaction: their resources and datasets, the run's link to each
        resource (at the lowest level), their links one level down, and each page's outcome (fetched, error,
        or skipped by robots.txt). ``keyword_of`` maps a page URL to its search keyword; without it the
        frontier's is used.

        Until it commits, the pages stay 'discovered' and are redone; redoing them changes nothing. Should
        the database refuse a page's rows, the pages are saved one by one and the refused one is marked
        'error' with reason 'store', logged."""
        if not pages:
            return
        if keyword_of is None:
            keyword_of = self._keywords(run_id, [p.url for p in pages])
        try:
            with self._transaction() as cur:
                _save_pages(cur, run_id, pages, shards, keyword_of)
        except psycopg2.Error as exc:
            if not str(exc.pgcode or "").startswith(REFUSED_DATA):
                raise
            if len(pages) == 1:
                self._refuse(run_id, pages[0], exc)
                return
            log.warning("the database refused rows of %d pages; saving them one by one: %s", len(pages), exc)
            for page in pages:
                self.commit_pages(run_id, [page], shards, keyword_of)

    def _keywords(self, run_id: str, urls: list[str]) -> dict[str, str | None]:
        with self._transaction() as cur:
            cur.execute(
                "SELECT url, keyword FROM frontier WHERE run_id = %s AND url = ANY(%s)", (run_id, urls)
            )
            return dict(cur.fetchall())

    def _refuse(self, run_id: str, page: Page, exc: psycopg2.Error) -> None:
        message = Cleaner().text(f"the database refused its rows: {exc}".strip(), "error message")
        log.error("%s: %s", page.url, message)
        with self._transaction() as cur:
            cur.execute(
                "UPDATE frontier SET status = %s, error_reason = 'store', error_message = %s, "
                "updated_at = now() WHERE run_id = %s AND url = %s",
                (URLStatus.ERROR, message, run_id, page.url),
            )


def _save_pages(cur, run_id: str, pages: list[Page], shards: int, keyword_of: dict) -> None:
    found: dict[tuple[str, str], ResourceRows] = {}
    found_on: dict[tuple[str, str], str] = {}  # the page whose fetch found the resource
    for page in pages:
        for resource in page.resources:
            rows = resource_rows(resource, page.level, page.source, keyword_of.get(page.url))
            if rows and (rows.key not in found or rows.level < found[rows.key].level):
                found[rows.key] = rows
                found_on[rows.key] = page.url
    if found:
        upsert_run_resources(cur, run_id, [found[key] for key in sorted(found)], found_on)
    frontier = FrontierRows(run_id, shards)
    frontier.add_pages(pages, keyword_of)
    _write(cur, frontier)


def _write(cur, rows: FrontierRows) -> int:
    return len(execute_values(cur, _UPSERT, rows.sorted(), page_size=PAGE_SIZE, fetch=True))
