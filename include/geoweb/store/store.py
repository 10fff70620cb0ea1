"""The harvest database: runs, per-level statistics, resources and datasets, and the crawl frontier.

Every write is an upsert on a unique key, so redoing a page, a level or a whole run never duplicates a row;
rows are written in key order, so that concurrent workers lock them in one order and cannot deadlock.
"""

from __future__ import annotations

import logging
import os
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC
from typing import TYPE_CHECKING

import psycopg2
from psycopg2.extras import execute_values

from geoweb.crawl.report import LevelStats
from geoweb.errors import StoreError
from geoweb.links.priority import (
    PERCENTS,
    SQL_BY_PRIORITY,
    SQL_SHUFFLE_KEY,
    RecallCurve,
    check_percents,
    kept_count,
    kept_counts,
)
from geoweb.models import Dataset, Resource
from geoweb.store.catalogue import CatalogueStore
from geoweb.store.clean import Cleaner
from geoweb.store.concepts import load_concepts
from geoweb.store.frontier import COLUMNS as FRONTIER_COLUMNS
from geoweb.store.frontier import FrontierRows
from geoweb.store.geometry import boxes_of
from geoweb.store.migrations import apply_migrations
from geoweb.store.revisit import RevisitStore
from geoweb.store.rows import DATASET_COLUMNS, RESOURCE_COLUMNS, ResourceRows, resource_rows

if TYPE_CHECKING:
    from geoweb.crawl.engine import Page

log = logging.getLogger("geoweb.store")

PAGE_SIZE = 1000  # rows per INSERT statement
EXPORT_BATCH = 1000  # resources read per round trip by export_run
# SQLSTATE classes of data the database refuses (data exception, program limit): a page whose rows
# hit one is marked as failed; any other error (a lost connection, a run never begun) propagates, and the
# pages stay to be redone.
REFUSED_DATA = ("22", "54")

_RESOURCES_UPSERT = f"""
INSERT INTO resources ({", ".join(RESOURCE_COLUMNS)}) VALUES %s
ON CONFLICT (url, type) DO UPDATE SET
    version = EXCLUDED.version, title = EXCLUDED.title, abstract = EXCLUDED.abstract,
    keywords = EXCLUDED.keywords, provider = EXCLUDED.provider, bbox = EXCLUDED.bbox, extra = EXCLUDED.extra,
    content_sha256 = EXCLUDED.content_sha256, last_seen = now(), last_status = 'ok'
RETURNING id, url, type
"""
_DATASETS_UPSERT = f"""
INSERT INTO datasets AS d ({", ".join(DATASET_COLUMNS)}) VALUES %s
ON CONFLICT (resource_id, position) DO UPDATE SET
    name = EXCLUDED.name, title = EXCLUDED.title, keywords = EXCLUDED.keywords,
    footprint = EXCLUDED.footprint, extra = EXCLUDED.extra, concepts = EXCLUDED.concepts
WHERE (d.name, d.title, d.keywords, d.footprint, d.extra, d.concepts)
    IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.title, EXCLUDED.keywords, EXCLUDED.footprint, EXCLUDED.extra,
                      EXCLUDED.concepts)
"""
# datasets past the end of a resource's new list are gone from its document
_DATASETS_TRIM = """
DELETE FROM datasets d USING unnest(%s::bigint[], %s::integer[]) AS kept(resource_id, count)
WHERE d.resource_id = kept.resource_id AND d.position >= kept.count
"""
_RUN_RESOURCES_UPSERT = """
INSERT INTO run_resources AS rr (run_id, resource_id, level, source_page, discovered_at, found_on) VALUES %s
ON CONFLICT (run_id, resource_id) DO UPDATE SET
    level = EXCLUDED.level, source_page = EXCLUDED.source_page, discovered_at = EXCLUDED.discovered_at,
    found_on = EXCLUDED.found_on
WHERE EXCLUDED.level < rr.level
"""
# A URL already in the frontier keeps its level; only an outcome (not 'discovered') updates it. Rows come
# back when inserted or updated, so for new links the count is the number of URLs new to the run.
_FRONTIER_UPSERT = f"""
INSERT INTO frontier AS f ({", ".join(FRONTIER_COLUMNS)}) VALUES %s
ON CONFLICT (run_id, url) DO UPDATE SET
    status = EXCLUDED.status, error_reason = EXCLUDED.error_reason, error_message = EXCLUDED.error_message,
    updated_at = now()
WHERE EXCLUDED.status <> 'discovered'
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
    WHERE f.run_id = %(run_id)s AND f.status = 'discovered'
        AND (ranked.position > %(kept)s OR ranked.score < %(min_score)s)
    ORDER BY f.url FOR UPDATE OF f
)
UPDATE frontier f SET status = 'skipped', error_reason = 'budget',
    error_message = 'not followed: under the link budget', updated_at = now()
FROM dropped WHERE f.run_id = %(run_id)s AND f.url = dropped.url
"""
# links.priority.recall_curve in SQL. Per URL, the index of the smallest budget that keeps it in its level,
# by score and by chance: width_bucket counts the level's kept counts (one per budget) at or below its
# position. Then, from the URLs reached whatever their source (seeds, no source, a source not recorded),
# source to link down the levels, each URL needs the larger of its own and its source's budget; URLs never
# joined (a source at the same level or deeper) need none of the budgets. Rows: (scored, baseline, resources).
_RECALL_NEEDS = f"""
WITH RECURSIVE counts AS (
    SELECT level, array_agg(kept ORDER BY i) AS kept
    FROM unnest(%(levels)s::integer[], %(kept)s::bigint[]) WITH ORDINALITY AS c(level, kept, i)
    GROUP BY level
), ranked AS MATERIALIZED (
    SELECT f.*, f.level = 0 OR source.url IS NULL AS root
    FROM (
        SELECT url, level, source_page,
            width_bucket(row_number() OVER (PARTITION BY level ORDER BY {SQL_BY_PRIORITY}) - 1, counts.kept)
                AS by_score,
            width_bucket(row_number() OVER (PARTITION BY level ORDER BY {SQL_SHUFFLE_KEY}) - 1, counts.kept)
                AS by_chance
        FROM frontier JOIN counts USING (level)
        WHERE run_id = %(run_id)s
    ) f LEFT JOIN frontier source ON source.run_id = %(run_id)s AND source.url = f.source_page
), reached (url, level, by_score, by_chance) AS (
    SELECT url, level, by_score, by_chance FROM ranked WHERE root
    UNION ALL
    SELECT r.url, r.level, greatest(r.by_score, p.by_score), greatest(r.by_chance, p.by_chance)
    FROM reached p JOIN ranked r ON r.source_page = p.url AND r.level > p.level AND NOT r.root
)
SELECT CASE WHEN f.url IS NULL THEN 0 ELSE coalesce(reached.by_score, %(unreached)s) END,
    CASE WHEN f.url IS NULL THEN 0 ELSE coalesce(reached.by_chance, %(unreached)s) END,
    count(*)
FROM run_resources rr
    LEFT JOIN ranked f ON f.url = rr.found_on
    LEFT JOIN reached ON reached.url = rr.found_on
WHERE rr.run_id = %(run_id)s AND rr.found_on IS NOT NULL
GROUP BY 1, 2
"""
_EXPORT_RESOURCES = """
SELECT r.id, r.url, r.type, r.version, r.title, r.abstract, r.keywords, r.provider, ST_AsBinary(r.bbox),
       r.extra, r.content_sha256, rr.level, rr.source_page, rr.discovered_at
FROM run_resources rr JOIN resources r ON r.id = rr.resource_id
WHERE rr.run_id = %s
ORDER BY rr.level, r.id
"""
_EXPORT_DATASETS = """
SELECT resource_id, name, title, keywords, ST_AsBinary(footprint), extra, concepts
FROM datasets WHERE resource_id = ANY(%s)
ORDER BY resource_id, position
"""


class Store(CatalogueStore, RevisitStore):
    """One connection to the harvest database (a psycopg2 connection: one Store per thread). Each method is
    one transaction. Usable as a context manager, which closes the connection."""

    def __init__(self, dsn: str):
        try:
            self.conn = psycopg2.connect(dsn, application_name="geoweb")
        except psycopg2.Error as exc:  # the message names host, port and user, never the password
            raise StoreError(f"cannot connect to the harvest database: {str(exc).strip()}") from None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> Store:
        """The store named by GEOWEB_DB (a libpq DSN or postgresql:// URI)."""
        return cls(cls.dsn_from_env(environ))

    @staticmethod
    def dsn_from_env(environ: Mapping[str, str] = os.environ) -> str:
        """The DSN of GEOWEB_DB; StoreError when it is not set."""
        dsn = environ.get("GEOWEB_DB", "").strip()
        if not dsn:
            raise StoreError(
                "GEOWEB_DB is not set: set it to the PostGIS database, postgresql://USER:PASSWORD@HOST:PORT/DB"
            )
        return dsn

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def _transaction(self) -> Iterator:
        with self.conn, self.conn.cursor() as cur:
            yield cur

    def migrate(self) -> list[str]:
        """Apply pending migrations (see ``geoweb.store.migrations``) and load the ontology's concepts;
        returns the versions applied."""
        applied = apply_migrations(self.conn)
        load_concepts(self.conn)
        return applied

    # --- runs ---

    def begin_run(self, run_id: str, params: dict) -> None:
        """Start a run, or resume it: a resumed run keeps its started_at and its rows."""
        with self._transaction() as cur:
            cur.execute(
                "INSERT INTO crawl_runs (run_id, status, params) VALUES (%s, 'running', %s) "
                "ON CONFLICT (run_id) DO UPDATE SET status = 'running', params = EXCLUDED.params, "
                "finished_at = NULL",
                (run_id, _json(params, f"run {run_id} params")),
            )

    def end_run(self, run_id: str, status: str, summary: dict, report_png: bytes | None = None) -> None:
        with self._transaction() as cur:
            cur.execute(
                "UPDATE crawl_runs SET status = %s, summary = %s, report_png = %s, finished_at = now() "
                "WHERE run_id = %s",
                (status, _json(summary, f"run {run_id} summary"),
                 None if report_png is None else psycopg2.Binary(report_png), run_id),
            )  # fmt: skip
            if cur.rowcount == 0:
                raise StoreError(f"unknown run {run_id!r}: begin_run was never called for it")

    def report_png(self, run_id: str) -> bytes | None:
        """The per-level plot ``end_run`` stored with the run, or None."""
        with self._transaction() as cur:
            cur.execute("SELECT report_png FROM crawl_runs WHERE run_id = %s", (run_id,))
            row = cur.fetchone()
        return bytes(row[0]) if row and row[0] is not None else None

    def latest_run(self) -> str | None:
        """The run started last, or None when there is none."""
        with self._transaction() as cur:
            cur.execute("SELECT run_id FROM crawl_runs ORDER BY started_at DESC, run_id DESC LIMIT 1")
            row = cur.fetchone()
        return row[0] if row else None

    # --- crawl state ---

    def add_urls(
        self, run_id: str, level: int, links: list[tuple[str, str | None, str | None]], shards: int
    ) -> int:
        """Add (url, source page, search keyword) links at ``level``; URLs the run already has are kept as
        they are. Returns how many URLs were new to the run."""
        rows = FrontierRows(run_id, shards)
        for url, source_page, keyword in links:
            rows.add(url, level, source_page, keyword)
        with self._transaction() as cur:
            return self._write_frontier(cur, rows)

    def pending_shards(self, run_id: str, level: int) -> list[int]:
        """Shards of a level with URLs still to fetch."""
        with self._transaction() as cur:
            cur.execute(
                "SELECT DISTINCT shard FROM frontier WHERE run_id = %s AND level = %s AND status = 'discovered' "
                "ORDER BY shard",
                (run_id, level),
            )
            return [row[0] for row in cur.fetchall()]

    def pending_urls(
        self, run_id: str, level: int, shard: int
    ) -> list[tuple[str, str | None, str | None, float]]:
        """(url, source page, search keyword, link score) of a shard's URLs still to fetch, best score first."""
        with self._transaction() as cur:
            cur.execute(
                "SELECT url, source_page, keyword, score FROM frontier "
                "WHERE run_id = %s AND level = %s AND shard = %s AND status = 'discovered' "
                "ORDER BY score DESC, url",
                (run_id, level, shard),
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

    def recall_curve(self, run_id: str, percents: Sequence[int] = PERCENTS) -> RecallCurve:
        """The run's recall curve (``links.priority.recall_curve``) from its frontier and each resource's
        ``found_on``, computed in the database: only a row per (budget by score, budget by chance) comes
        back. Resources found before scores were recorded are left out."""
        percents = check_percents(percents)
        with self._transaction() as cur:
            cur.execute("SELECT level, count(*) FROM frontier WHERE run_id = %s GROUP BY level", (run_id,))
            sizes = cur.fetchall()
            counts = [(level, kept) for level, links in sizes for kept in kept_counts(level, links, percents)]
            cur.execute(
                _RECALL_NEEDS,
                {
                    "run_id": run_id,
                    "levels": [level for level, _ in counts],
                    "kept": [kept for _, kept in counts],
                    "unreached": len(percents),
                },
            )
            return RecallCurve.tally(percents, cur.fetchall(), links=sum(links for _, links in sizes))

    def origin_counts(self, run_id: str, origins: list[str]) -> dict[str, int]:
        """Frontier URLs per origin (every level, every status): what a host's page budget has used."""
        with self._transaction() as cur:
            cur.execute(
                "SELECT origin, count(*) FROM frontier WHERE run_id = %s AND origin = ANY(%s) GROUP BY origin",
                (run_id, list(origins)),
            )
            counts = dict(cur.fetchall())
        return {o: counts.get(o, 0) for o in origins}

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
                self._save_pages(cur, run_id, pages, shards, keyword_of)
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

    def _save_pages(self, cur, run_id: str, pages: list[Page], shards: int, keyword_of: dict) -> None:
        found: dict[tuple[str, str], ResourceRows] = {}
        found_on: dict[tuple[str, str], str] = {}  # the page whose fetch found the resource
        for page in pages:
            for resource in page.resources:
                rows = resource_rows(resource, page, keyword_of.get(page.url))
                if rows and (rows.key not in found or rows.level < found[rows.key].level):
                    found[rows.key] = rows
                    found_on[rows.key] = page.url
        resources = [found[key] for key in sorted(found)]
        if resources:
            ids = self._upsert_resources(cur, resources)
            links = [
                (run_id, ids[r.key], r.level, r.source_page, r.discovered_at, found_on[r.key])
                for r in resources
            ]
            execute_values(cur, _RUN_RESOURCES_UPSERT, links, page_size=PAGE_SIZE)
        frontier = FrontierRows(run_id, shards)
        frontier.add_pages(pages, keyword_of)
        self._write_frontier(cur, frontier)

    def _upsert_resources(self, cur, resources: list[ResourceRows]) -> dict[tuple[str, str], int]:
        """Upsert resources and replace their dataset lists; returns the id of each (url, type)."""
        returned = execute_values(
            cur, _RESOURCES_UPSERT, [r.values for r in resources], page_size=PAGE_SIZE, fetch=True
        )
        ids = {(url, type_): id_ for id_, url, type_ in returned}
        datasets = [(ids[r.key], *d) for r in resources for d in r.datasets]
        if datasets:
            execute_values(cur, _DATASETS_UPSERT, datasets, page_size=PAGE_SIZE)
        cur.execute(_DATASETS_TRIM, ([ids[r.key] for r in resources], [len(r.datasets) for r in resources]))
        return ids

    def _write_frontier(self, cur, rows: FrontierRows) -> int:
        return len(execute_values(cur, _FRONTIER_UPSERT, rows.sorted(), page_size=PAGE_SIZE, fetch=True))

    def _refuse(self, run_id: str, page: Page, exc: psycopg2.Error) -> None:
        message = Cleaner().text(f"the database refused its rows: {exc}".strip(), "error message")
        log.error("%s: %s", page.url, message)
        with self._transaction() as cur:
            cur.execute(
                "UPDATE frontier SET status = 'error', error_reason = 'store', error_message = %s, "
                "updated_at = now() WHERE run_id = %s AND url = %s",
                (message, run_id, page.url),
            )

    # --- statistics ---

    def save_level_stats(self, run_id: str, level: int, shard: int, stats: LevelStats) -> None:
        """Record what a shard's attempt measured; ``level_stats`` takes its seconds."""
        with self._transaction() as cur:
            cur.execute(
                "INSERT INTO crawl_levels (run_id, level, shard, urls, resources, failures, seconds) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (run_id, level, shard) DO UPDATE SET "
                "urls = EXCLUDED.urls, resources = EXCLUDED.resources, failures = EXCLUDED.failures, "
                "seconds = EXCLUDED.seconds",
                (run_id, level, shard, stats.urls, stats.resources, stats.failures, stats.seconds),
            )

    def level_stats(self, run_id: str) -> list[LevelStats]:
        """Each level's figures, counted from the committed rows (``level_figures`` in the schema), so a shard
        redone after a crash counts every page once; a level's seconds are its slowest shard's."""
        with self._transaction() as cur:
            cur.execute(
                "SELECT level, urls, resources, failures, seconds, deferred, deferred_hosts "
                "FROM level_figures(%s)",
                (run_id,),
            )
            return [LevelStats(*row) for row in cur.fetchall()]

    def set_aside(self, run_id: str) -> dict[str, str]:
        """The origins a crawl of the run set aside, with the reason of each (a later shard defers them too)."""
        with self._transaction() as cur:
            cur.execute(
                "SELECT DISTINCT ON (origin) origin, error_reason FROM frontier "
                "WHERE run_id = %s AND status = 'deferred' ORDER BY origin, updated_at",
                (run_id,),
            )
            return dict(cur.fetchall())

    # --- export ---

    def export_run(self, run_id: str) -> Iterator[dict]:
        """The run's resources as ``Resource.to_record()`` records (the ``geoweb crawl`` JSON lines), by level,
        streamed from one snapshot: use the Store for nothing else until the iteration ends."""
        with self._transaction() as cur:
            cur.execute("SELECT 1 FROM crawl_runs WHERE run_id = %s", (run_id,))
            if cur.fetchone() is None:
                raise StoreError(f"unknown run {run_id!r}")
        with self.conn, self.conn.cursor(name="export_run") as resources, self.conn.cursor() as cur:
            resources.itersize = EXPORT_BATCH
            resources.execute(_EXPORT_RESOURCES, (run_id,))
            while batch := resources.fetchmany(EXPORT_BATCH):
                yield from _records(cur, batch)


def _json(value: dict, subject: str) -> str:
    clean = Cleaner()
    text = clean.json(value, "json")
    clean.log_changes(subject)
    return text


def _records(cur, batch: list[tuple]) -> Iterator[dict]:
    """Records of a batch of resource rows (``_EXPORT_RESOURCES``), with their datasets."""
    cur.execute(_EXPORT_DATASETS, ([row[0] for row in batch],))
    rows = cur.fetchall()
    datasets: dict[int, list[Dataset]] = defaultdict(list)
    for (resource_id, name, title, keywords, _, extra, concepts), box in zip(
        rows, _boxes(rows, 4), strict=True
    ):
        datasets[resource_id].append(
            Dataset(name=name, title=title, bbox=box, keywords=keywords, extra=extra, concepts=concepts)
        )
    for row, box in zip(batch, _boxes(batch, 8), strict=True):
        id_, url, type_, version, title, abstract, keywords, provider, _, extra, sha, level, source, at = row
        yield Resource(
            url=url, type=type_, version=version, title=title, abstract=abstract, keywords=keywords,
            provider=provider, datasets=datasets[id_], bbox=box, extra=extra, content_sha256=sha, level=level,
            source_page=source, discovered_at=at.astimezone(UTC).isoformat(timespec="seconds"),
        ).to_record()  # fmt: skip


def _boxes(rows: list[tuple], column: int) -> list:
    return boxes_of([None if row[column] is None else bytes(row[column]) for row in rows])
