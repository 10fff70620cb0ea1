"""Harvest runs (``crawl_runs``) and what each records besides its frontier: per-shard level figures
(``crawl_levels``), the searches its seeding finished (``seed_searches``), its seeds' sources, and its recall
curve."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import psycopg2

from geoweb.crawl.pagestates import RevisitKey
from geoweb.errors import StoreError
from geoweb.links.priority import PERCENTS, RecallCurve, recall_curve
from geoweb.models import LevelStats, RecordedLink, RunStatus, URLStatus
from geoweb.store.frontier import RUN_KEY
from geoweb.store.repository import Repository, json_text

RECALL_BATCH = 10_000  # frontier rows read per round trip by recall_curve
# crawl_costs' figures: requests sent, bytes read, pages read new to the crawl or changed, pages gone (404,
# 410), pages carried over from the crawl's last run (a 304, the same bytes, not asked) and the bytes those
# not read would have cost
COST_FIELDS = (
    "requests", "bytes_read", "new_pages", "changed_pages", "gone_pages", "not_modified", "same_bytes", "not_due",
    "bytes_saved",
)  # fmt: skip


class Runs(Repository):
    """Runs: begun, ended, and what they measured."""

    def begin(self, run_id: str, params: dict, crawl: str | None = None) -> None:
        """Start a run of ``crawl`` (the crawl it continues), or resume it: a resumed run keeps its started_at
        and its rows."""
        with self._transaction() as cur:
            cur.execute(
                "INSERT INTO crawl_runs (run_id, status, params, crawl) "
                "VALUES (%(id)s, %(running)s, %(params)s, %(crawl)s) "
                "ON CONFLICT (run_id) DO UPDATE SET status = %(running)s, params = EXCLUDED.params, "
                "crawl = EXCLUDED.crawl, finished_at = NULL",
                {
                    "id": run_id,
                    "running": RunStatus.RUNNING,
                    "params": json_text(params, f"run {run_id} params"),
                    "crawl": crawl,
                },
            )

    def end(self, run_id: str, status: RunStatus, summary: dict, report_png: bytes | None = None) -> None:
        with self._transaction() as cur:
            cur.execute(
                "UPDATE crawl_runs SET status = %s, summary = %s, report_png = %s, finished_at = now() "
                "WHERE run_id = %s",
                (status, json_text(summary, f"run {run_id} summary"),
                 None if report_png is None else psycopg2.Binary(report_png), run_id),
            )  # fmt: skip
            if cur.rowcount == 0:
                raise StoreError(f"unknown run {run_id!r}: runs.begin was never called for it")

    def report_png(self, run_id: str) -> bytes | None:
        """The per-level plot ``end`` stored with the run, or None."""
        with self._transaction() as cur:
            cur.execute("SELECT report_png FROM crawl_runs WHERE run_id = %s", (run_id,))
            row = cur.fetchone()
        return bytes(row[0]) if row and row[0] is not None else None

    def latest(self) -> str | None:
        """The run started last, or None when there is none."""
        with self._transaction() as cur:
            cur.execute("SELECT run_id FROM crawl_runs ORDER BY started_at DESC, run_id DESC LIMIT 1")
            row = cur.fetchone()
        return row[0] if row else None

    def conf(self, run_id: str) -> dict[str, Any]:
        """The params a run was begun with (``HarvestParams.to_conf``)."""
        with self._transaction() as cur:
            cur.execute("SELECT params FROM crawl_runs WHERE run_id = %s", (run_id,))
            row = cur.fetchone()
        if row is None:
            raise StoreError(f"unknown run {run_id!r}")
        return row[0]

    def set_revisit_cutoff(self, run_id: str, cutoff: tuple[float, RevisitKey | None] | None) -> None:
        """Keep the run's revisit cutoff (``PageStates.cutoff``), drawn once for all its shards."""
        with self._transaction() as cur:
            cur.execute(
                "UPDATE crawl_runs SET revisit_cutoff = %s WHERE run_id = %s",
                (None if cutoff is None else json_text(cutoff, f"run {run_id} revisit cutoff"), run_id),
            )

    def started_at(self, run_id: str) -> float:
        """When the run began (a resumed run keeps it), as a Unix time: its time budget counts from it."""
        with self._transaction() as cur:
            cur.execute(
                "SELECT extract(epoch FROM started_at)::float8 FROM crawl_runs WHERE run_id = %s", (run_id,)
            )
            return cur.fetchone()[0]

    def revisit_cutoff(self, run_id: str) -> tuple[float, RevisitKey | None] | None:
        """The run's revisit cutoff, or None (every known page is asked)."""
        with self._transaction() as cur:
            cur.execute("SELECT revisit_cutoff FROM crawl_runs WHERE run_id = %s", (run_id,))
            row = cur.fetchone()
        if row is None or row[0] is None:
            return None
        drawn_at, last = row[0]
        if last is None:
            return drawn_at, None
        # jsonb keeps a number's decimal digits: the largest float comes back as an integer a little below it
        value, level, visited_at, url = last
        return drawn_at, (float(value), int(level), float(visited_at), url)

    # --- costs ---

    def add_costs(self, run_id: str, level: int, shard: int, costs: Mapping[str, int]) -> None:
        """Add what a crawl task's attempt spent and saved (``COST_FIELDS``) to its row of ``crawl_costs``."""
        values = [int(costs.get(name, 0)) for name in COST_FIELDS]
        with self._transaction() as cur:
            cur.execute(
                f"INSERT INTO crawl_costs (run_id, level, shard, {', '.join(COST_FIELDS)}) "
                f"VALUES (%s, %s, %s, {', '.join(['%s'] * len(COST_FIELDS))}) "
                "ON CONFLICT (run_id, level, shard) DO UPDATE SET "
                + ", ".join(f"{name} = crawl_costs.{name} + EXCLUDED.{name}" for name in COST_FIELDS),
                (run_id, level, shard, *values),
            )

    def costs(self, run_id: str) -> dict[str, int]:
        """What the run's crawl tasks spent and saved, summed (``COST_FIELDS``)."""
        with self._transaction() as cur:
            cur.execute(
                f"SELECT {', '.join(f'coalesce(sum({name}), 0)' for name in COST_FIELDS)} "
                "FROM crawl_costs WHERE run_id = %s",
                (run_id,),
            )
            return dict(zip(COST_FIELDS, map(int, cur.fetchone()), strict=True))

    def crawl_costs(self, run_id: str, runs: int = 10) -> list[tuple[str, dict[str, int]]]:
        """(run id, costs) of the last ``runs`` runs of the crawl ``run_id`` continues, up to it, oldest
        first."""
        sums = ", ".join(f"coalesce(sum(c.{name}), 0)" for name in COST_FIELDS)
        with self._transaction() as cur:
            cur.execute(
                f"SELECT r.run_id, {sums} FROM crawl_runs r LEFT JOIN crawl_costs c USING (run_id) "
                "JOIN crawl_runs this ON this.run_id = %s AND r.crawl = this.crawl "
                "AND r.started_at <= this.started_at "
                "GROUP BY r.run_id, r.started_at ORDER BY r.started_at DESC LIMIT %s",
                (run_id, runs),
            )
            rows = cur.fetchall()
        return [
            (run, dict(zip(COST_FIELDS, map(int, values), strict=True))) for run, *values in reversed(rows)
        ]

    def pace(self, crawl: str) -> float | None:
        """Requests per second, over its whole wall time, of the last successful run of ``crawl`` that sent
        any; None without one."""
        with self._transaction() as cur:
            cur.execute(
                "SELECT sum(c.requests) / greatest(extract(epoch FROM r.finished_at - r.started_at), 1) "
                "FROM crawl_runs r JOIN crawl_costs c USING (run_id) WHERE r.crawl = %s AND r.status = %s "
                "GROUP BY r.run_id HAVING sum(c.requests) > 0 ORDER BY r.finished_at DESC LIMIT 1",
                (crawl, RunStatus.SUCCESS),
            )
            row = cur.fetchone()
        return None if row is None else float(row[0])

    # --- levels ---

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

    def recall_curve(self, run_id: str, percents: Sequence[int] = PERCENTS) -> RecallCurve:
        """The run's recall curve (``links.priority.recall_curve``) from its frontier and each resource's
        ``found_on``, both streamed from one snapshot. Resources found before scores were recorded are left
        out."""
        with self.conn, self.conn.cursor(name="recall_links") as links, self.conn.cursor() as found:
            links.itersize = RECALL_BATCH
            links.execute(
                "SELECT url, level, source_page, score FROM frontier_urls WHERE run_id = %s", (run_id,)
            )
            found.execute(
                "SELECT found_on FROM run_resources WHERE run_id = %s AND found_on IS NOT NULL", (run_id,)
            )
            return recall_curve((RecordedLink(*row) for row in links), (url for (url,) in found), percents)

    # --- seeding ---

    def searches_done(self, run_id: str) -> set[tuple[str, str]]:
        """The (provider, keyword) searches the run's seeding has finished."""
        with self._transaction() as cur:
            cur.execute("SELECT provider, keyword FROM seed_searches WHERE run_id = %s", (run_id,))
            return set(cur.fetchall())

    def search_done(self, run_id: str, provider: str, keyword: str, records: int) -> None:
        """Record a finished search (after its seeds are committed, so that none is lost)."""
        with self._transaction() as cur:
            cur.execute(
                "INSERT INTO seed_searches (run_id, provider, keyword, records) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (run_id, provider, keyword) DO UPDATE SET records = EXCLUDED.records, "
                "searched_at = now()",
                (run_id, provider, keyword, records),
            )

    def set_seed_sources(self, run_id: str, sources: Mapping[str, str]) -> None:
        """Give a run's seeds (level 0, not fetched yet) the page that offered them: a catalogue's records
        lead to them, as a page's links lead to the URLs of the next level."""
        urls = sorted(sources)
        with self._transaction() as cur:
            cur.execute(
                "UPDATE frontier f SET source_page = s.source, source_hash = NULL "
                "FROM unnest(%(urls)s::text[], %(sources)s::text[]) AS s(url, source) "
                f"WHERE f.run_key = {RUN_KEY} AND f.level = 0 AND f.status = %(status)s "
                "AND geoweb_url_hash(f.url) = geoweb_url_hash(s.url)",
                {"urls": urls, "sources": [sources[u] for u in urls], "run_id": run_id,
                 "status": URLStatus.DISCOVERED},
            )  # fmt: skip

    def validated_seeds(self, run_prefix: str) -> dict[str, datetime]:
        """URL -> when it was last fetched as a seed by a successful run whose id starts with ``run_prefix``."""
        with self._transaction() as cur:
            cur.execute(
                "SELECT f.url, max(f.updated_at) FROM frontier f JOIN crawl_runs c ON c.run_key = f.run_key "
                "WHERE starts_with(c.run_id, %s) AND c.status = %s AND f.level = 0 AND f.status = %s "
                "GROUP BY f.url",
                (run_prefix, RunStatus.SUCCESS, URLStatus.FETCHED),
            )
            return dict(cur.fetchall())
