"""The crawl frontier (the ``frontier`` table): every URL of a run once, with its shard (its origin's) and what
became of it. A crawl's pages are committed here with the resources they found; a level's budget ranks its
URLs in the crawl's order of priority, computed in SQL as ``links.priority.by_priority`` computes it.

Rows are keyed by the run's integer key and a 64-bit hash of the URL (``url_hash``, indexed, not stored), the
URL itself kept once in the row; a link's source page is the hash of its own row. Two URLs of a run with one
hash are one row: about n^2 / 2^65 odds for n URLs, 1e-7 for 2 million (migration 0015), against the 1e-4 per
URL of the crawl's Bloom filter. The view ``frontier_urls`` reads the rows back with the run id, origin and
source URL.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Collection, Iterator

import psycopg2
from psycopg2.extras import execute_values

from geoweb.errors import RobotsDisallowed, StoreError
from geoweb.links.normalize import origin
from geoweb.links.priority import kept_count
from geoweb.models import DeferReason, Link, Page, RunStatus, URLStatus
from geoweb.store.clean import MAX_URL_BYTES, Cleaner, storable_url
from geoweb.store.repository import PAGE_SIZE, Repository, error_line, sql_array
from geoweb.store.resources import upsert_run_resources
from geoweb.store.rows import ResourceRows, resource_rows

log = logging.getLogger("geoweb.store")

COLUMNS = (
    "run_key", "url", "level", "shard", "source_hash", "source_page", "keyword", "status", "error_reason",
    "error_message", "score", "updated_at",
)  # fmt: skip
# a row's values: COLUMNS, updated_at set (now) when the row has an outcome, left NULL while it is 'discovered'
_VALUES = f"({', '.join(['%s'] * (len(COLUMNS) - 1))}, CASE WHEN %s THEN now() END)"
# a run's key from its id, in a statement with %(run_id)s
RUN_KEY = "(SELECT run_key FROM crawl_runs WHERE run_id = %(run_id)s)"
# PLANNED_KEY: a batch of URLs is looked up by key one URL at a time (a LATERAL subquery, kept apart from
# the join by OFFSET 0), and the run's key (or the crawl's name) is given as a subquery, not a literal. The
# statistics do not know a run begun since the table was last analysed (autoanalyze waits for a tenth of
# the table to change), so for a literal, or a join the planner may reorder, it expects one row of the run
# and reads all of them, each batch: quadratic in the run. Probed one by one, each URL's row is one lookup.
# SQLSTATE classes of data the database refuses (data exception, program limit): a page whose rows
# hit one is marked as failed; any other error (a lost connection, a run never begun) propagates, and the
# pages stay to be redone.
REFUSED_DATA = ("22", "54")


# links.priority.by_priority (descending score, then shuffle_key) in PostgreSQL, over the columns ``url`` and
# ``score`` of ``table`` (an alias, or none): text compared byte by byte (collation "C") is UTF-8 in code
# point order, as Python compares strings
def sql_by_priority(table: str = "") -> str:
    column = f"{table}." if table else ""
    url = f"{column}url"
    return f"{column}score DESC, ('x' || left(md5({url}), 15))::bit(60)::bigint, {url} COLLATE \"C\""


# The frontier's rows ``f`` with the URL of the page that linked to each, ``s.url``, looked up by key row by
# row: a join planned before the run's rows have statistics hashed the whole frontier per read
_WITH_SOURCE = """
FROM frontier f LEFT JOIN LATERAL (
    SELECT url FROM frontier WHERE run_key = f.run_key AND geoweb_url_hash(url) = f.source_hash OFFSET 0
) s ON true
"""

# A shard's URLs to fetch in the order of by_priority, with the URL of the page that linked to each
_PENDING = f"""
SELECT f.url, coalesce(f.source_page, s.url), f.keyword, f.score {_WITH_SOURCE}
WHERE f.run_key = {RUN_KEY} AND f.shard = %(shard)s AND f.level = %(level)s AND f.status = %(status)s
ORDER BY {sql_by_priority("f")}
"""
PENDING_PAGE = 5000  # rows per FETCH of pending_urls

# A shard's URLs to fetch past a level, up to a deepest one: level by level, each in by_priority order
_PENDING_DEEPER = f"""
SELECT f.level, f.url, coalesce(f.source_page, s.url), f.keyword, f.score {_WITH_SOURCE}
WHERE f.run_key = {RUN_KEY} AND f.shard = %(shard)s AND f.level > %(level)s AND f.level <= %(deepest)s
    AND f.status = %(status)s AND f.score >= %(min_score)s
ORDER BY f.level, {sql_by_priority("f")}
"""

# Shards with URLs to fetch at level + 1 and none at ``level`` or shallower (two probes of frontier_work each),
# while another task of the run holds a shard (``hold_shard``: the level's end waits for it). Without one the
# level is about to end, and the next level's tasks crawl its shards side by side.
_ADOPTABLE = f"""
SELECT s FROM generate_series(0, %(shards)s - 1) s
WHERE EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2
                  AND classid = {RUN_KEY}::oid AND pid <> pg_backend_pid()
                  AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))
    AND EXISTS (SELECT 1 FROM frontier WHERE run_key = {RUN_KEY} AND shard = s AND level = %(level)s + 1
                    AND status = %(status)s)
    AND NOT EXISTS (SELECT 1 FROM frontier WHERE run_key = {RUN_KEY} AND shard = s
                        AND level = ANY(%(levels)s) AND status = %(status)s)
"""

# The rows past the seeds of the crawl's runs that ended before this one (``Frontier.prune_earlier``)
_EARLIER_RUNS_ROWS = """
WITH earlier AS (
    SELECT e.run_key FROM crawl_runs e JOIN crawl_runs r ON r.crawl = e.crawl
    WHERE r.run_id = %(run_id)s AND e.run_key < r.run_key AND e.status <> %(running)s
), gone AS (
    DELETE FROM frontier f USING earlier WHERE f.run_key = earlier.run_key AND f.level > 0 RETURNING f.run_key
)
SELECT count(*), count(DISTINCT run_key) FROM gone
"""

_RUN_BEFORE = f"""
SELECT run_id FROM crawl_runs
WHERE run_key < {RUN_KEY} AND status <> %(running)s
ORDER BY run_key DESC LIMIT 1
"""

# A URL already in the frontier keeps its level; only an outcome (not 'discovered') updates it. Rows come
# back when inserted or updated, so for new links the count is the number of URLs new to the run.
_UPSERT = f"""
INSERT INTO frontier AS f ({", ".join(COLUMNS)}) VALUES %s
ON CONFLICT (run_key, geoweb_url_hash(url)) DO UPDATE SET
    status = EXCLUDED.status, error_reason = EXCLUDED.error_reason, error_message = EXCLUDED.error_message,
    updated_at = now()
WHERE EXCLUDED.status <> '{URLStatus.DISCOVERED}'
RETURNING 1
"""
# A link that finds a URL still to fetch at a lower level than its row's gives it that level, its source and
# score: a shard running ahead may have found it first by a longer path. Each link's row is looked up on its
# own (``PLANNED_KEY``) and locked as the links come, in key order like every write; ``{run_key}`` is the
# run's integer key.
SHALLOWER = f"""
WITH v (url_hash, level, source_hash, source_page, score) AS (VALUES %s), lowered AS (
    SELECT f.row_id, v.level, v.source_hash, v.source_page, v.score
    FROM v CROSS JOIN LATERAL (
        SELECT ctid AS row_id FROM frontier
        WHERE run_key = (SELECT {{run_key}}) AND geoweb_url_hash(url) = v.url_hash
            AND status = '{URLStatus.DISCOVERED}' AND level > v.level
        OFFSET 0 FOR UPDATE
    ) f
)
UPDATE frontier f SET level = lowered.level, source_hash = lowered.source_hash,
    source_page = lowered.source_page, score = lowered.score
FROM lowered WHERE f.ctid = lowered.row_id
"""
SHALLOWER_VALUES = "(%s::bigint, %s::int, %s::bigint, %s::text, %s::double precision)"

# Pages a shard carries over unasked (``Frontier.carry_over``) and their links one level down, as the crawl
# admitted them when it last read or carried each page (``PageState.admitted``), with the page's search
# keyword; a URL linked by several of the pages is taken from the lowest level, then the best score.
_CARRIED = """
WITH pages (url, level, keyword, followed) AS (
    SELECT * FROM unnest(%(urls)s::text[], %(levels)s::int[], %(keywords)s::text[], %(followed)s::boolean[])
), linked AS MATERIALIZED (
    SELECT DISTINCT ON (geoweb_url_hash(link.value->>0))
        link.value->>0 AS url, geoweb_url_hash(link.value->>0) AS url_hash, p.level + 1 AS level,
        geoweb_url_hash(p.url) AS source_hash, p.keyword, (link.value->>1)::double precision AS score
    FROM pages p CROSS JOIN LATERAL (
        SELECT state FROM page_states
        WHERE crawl = (SELECT %(crawl)s) AND geoweb_url_hash(url) = geoweb_url_hash(p.url) AND url = p.url OFFSET 0
    ) kept CROSS JOIN LATERAL jsonb_array_elements(kept.state->'admitted'->'links') AS link
    WHERE p.followed
    ORDER BY geoweb_url_hash(link.value->>0), p.level, (link.value->>1)::double precision DESC
)
"""
# One pass in key order, as a crawl task's commit writes (``_write``) but in one statement: the pages fetched,
# their links' URLs new to the run added in their origin's shard (``geoweb_shard``, as ``shard_of``), and
# a link to a URL still to fetch at a deeper level gives it this level, its source and score (``SHALLOWER``).
# A link the run's row would not change is left out before the insert, looked up without a lock: the insert's
# conflict clause locks every row it meets, updated or not, and most links lead to URLs the run has.
_CARRIED_ROWS = f"""{_CARRIED}, written AS MATERIALIZED (
    SELECT DISTINCT ON (url_hash) * FROM (
        SELECT url, geoweb_url_hash(url) AS url_hash, level, NULL::bigint AS source_hash, keyword,
            0::double precision AS score, '{URLStatus.FETCHED}'::geoweb_url_status AS status
        FROM pages
        UNION ALL
        SELECT url, url_hash, level, source_hash, keyword, score, '{URLStatus.DISCOVERED}' FROM linked l
        WHERE NOT EXISTS (
            SELECT FROM frontier WHERE run_key = {RUN_KEY} AND geoweb_url_hash(url) = l.url_hash
                AND (status <> '{URLStatus.DISCOVERED}' OR level <= l.level) OFFSET 0
        )
    ) rows ORDER BY url_hash, status = '{URLStatus.DISCOVERED}'
)
INSERT INTO frontier AS f (run_key, url, level, shard, source_hash, keyword, score, status, updated_at)
SELECT {RUN_KEY}, w.url, w.level, geoweb_shard(geoweb_origin(w.url), %(shards)s), w.source_hash, w.keyword,
    w.score, w.status, CASE WHEN w.status <> '{URLStatus.DISCOVERED}' THEN now() END
FROM written w
ORDER BY w.url_hash
ON CONFLICT (run_key, geoweb_url_hash(url)) DO UPDATE SET
    status = EXCLUDED.status, error_reason = NULL, error_message = NULL,
    updated_at = CASE WHEN EXCLUDED.status <> '{URLStatus.DISCOVERED}' THEN now() END,
    level = CASE WHEN EXCLUDED.status = '{URLStatus.DISCOVERED}' THEN EXCLUDED.level ELSE f.level END,
    source_hash = CASE WHEN EXCLUDED.status = '{URLStatus.DISCOVERED}' THEN EXCLUDED.source_hash ELSE f.source_hash END,
    source_page = CASE WHEN EXCLUDED.status = '{URLStatus.DISCOVERED}' THEN NULL ELSE f.source_page END,
    score = CASE WHEN EXCLUDED.status = '{URLStatus.DISCOVERED}' THEN EXCLUDED.score ELSE f.score END
WHERE EXCLUDED.status <> '{URLStatus.DISCOVERED}'
    OR (f.status = '{URLStatus.DISCOVERED}' AND f.level > EXCLUDED.level)
"""

# The level's URLs in the order of links.priority.by_priority; those past the first %(kept)s or scoring below
# %(min_score)s are skipped, locked in key order like every write (rows found by ctid: the ones locked are the
# ones updated).
_SKIP_OVER_BUDGET = f"""
WITH ranked AS (
    SELECT ctid AS row_id, score, row_number() OVER (ORDER BY {sql_by_priority()}) AS position
    FROM frontier WHERE run_key = {RUN_KEY} AND level = %(level)s
), dropped AS (
    SELECT f.ctid AS row_id FROM frontier f JOIN ranked ON f.ctid = ranked.row_id
    WHERE f.status = '{URLStatus.DISCOVERED}' AND (ranked.position > %(kept)s OR ranked.score < %(min_score)s)
    ORDER BY geoweb_url_hash(f.url) FOR UPDATE OF f
)
UPDATE frontier f SET status = '{URLStatus.SKIPPED}', error_reason = 'budget',
    error_message = 'not followed: under the link budget', updated_at = now()
FROM dropped WHERE f.ctid = dropped.row_id
"""


def url_hash(url: str) -> int:
    """The frontier's key of a URL: the first 64 bits of its MD5, signed, as ``geoweb_url_hash`` in SQL."""
    return int.from_bytes(hashlib.md5(url.encode("utf-8")).digest()[:8], "big", signed=True)


def shard_of(origin: str, shards: int) -> int:
    """The shard of an origin: the first 32 bits of its MD5, stable across processes (``hash()`` is salted per
    process), as ``geoweb_shard`` in SQL."""
    if shards < 1:
        raise ValueError(f"shards must be at least 1, not {shards}")
    return int.from_bytes(hashlib.md5(origin.encode("utf-8", "replace")).digest()[:4], "big") % shards


def outcome(page: Page) -> tuple[URLStatus, str | None, str | None]:
    """(status, error reason, error message) of a page: robots.txt refusals are skipped, not failed; a page
    not fetched for a ``DeferReason`` is deferred, with the reason and its message."""
    if page.deferred is not None:
        return URLStatus.DEFERRED, page.deferred, DeferReason(page.deferred).message
    if page.error is None:
        return URLStatus.FETCHED, None, None
    status = URLStatus.SKIPPED if isinstance(page.error, RobotsDisallowed) else URLStatus.ERROR
    return status, page.error.reason, Cleaner().text(str(page.error), "error message")


class FrontierRows:
    """Frontier rows of one run, one per URL (the first added wins), sorted by key for writing: concurrent
    writers then lock rows in one order and cannot deadlock. A source page among the rows is kept as its
    row's hash, any other (a seed's) as text."""

    def __init__(self, shards: int):
        self.shards = shards
        self.rows: dict[int, tuple] = {}  # url_hash -> _VALUES but the run key

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
        key = url_hash(url)
        if key in self.rows:
            return
        source, source_hash = storable_url(source_page), None
        if source is not None and self.rows.get(url_hash(source), (None,))[0] == source:
            source, source_hash = None, url_hash(source)
        clean = Cleaner()
        self.rows[key] = (
            url, level, shard_of(origin(url), self.shards), source_hash, source, clean.text(keyword, "keyword"),
            status, error_reason, error_message, score, status != URLStatus.DISCOVERED,
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

    def sorted(self, run_key: int) -> list[tuple]:
        return [(run_key, *self.rows[key]) for key in sorted(self.rows)]

    def links(self) -> list[tuple]:
        """(url hash, level, source hash, source page, score) of the rows still to fetch, in key order."""
        return [
            (key, row[1], row[3], row[4], row[9])
            for key, row in sorted(self.rows.items())
            if row[6] == URLStatus.DISCOVERED
        ]


class Frontier(Repository):
    """Each run's URLs: added level by level, read shard by shard, budgeted, and committed with what their
    pages found."""

    def add_urls(
        self, run_id: str, level: int, links: list[tuple[str, str | None, str | None]], shards: int
    ) -> int:
        """Add (url, source page, search keyword) links at ``level``; URLs the run already has are kept as
        they are. Returns how many URLs were new to the run."""
        rows = FrontierRows(shards)
        for url, source_page, keyword in links:
            rows.add(url, level, source_page, keyword)
        with self._transaction() as cur:
            return _write(cur, run_id, rows)

    def pending_shards(self, run_id: str, level: int) -> list[int]:
        """Shards of a level with URLs still to fetch."""
        with self._transaction() as cur:
            cur.execute(
                f"SELECT DISTINCT shard FROM frontier WHERE run_key = {RUN_KEY} AND level = %(level)s "
                "AND status = %(status)s ORDER BY shard",
                {"run_id": run_id, "level": level, "status": URLStatus.DISCOVERED},
            )
            return [row[0] for row in cur.fetchall()]

    def pending_urls(
        self, run_id: str, level: int, shard: int, page_size: int = PENDING_PAGE
    ) -> Iterator[tuple[str, str | None, str | None, float]]:
        """(url, source page, search keyword, link score) of a shard's URLs still to fetch, in the order of
        ``by_priority``, as they were when the reading began. The database sorts them once, in a cursor held
        past its transaction, and they are read ``page_size`` at a time: neither the crawl's memory nor an
        open transaction grows with the shard."""
        cursor = self.conn.cursor(name=f"pending_{level}_{shard}", withhold=True)
        cursor.itersize = page_size
        try:
            with self.conn:
                cursor.execute(
                    _PENDING,
                    {"run_id": run_id, "level": level, "shard": shard, "status": URLStatus.DISCOVERED},
                )
            yield from cursor  # each page a FETCH, in whatever transaction the connection is in
        finally:
            cursor.close()
            self.conn.commit()

    def pending_deeper(
        self, run_id: str, shard: int, level: int, deepest: int, min_score: float
    ) -> list[tuple[int, str, str | None, str | None, float]]:
        """(level, url, source page, search keyword, link score) of a shard's URLs still to fetch below
        ``level`` down to ``deepest`` and scoring at least ``min_score``, level by level in the order of
        ``by_priority``: the links a shard's crawl takes on as its pages commit them."""
        with self._transaction() as cur:
            cur.execute(
                _PENDING_DEEPER,
                {"run_id": run_id, "shard": shard, "level": level, "deepest": deepest,
                 "status": URLStatus.DISCOVERED, "min_score": min_score},
            )  # fmt: skip
            return cur.fetchall()

    def hold_shard(self, run_id: str, shard: int) -> None:
        """Hold a shard of the run for this connection's crawl, waiting while another holds it (a killed task's
        hold ends with its connection). One holder at a time keeps a host's politeness across workers."""
        with self._transaction() as cur:
            cur.execute(f"SELECT pg_advisory_lock({RUN_KEY}, %(shard)s)", {"run_id": run_id, "shard": shard})

    def adopt_shard(self, run_id: str, level: int, shards: int, held: Collection[int]) -> int | None:
        """Of the run's ``shards``, one whose URLs left to fetch down to level + 1 are all at level + 1 (no task
        of ``level`` is to crawl it) and that no one holds, while another task of the run is still at work; it
        is held for this connection from now on, so an idle task of ``level`` takes its next level on rather
        than leave it to wait for the slowest task. ``held``: those this connection holds already."""
        with self._transaction() as cur:
            cur.execute(
                _ADOPTABLE,
                {"run_id": run_id, "level": level, "shards": shards, "levels": list(range(level + 1)),
                 "status": URLStatus.DISCOVERED},
            )  # fmt: skip
            for (shard,) in cur.fetchall():
                if shard in held:
                    continue
                cur.execute(
                    f"SELECT pg_try_advisory_lock({RUN_KEY}, %(shard)s)", {"run_id": run_id, "shard": shard}
                )
                if cur.fetchone()[0]:
                    return shard
            return None

    def release_shards(self) -> None:
        """Let go of every shard this connection holds; a connection that is lost holds none any more."""
        try:
            with self._transaction() as cur:
                cur.execute("SELECT pg_advisory_unlock_all()")
        except (psycopg2.OperationalError, psycopg2.InterfaceError) as exc:
            log.warning("shards not released, the connection is lost (and with it its holds): %s", exc)

    def pending_origins(self, run_id: str, level: int, shard: int) -> dict[str, int]:
        """URLs still to fetch per origin of a shard's level."""
        with self._transaction() as cur:
            cur.execute(
                f"SELECT geoweb_origin(url), count(*) FROM frontier WHERE run_key = {RUN_KEY} "
                "AND shard = %(shard)s AND level = %(level)s AND status = %(status)s GROUP BY 1 ORDER BY 1",
                {"run_id": run_id, "level": level, "shard": shard, "status": URLStatus.DISCOVERED},
            )
            return dict(cur.fetchall())

    def take_deferred(self, run_id: str, shards: int) -> tuple[str | None, int]:
        """Add to the run, each at its level with its source page, keyword and score, the URLs the run before
        it (the latest begun earlier and ended) deferred; returns that run (None without one) and the URLs
        new to this run. Done again, it adds nothing more."""
        with self._transaction() as cur:
            cur.execute(_RUN_BEFORE, {"run_id": run_id, "running": RunStatus.RUNNING})
            row = cur.fetchone()
            if row is None:
                return None, 0
            earlier = row[0]
            cur.execute(
                "SELECT url, level, source_page, keyword, score FROM frontier_urls "
                "WHERE run_id = %s AND status = %s",
                (earlier, URLStatus.DEFERRED),
            )
            rows = FrontierRows(shards)
            for url, level, source_page, keyword, score in cur:
                rows.add(url, level, source_page, keyword, score=score)
            return earlier, _write(cur, run_id, rows)

    def prune_earlier(self, run_id: str) -> tuple[int, int]:
        """Delete the frontier rows past the seeds of the runs of the run's crawl that ended before it; returns
        (rows, runs). What a later run needs of them is in ``page_states`` (and ``take_deferred`` reads only the
        latest run, kept until its next run ends); each run's report was stored when it ended. The seeds stay,
        for ``Runs.validated_seeds``."""
        with self._transaction() as cur:
            cur.execute(_EARLIER_RUNS_ROWS, {"run_id": run_id, "running": RunStatus.RUNNING})
            rows, runs = cur.fetchone()
            return rows, runs

    def skip_over_budget(self, run_id: str, level: int, fraction: float, min_score: float) -> int:
        """Mark the URLs of a level the link budget does not follow 'skipped' (reason 'budget'); returns how
        many are skipped. The budget is taken over all the level's URLs, whatever their status, in the order
        of ``by_priority``, so redoing it skips the same set."""
        with self._transaction() as cur:
            level_of_run = {"run_id": run_id, "level": level}
            cur.execute(
                f"SELECT count(*) FROM frontier WHERE run_key = {RUN_KEY} AND level = %(level)s", level_of_run
            )
            kept = kept_count(cur.fetchone()[0], fraction)
            cur.execute(_SKIP_OVER_BUDGET, level_of_run | {"kept": kept, "min_score": min_score})
            cur.execute(
                f"SELECT count(*) FROM frontier WHERE run_key = {RUN_KEY} AND level = %(level)s "
                "AND error_reason = 'budget'",
                level_of_run,
            )
            return cur.fetchone()[0]

    def origin_counts(self, run_id: str, shard: int, origins: list[str]) -> dict[str, int]:
        """Frontier URLs per origin of a shard (every level, every status): what a host's page budget has
        used."""
        with self._transaction() as cur:
            cur.execute(
                f"SELECT geoweb_origin(url), count(*) FROM frontier WHERE run_key = {RUN_KEY} "
                "AND shard = %(shard)s AND geoweb_origin(url) = ANY(%(origins)s) GROUP BY 1",
                {"run_id": run_id, "shard": shard, "origins": list(origins)},
            )
            counts = dict(cur.fetchall())
        return {o: counts.get(o, 0) for o in origins}

    def set_aside(self, run_id: str) -> dict[str, str]:
        """The origins a crawl of the run set aside, with the reason of each (a later shard defers them too); a
        URL deferred for the crawl's own limits (``DeferReason.of_hosts``) sets no host aside."""
        with self._transaction() as cur:
            cur.execute(
                "SELECT DISTINCT ON (geoweb_origin(url)) geoweb_origin(url), error_reason FROM frontier "
                f"WHERE run_key = {RUN_KEY} AND status = %(status)s AND error_reason = ANY(%(reasons)s) "
                "ORDER BY geoweb_origin(url), updated_at",
                {"run_id": run_id, "status": URLStatus.DEFERRED, "reasons": list(DeferReason.of_hosts())},
            )
            return dict(cur.fetchall())

    def carry_over(
        self, run_id: str, crawl: str, pages: list[tuple[str, int, str | None, bool]], shards: int
    ) -> bool:
        """Carry pages over unasked in SQL, given as (url, level, search keyword, whether its links are
        followed), in one transaction: their rows fetched and, for those followed, the links ``crawl`` keeps of
        them one level down. Redone, it changes nothing. False, with nothing written, when the links a state
        keeps do not read (a damaged state): the pages are then the engine's to read."""
        urls, levels, keywords, followed = (sql_array(column) for column in zip(*pages, strict=True))
        carried = {"run_id": run_id, "crawl": crawl, "urls": urls, "levels": levels, "keywords": keywords,
                   "followed": followed}  # fmt: skip
        try:
            with self._transaction() as cur:
                cur.execute(_CARRIED_ROWS, carried | {"shards": shards})
        except (psycopg2.DataError, psycopg2.IntegrityError) as exc:
            log.warning("crawl %s: the kept links of %d pages do not read (%s); not carried over in SQL",
                        crawl, len(pages), error_line(exc))  # fmt: skip
            return False
        return True

    def deferred_by_reason(self, run_id: str) -> dict[str, int]:
        """The run's deferred URLs per ``DeferReason``, most first."""
        with self._transaction() as cur:
            cur.execute(
                f"SELECT error_reason, count(*) FROM frontier WHERE run_key = {RUN_KEY} AND status = %(status)s "
                "GROUP BY 1 ORDER BY 2 DESC, 1",
                {"run_id": run_id, "status": URLStatus.DEFERRED},
            )
            return dict(cur.fetchall())

    def commit_pages(
        self, run_id: str, pages: list[Page], shards: int, keyword_of: dict[str, str | None] | None = None
    ) -> None:
        """Save what the pages found, in one transaction: their resources and datasets, the run's link to each
        resource (at the lowest level), a check row of each measured capabilities fetch, their links one level
        down, and each page's outcome (fetched, error, or skipped by robots.txt). ``keyword_of`` maps a page
        URL to its search keyword; without it the frontier's is used.

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
                f"SELECT url, keyword FROM frontier WHERE run_key = {RUN_KEY} "
                "AND geoweb_url_hash(url) = ANY(%(hashes)s::bigint[])",
                {"run_id": run_id, "hashes": sql_array(url_hash(url) for url in urls)},
            )
            return dict(cur.fetchall())

    def _refuse(self, run_id: str, page: Page, exc: psycopg2.Error) -> None:
        message = Cleaner().text(f"the database refused its rows: {exc}".strip(), "error message")
        log.error("%s: %s", page.url, message)
        with self._transaction() as cur:
            cur.execute(
                "UPDATE frontier SET status = %(status)s, error_reason = 'store', error_message = %(message)s, "
                f"updated_at = now() WHERE run_key = {RUN_KEY} AND geoweb_url_hash(url) = %(url_hash)s",
                {
                    "status": URLStatus.ERROR,
                    "message": message,
                    "run_id": run_id,
                    "url_hash": url_hash(page.url),
                },
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
    frontier = FrontierRows(shards)
    frontier.add_pages(pages, keyword_of)
    _write(cur, run_id, frontier)


def _write(cur, run_id: str, rows: FrontierRows) -> int:
    cur.execute(f"SELECT {RUN_KEY}", {"run_id": run_id})
    run_key = cur.fetchone()[0]
    if run_key is None:
        raise StoreError(f"unknown run {run_id!r}: runs.begin was never called for it")
    added = len(
        execute_values(cur, _UPSERT, rows.sorted(run_key), template=_VALUES, page_size=PAGE_SIZE, fetch=True)
    )
    links = rows.links()
    if links:
        shallower = SHALLOWER.format(run_key=int(run_key))
        execute_values(cur, shallower, links, template=SHALLOWER_VALUES, page_size=PAGE_SIZE)
    return added
