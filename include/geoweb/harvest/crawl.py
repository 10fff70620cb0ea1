"""The steps of a crawl run, as the crawl DAG's tasks call them: start, seed by search, plan a level, crawl a
shard, finish.

The crawl state lives in the store's frontier (one row per URL of the run, keyed by a 64-bit hash of it), so
each step can be redone: a retried or killed task loses no URL and duplicates no row, and a failed run resumes where it
stopped. What a crawl learns of a URL (``page_states``) outlives the run: the next run of the same crawl asks
with the validators and carries over what did not change. A level's URLs are sharded by origin, so one host is crawled by one task at a time and per-host
politeness and robots.txt hold across workers.
"""

from __future__ import annotations

import asyncio
import io
import itertools
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from geoweb.connectors import ConnectorError, load_connector
from geoweb.connectors.candidates import Portal
from geoweb.connectors.search.base import SearchProvider
from geoweb.crawl import CrawlReport
from geoweb.crawl.engine import Crawler
from geoweb.crawl.factory import open_crawler
from geoweb.crawl.pagestates import UNREACHED_SECONDS, Brief, PageStates, Unchanged, Verdict, paced_budget
from geoweb.errors import StoreError
from geoweb.harvest.pagebuffer import PageBuffer
from geoweb.harvest.params import HarvestParams, budget_seconds
from geoweb.links.filters import URLFilters
from geoweb.models import LevelStats, Link, Page, Record, RunStatus
from geoweb.store import Store

log = logging.getLogger("geoweb.harvest")

STATES_READ = 500  # URLs of a shard whose kept states are read in one query, as its URLs are read


def start_run(store: Store, run_id: str, params: HarvestParams) -> int:
    """Begin (or resume) the run and add its seeds at level 0, and with ``catch_up`` what the run before
    deferred, at its levels; returns the new seeds."""
    store.runs.begin(run_id, params.to_conf(), crawl=params.crawl_name())
    forgotten = store.page_states.forget_unreached(params.crawl_name(), UNREACHED_SECONDS)
    if forgotten:
        log.info("run %s: %d URLs no run reached for %d days left the crawl's schedule", run_id, forgotten,
                 UNREACHED_SECONDS // 86400)  # fmt: skip
    _draw_revisit_cutoff(store, run_id, params)
    seeds = _level_zero(params, ((seed, None, None) for seed in params.seeds))
    added = store.frontier.add_urls(run_id, 0, seeds, params.shards)
    log.info("run %s: %d seeds, %d new to the run", run_id, len(seeds), added)
    if params.catch_up:
        earlier, taken = store.frontier.take_deferred(run_id, params.shards)
        log.info("run %s: catch-up: %d URLs that run %s deferred are new to this run", run_id, taken, earlier)
    return added


def _draw_revisit_cutoff(store: Store, run_id: str, params: HarvestParams) -> None:
    """With a revisit budget, the known pages the run asks again, drawn once for all its shards. A time budget
    is one too: the requests the crawl's last run sent in that time, spent on the pages likeliest to have
    changed rather than on those first in crawl order."""
    budget, budget_bytes = params.revisit_budget, params.revisit_bytes()
    if params.time_budget_hours is not None and not params.full_recrawl:
        pace = store.runs.pace(params.crawl_name())
        budget = paced_budget(budget, pace, budget_seconds(params.time_budget_hours))
        log.info("run %s: its time budget paced by the crawl's last run: %s", run_id,
                 "none sent requests" if pace is None else f"{pace:.2f} requests per second")  # fmt: skip
    if (budget is None and budget_bytes is None) or params.full_recrawl:
        store.runs.set_revisit_cutoff(run_id, None)
        return
    now = time.time()
    last = store.page_states.revisit_cutoff(params.crawl_name(), budget, now, budget_bytes)
    store.runs.set_revisit_cutoff(run_id, (now, last))
    log.info("run %s: revisit budget of %s pages and %s bytes of the pages crawl %s keeps: %s", run_id,
             "any" if budget is None else budget, "any" if budget_bytes is None else budget_bytes,
             params.crawl_name(), "all of them" if last is None else "those up to the cutoff")  # fmt: skip


def seed_search(
    store: Store, run_id: str, params: HarvestParams, config_of: Callable[[str], Mapping[str, Any]]
) -> int:
    """Search the run's keywords with each of its search providers (``config_of(name)`` gives a provider's
    settings) and add what they find at level 0, each URL with the keyword that found it; data-portal datasets
    are stored as catalogue records too. Returns the URLs new to the run; does nothing without providers or
    keywords. A failing provider raises its ConnectorError, which names it, the keyword and the page, after
    what it found before the failure is committed. A retry skips the searches an earlier try finished."""
    keywords = params.search_keywords()
    if not params.search_providers or not keywords:
        log.info("run %s: no search seeding: %d providers, %d keywords", run_id, len(params.search_providers),
                 len(keywords))  # fmt: skip
        return 0
    added = 0
    done = store.runs.searches_done(run_id)  # by an earlier try of this task: no quota is spent twice
    try:
        for name in params.search_providers:
            connector = load_connector(name, config_of(name))
            for keyword in keywords:
                if (name, keyword) in done:
                    log.info("run %s: %s %r was searched by an earlier try; skipped", run_id, name, keyword)
                    continue
                found: list[Record] = []
                try:
                    found.extend(connector.records(query=keyword, pages=params.search_pages))
                finally:  # what came before a failure is kept
                    added += _add_found(store, run_id, params, connector, keyword, found)
                store.runs.search_done(run_id, name, keyword, len(found))
    except ConnectorError as exc:
        log.error("run %s: search seeding failed: %s", run_id, exc)
        raise
    return added


def _add_found(
    store: Store,
    run_id: str,
    params: HarvestParams,
    connector: SearchProvider | Portal,
    keyword: str,
    found: list[Record],
) -> int:
    """Add the seeds of a provider's records for a keyword; a portal's datasets go to the catalogue too."""
    links = ((url, page, keyword) for record in found for url, page in connector.seeds(record))
    seeds = _level_zero(params, links, logging.INFO)  # search results hold documents the crawl never fetches
    added = store.frontier.add_urls(run_id, 0, seeds, params.shards)
    if isinstance(connector, Portal) and found:
        store.catalogue.upsert_records(connector.source, found)
    log.info("run %s: %s %r: %d records, %d seeds, %d new to the run", run_id, connector.source, keyword,
             len(found), len(seeds), added)  # fmt: skip
    return added


def _level_zero(
    params: HarvestParams,
    links: Iterable[tuple[str, str | None, str | None]],
    dropped_level: int = logging.ERROR,
) -> list[tuple[str, str | None, str | None]]:
    """Seeds pass the crawl's URL filters, as links do: one spelling per URL, so the frontier dedups them.
    A dropped seed is logged at ``dropped_level``."""
    filters = URLFilters.from_settings(params.settings())
    kept = []
    for url, source_page, keyword in links:
        canonical = filters(url)
        if canonical is None:
            log.log(dropped_level, "seed %s dropped by the URL filters (not a page the crawl fetches)", url)
        else:
            kept.append((canonical, source_page, keyword))
    return kept


def plan_level(store: Store, run_id: str, level: int, params: HarvestParams) -> list[int]:
    """The shards of a level with URLs to fetch; [] past max_level or when nothing is pending. Past the
    seeds, the link budget first marks the level's URLs it does not follow 'skipped' (over every shard)."""
    if level > params.max_level:
        log.info("run %s: level %d is past max_level %d", run_id, level, params.max_level)
        return []
    if level > 0 and (params.link_budget < 1 or params.link_min_score is not None):
        settings = params.settings()
        skipped = store.frontier.skip_over_budget(
            run_id, level, settings.link_budget, settings.link_min_score
        )
        log.info("run %s: level %d: %d URLs not followed (link budget %s, minimum score %s)", run_id, level,
                 skipped, params.link_budget, params.link_min_score)  # fmt: skip
    shards = store.frontier.pending_shards(run_id, level)
    log.info("run %s: level %d has %d shards to crawl: %s", run_id, level, len(shards), shards)
    return shards


def crawl_shard(store: Store, run_id: str, level: int, shard: int, params: HarvestParams) -> dict[str, Any]:
    """Fetch and classify the pending URLs of one shard of a level, committing pages in batches. Without a
    link budget the shard runs on: the deeper levels' URLs of its hosts are fetched as its pages commit them
    to the frontier (``ShardRun``), so a slow host elsewhere holds none of them; a budget ranks a whole
    level, so with one the shard keeps to its level.

    Returns a small summary (counts only). A shard with nothing pending (its task retried after it finished)
    changes nothing, its saved statistics included."""
    pending = store.frontier.pending_origins(run_id, level, shard)
    summary: dict[str, Any] = {"level": level, "shard": shard, "pending": sum(pending.values())}
    if not pending:
        log.info("run %s: level %d shard %d has nothing pending", run_id, level, shard)
        return summary
    origins = list(pending)
    summary["hosts"] = origins
    log.info("run %s: level %d shard %d: %d URLs on %d hosts: %s", run_id, level, shard, summary["pending"],
             len(origins), ", ".join(origins))  # fmt: skip
    store.frontier.hold_shard(run_id, shard)
    try:
        run = ShardRun(store, run_id, level, shard, params)
        with store.unflushed_commits():  # a lost batch is redone; the statistics' commit below flushes them
            levels, stats = asyncio.run(_crawl(run, store.frontier.origin_counts(run_id, shard, origins)))
    finally:
        store.frontier.release_shards()
    levels = run.counted(levels, stats)
    for level_stats in levels:
        store.runs.save_level_stats(run_id, level_stats.level, shard, level_stats)
    costs = task_costs(stats)
    store.runs.add_costs(run_id, level, shard, costs)
    summary |= {
        "levels": [s.level for s in levels],
        "urls": sum(s.urls for s in levels),
        "resources": sum(s.resources for s in levels),
        "failures": sum(s.failures for s in levels),
        "deferred": sum(s.deferred for s in levels),
        "robots_disallowed": stats["skip/robots_disallowed"],
        **costs,
        "adopted_shards": sorted(run.adopted),
        "committed": run.buffer.committed,
        "carried_in_sql": run.carried.total(),
        "links_in_sql": run.links_in_sql,
        "commit_seconds": round(run.commit_seconds, 2),
        "seconds": round(time.monotonic() - run.started, 1),
    }
    log.info("run %s: level %d shard %d done: %s", run_id, level, shard, summary)
    return summary


def task_costs(stats: Counter) -> dict[str, int]:
    """What a crawl task spent and saved (``store.runs.COST_FIELDS``), from its crawler's counters."""
    return {
        "requests": stats["fetch/requests"],
        "bytes_read": stats["fetch/bytes"],
        "new_pages": stats[f"pages/{Verdict.NEW}"],
        "changed_pages": stats[f"pages/{Verdict.CHANGED}"],
        "gone_pages": stats[f"pages/{Verdict.GONE}"],
        "not_modified": stats[f"unchanged/{Unchanged.NOT_MODIFIED}"],
        "same_bytes": stats[f"unchanged/{Unchanged.SAME_BYTES}"],
        "not_due": stats[f"unchanged/{Unchanged.NOT_DUE}"],
        "bytes_saved": stats["unchanged/bytes_saved"],
    }


class ShardRun:
    """A shard's crawl task over the store: its level's pending URLs, the deeper levels' it takes on
    (``ahead``), the kept page states of the URLs it reads, and the commits of its pages."""

    def __init__(self, store: Store, run_id: str, level: int, shard: int, params: HarvestParams):
        self.store, self.run_id, self.level, self.shard, self.params = store, run_id, level, shard, params
        self.started = time.monotonic()
        self.run_started_at = store.runs.started_at(run_id)  # the run's time budget counts from it
        self.crawl = params.crawl_name()
        # what the crawl's earlier runs kept of the URLs read and not yet committed, and which it asks again
        self.states = PageStates(cutoff=store.runs.revisit_cutoff(run_id), keep_admitted=True)
        self.crawler: Crawler | None = None  # the engine, once open: whether it asks a known page
        self.carried: Counter[int] = Counter()  # pages carried over in SQL, per level
        self.carried_bytes = 0  # their last whole reads
        self.links_in_sql = 0  # pages asked again whose kept links were carried over in SQL
        self.keyword_of: dict[str, str | None] = {}  # the search keyword of each page read, for its links
        self.handed: set[str] = set()  # URLs given to the engine: a deeper URL is given once
        self.adopted: list[int] = []  # other shards whose next level this task crawls, held by its connection
        self.budget_used: dict[str, int] = {}  # the frontier's page counts of the adopted shards' origins
        self.commit_seconds = 0.0
        self.buffer = PageBuffer(self.commit)
        settings = params.settings()
        self.runs_ahead = settings.link_budget >= 1
        self.min_score = settings.link_min_score

    def links(self) -> Iterator[Link]:
        """The level's pending URLs, as the frontier sorted them."""
        rows = self.store.frontier.pending_urls(self.run_id, self.level, self.shard)
        return (link for _, link in self.read((self.level, *row) for row in rows))

    def ahead(self, open_level: int | None) -> list[tuple[int, Link]]:
        """The next level's pending URLs of the shard and of those it took on, not given yet, once the pages
        done are committed: their hop counts are exact, every page of the levels above the task's being done
        (``Ahead``); other shards' pages of the task's level may be under way. When the task has nothing
        left (no ``open_level``), it takes on one more shard (``adopt_shard``: no task of its level is to
        crawl it) whose next level waits for the level to end."""
        self.buffer.flush()
        deepest = min(self.level + 1, self.params.max_level)
        rows = self.pending_deeper((self.shard, *self.adopted), deepest)
        if not rows and open_level is None and deepest > self.level:
            shard = self.store.frontier.adopt_shard(
                self.run_id, self.level, self.params.shards, {self.shard, *self.adopted}
            )
            if shard is not None:
                origins = list(self.store.frontier.pending_origins(self.run_id, deepest, shard))
                self.budget_used |= self.store.frontier.origin_counts(self.run_id, shard, origins)
                log.info("run %s: level %d shard %d takes on shard %d's level %d: %s", self.run_id, self.level,
                         self.shard, shard, deepest, ", ".join(origins))  # fmt: skip
                self.adopted.append(shard)
                rows = self.pending_deeper([shard], deepest)
        return list(self.read(rows))

    def pending_deeper(self, shards: Iterable[int], deepest: int) -> list[tuple]:
        """The frontier rows of ``shards`` past the task's level down to ``deepest``, not given yet."""
        return [
            row
            for shard in shards
            for row in self.store.frontier.pending_deeper(
                self.run_id, shard, self.level, deepest, self.min_score
            )
            if row[1] not in self.handed
        ]

    def read(
        self, rows: Iterable[tuple[int, str, str | None, str | None, float]]
    ) -> Iterator[tuple[int, Link]]:
        """(level, link) of frontier rows, the kept states of their URLs read STATES_READ at a time; the pages
        the run carries over unasked with what they gave are carried over in SQL (``carry``), not given. A
        state is read brief first (``Brief``), and whole only for a page given."""
        rows = iter(rows)
        while batch := list(itertools.islice(rows, STATES_READ)):
            if not self.params.full_recrawl:
                fresh = [row for row in batch if row[1] not in self.handed]
                briefs = self.store.page_states.briefs(self.crawl, (row[1] for row in fresh))
                self.states.pages.update((url, brief.state) for url, brief in briefs.items())
                carried = [row for row in fresh if self.carried_in_sql(*row[:2], briefs.get(row[1]))]
                if carried:
                    self.carry(carried)  # those it cannot carry are given
                given = [url for url in briefs if url not in self.handed]
                for url in given:
                    del self.states.pages[url]
                self.states.pages.update(self.store.page_states.load(self.crawl, given))
            for level, url, source, keyword, score in batch:
                if url in self.handed:
                    continue
                if keyword is not None:
                    self.keyword_of[url] = keyword
                self.handed.add(url)
                yield level, Link(url, source, score)

    def carried_in_sql(self, level: int, url: str, brief: Brief | None) -> bool:
        """Whether a page is carried over unasked without the engine: the crawl kept its state, with no
        resource (recorded by the engine alone), and the engine would not ask it; past ``max_level`` its links
        are not followed, above it they were kept as admitted at this level, under this run's admission."""
        if brief is None or brief.resources or self.crawler is None:
            return False
        if not self.crawler.carries_unasked(url):
            return False
        return level >= self.params.max_level or (
            brief.admitted_level == level and brief.admitted_by == self.crawler.admission
        )

    def carry(self, rows: list[tuple[int, str, str | None, str | None, float]]) -> None:
        """Carry pages over in SQL (``Frontier.carry_over``), counted as the engine counts those it carries
        over unasked; their states leave memory unchanged. Pages it cannot carry stay to be given."""
        begun = time.monotonic()
        pages = [(url, level, keyword, level < self.params.max_level) for level, url, _, keyword, _ in rows]
        if not self.store.frontier.carry_over(self.run_id, self.crawl, pages, self.params.shards):
            return
        for level, url, *_ in rows:
            self.carried[level] += 1
            self.carried_bytes += self.states.pages.pop(url).size
            self.handed.add(url)
        self.commit_seconds += time.monotonic() - begun

    def counted(self, levels: list[LevelStats], stats: Counter) -> list[LevelStats]:
        """The engine's figures with the pages carried over in SQL."""
        by_level = {s.level: s for s in levels}
        for level, pages in self.carried.items():
            by_level.setdefault(level, LevelStats(level)).urls += pages
        stats[f"unchanged/{Unchanged.NOT_DUE}"] += self.carried.total()
        stats["unchanged/bytes_saved"] += self.carried_bytes
        return [by_level[level] for level in sorted(by_level)]

    def commit(self, pages: list[Page]) -> None:
        """Commit pages done: a page asked again whose links its state keeps (``PageStates.links_kept``) is
        carried over in SQL with them; the others through ``commit_pages``."""
        # commits block the event loop for a moment, every batch: simpler than a writer thread, and cheap
        begun = time.monotonic()
        kept = [page for page in pages if page.url in self.states.links_kept]
        if kept:
            carried = [(page.url, page.level, self.keyword_of.get(page.url), True) for page in kept]
            # their states were read whole and sound (``page_state``): their links read in SQL too
            if not self.store.frontier.carry_over(self.run_id, self.crawl, carried, self.params.shards):
                raise StoreError(
                    f"{len(kept)} pages asked again could not be committed with their kept links"
                )
            self.links_in_sql += len(kept)
        committed = [page for page in pages if page.url not in self.states.links_kept]
        self.store.frontier.commit_pages(self.run_id, committed, self.params.shards, self.keyword_of)
        self.store.page_states.save(self.crawl, *self.states.settle(page.url for page in pages))
        for page in pages:
            self.keyword_of.pop(page.url, None)
        self.commit_seconds += time.monotonic() - begun
        for page in pages:
            for resource in page.resources:
                log.info("found %s %s (%d datasets) on %s", resource.type, resource.url,
                         len(resource.datasets), page.url)  # fmt: skip


async def _crawl(run: ShardRun, budget_used: dict[str, int]) -> tuple[list[LevelStats], Counter]:
    """The engine over the shard's URLs, carrying over what the run's states show unchanged; every page goes
    to the run's buffer, flushed at the end. ``budget_used``: the frontier's page counts of the shard's
    origins, which it owns for the run, so their page budgets go on."""
    async with open_crawler(
        run.params.settings(), types=run.params.types, pages=run.states, started_at=run.run_started_at
    ) as crawler:
        run.crawler = crawler

        def seen(links: Iterable[tuple[int, Link]]) -> Iterator[tuple[int, Link]]:
            # the crawler's Bloom filter is an in-process pre-filter of repeated links; the frontier's keys are
            # the run's dedup (exact but for 64-bit hash collisions: 1e-7 odds in a 2-million-URL run)
            for level, link in links:
                crawler.seen.add(link.url)  # links back to the pages read so far stop here
                yield level, link

        def ahead(open_level: int | None) -> Iterator[tuple[int, Link]]:
            links = run.ahead(open_level)
            for origin, used in run.budget_used.items():  # adopted hosts' page budgets go on too
                crawler.budget.counts[origin] = max(crawler.budget.counts[origin], used)
            run.budget_used.clear()
            return seen(links)

        crawler.budget.counts.update(budget_used)
        # hosts an earlier level's shard set aside stay aside for the run
        crawler.set_aside.update(run.store.frontier.set_aside(run.run_id))
        first = (link for _, link in seen((run.level, link) for link in run.links()))
        levels = await crawler.run_levels(first, run.level, run.buffer, ahead if run.runs_ahead else None)
        run.buffer.flush()
    return levels, crawler.stats


def finish_run(store: Store, run_id: str) -> dict[str, Any]:
    """Log the run's per-level table and recall curve of the link budget, store them with the PNG plot of
    resources and discovery ratio per level and of the curve, and mark the run a success; returns the
    summary."""
    levels = store.runs.level_stats(run_id)
    by_type = Counter(record["type"] for record in store.resources.export(run_id))
    report = CrawlReport.of_levels(levels, by_type)
    report.recall = store.runs.recall_curve(run_id)
    report.costs = store.runs.crawl_costs(run_id)
    log.info("run %s:\n%s\n%s", run_id, level_table(report), report.recall.table())
    png = io.BytesIO()
    report.plot(png)
    summary = {
        **report.summary(),
        "recall": report.recall.summary(),
        "costs": report.costs[-1][1] if report.costs else store.runs.costs(run_id),
        "deferred_by_reason": store.frontier.deferred_by_reason(run_id),
    }
    rows, runs = store.frontier.prune_earlier(run_id)
    if rows:
        log.info("run %s: %d frontier rows of the crawl's %d earlier runs deleted (their reports are kept)",
                 run_id, rows, runs)  # fmt: skip
    store.runs.end(run_id, RunStatus.SUCCESS, summary, report_png=png.getvalue())
    return summary


def level_table(report: CrawlReport) -> str:
    """The report's table without the request counts, which the level statistics do not hold."""
    return "\n".join(report.table().splitlines()[:-1])
