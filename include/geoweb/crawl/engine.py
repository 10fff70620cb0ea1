"""The breadth-first crawler: one level at a time, per-host queues, detectors on every response.

A level is a stream of links (url, source page, score) in descending score. ``run_level`` reads them into
per-host queues as they drain, fetches them with per-host workers, hands each response to the detectors, and
gives each page, with the resources found and the next level's links (filtered, deduplicated and scored), to a
sink. ``crawl`` chains levels from the seeds, keeping each level within the link budget. The Airflow fan-out
runs ``run_level`` on shards, streamed from the frontier.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Collection, Iterable
from datetime import UTC, datetime

from geoweb.crawl.collector import survivors_frozen
from geoweb.crawl.pagestates import PageState, PageStates, Unchanged
from geoweb.crawl.report import CrawlReport
from geoweb.detect.base import DetectContext, Detector
from geoweb.errors import BadResponse, FetchError, GeowebError, RobotsDisallowed
from geoweb.fetch.memory import OverMemoryBudget
from geoweb.fetch.response import Response
from geoweb.links.extract import extract_links
from geoweb.links.filters import HostBudget, URLFilters
from geoweb.links.normalize import origin
from geoweb.links.priority import LinkScorer, apply_budget, by_priority, recall_curve
from geoweb.models import (
    ALL_TYPES,
    DeferReason,
    LevelStats,
    Link,
    Page,
    RecordedLink,
    Resource,
    resource_from_record,
)
from geoweb.semantic import tag_datasets_in_turns
from geoweb.settings import Settings

log = logging.getLogger("geoweb.crawl")

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
SNIFFED_TYPES = frozenset({"", "text/plain", "application/octet-stream", "binary/octet-stream"})
WAIT_CLOCK_SECONDS = 0.25  # how often the time the level waits on its hosts is counted
READ_TURN = 1_000  # links queued in one turn of the event loop; more wait for the next turn


PageSink = Callable[[Page], None]


def looks_like_html(response: Response) -> bool:
    """HTML by Content-Type, or by its first bytes when the type is missing or generic (servers lie)."""
    ctype = response.content_type
    if ctype in HTML_TYPES:
        return True
    if ctype in SNIFFED_TYPES:
        head = response.body[:512].lstrip().lower()
        return head.startswith((b"<!doctype html", b"<html")) or b"<body" in head
    return False


class Crawler:
    """Runs levels over one fetcher. ``seen`` is any set-like with ``add(key) -> bool`` (new or not)."""

    def __init__(
        self,
        fetch,
        detectors: Iterable[Detector],
        *,
        settings: Settings,
        seen,
        types: Collection[str] = ALL_TYPES,
        stats: Counter | None = None,
        scorer: LinkScorer | None = None,
        pages: PageStates | None = None,
    ):
        self.settings = settings
        self.stats = stats if stats is not None else Counter()
        self.types = frozenset(types)
        self.detectors = [d for d in detectors if self.types.intersection(d.types)]
        self.filters = URLFilters.from_settings(settings, self.stats)
        self.budget = HostBudget(settings.max_pages_per_host)
        self.seen = seen
        self.found: set[tuple[str, str]] = set()
        # origins crawled no further in the run, with the reason (time or failure budget, level deadline)
        self.set_aside: dict[str, str] = {}
        self.fetch = fetch
        self.scorer = scorer or LinkScorer.default()
        self.pages = pages  # what earlier runs read of each URL: unchanged pages are carried over
        self.ctx = DetectContext(
            fetch=fetch, settings=settings, types=self.types, first_time=seen.add, stats=self.stats
        )

    def admit(self, url: str) -> str | None:
        """The normalised URL if it passes the filters, was never seen in this run and fits the host budget."""
        url = self.filters(url)
        if url is None:
            return None
        if not self.seen.add(url):
            self.stats["dedup/filtered"] += 1
            return None
        if self.budget(url) is None:
            self.stats[f"filter/{self.budget.name}"] += 1
            return None
        return url

    async def crawl(self, seeds: Iterable[str], on_page: PageSink | None = None) -> CrawlReport:
        report = CrawlReport(stats=self.stats)
        started = time.monotonic()
        frontier = [Link(url, None) for url in filter(None, map(self.admit, seeds))]
        # what the recall curve needs: every URL with its level, source and score, and where each resource was
        links = [RecordedLink(url, 0, None, score) for url, _, score in frontier]
        found_on: list[str] = []

        def remember(page: Page) -> None:
            links.extend(
                RecordedLink(url, page.level + 1, source, score) for url, source, score in page.links
            )
            found_on.extend(page.url for _ in page.resources)
            next_level.extend(page.links)
            for resource in page.resources:
                report.resources_by_type[resource.type] += 1
            if on_page:
                on_page(page)

        # A level's sort, its budget and the recall curve take a whole level's links at once, tenths of a
        # second on a big level: in a thread, so that the event loop keeps its turns (the thread yields the
        # GIL to it).
        for level in range(self.settings.max_level + 1):
            if not frontier:
                break
            next_level: list[Link] = []
            ordered = await asyncio.to_thread(sorted, frontier, key=by_priority)
            report.levels.append(await self.run_level(ordered, level, remember))
            frontier = await asyncio.to_thread(self.within_budget, next_level, level + 1)
        report.seconds = time.monotonic() - started
        report.recall = await asyncio.to_thread(recall_curve, links, found_on)
        return report

    def within_budget(self, links: list[Link], level: int) -> list[Link]:
        """The links of a level the budget follows (seeds are never cut); the rest are counted and logged."""
        kept, dropped = apply_budget(links, self.settings.link_budget, self.settings.link_min_score)
        if dropped:
            self.stats["budget/dropped"] += len(dropped)
            log.info("level %d: %d of %d links not followed (link budget %.2f, minimum score %s)", level,
                     len(dropped), len(links), self.settings.link_budget, self.settings.link_min_score)  # fmt: skip
        return kept

    async def run_level(self, links: Iterable[Link], level: int, on_page: PageSink) -> LevelStats:
        """Fetch and classify one level's links, given in the order they are fetched in (``by_priority``);
        every page, with the next level's links it found, goes to ``on_page``.

        The links are read as the hosts' queues drain, at most about ``queued_links`` ahead, so a level's
        size does not set the crawl's memory: a shard of millions streams from the frontier."""
        return await LevelRun(self, links, level, on_page).run()

    async def process(
        self, url: str, source: str | None, level: int, follow: bool
    ) -> tuple[int, list[Resource], list[Link]]:
        """Fetch one URL, detect resources in it, and (for HTML pages) collect its new links; returns the
        response's status with them. A page earlier runs read, unchanged since (``pages``), is carried over
        unread; so is one the revisit budget leaves out, without a request."""
        known = self.pages.get(url) if self.pages is not None else None
        if known is not None and not self.pages.due(url):
            self.stats[f"unchanged/{Unchanged.NOT_DUE}"] += 1
            return 304, *await self.carried_over(known, url, source, level, follow)
        asked = known.conditions(time.time()) if known is not None else {}
        response = await (self.fetch(url, headers=asked) if asked else self.fetch(url))
        if response.final_url != url:
            self.seen.add(response.final_url)
        if self.pages is not None:
            unchanged = self.pages.unchanged(url, response, asked)
            if unchanged is not None:
                self.stats[f"unchanged/{unchanged}"] += 1
                return response.status, *await self.carried_over(known, url, source, level, follow)
            if response.status == 304:
                raise BadResponse("304 Not Modified to a request that sent no validator", url=url)
            self.pages.failed(url, response.status)
        resources = []
        for detector in self.detectors:
            if not detector.accepts(response):
                continue
            try:
                found = await detector.detect(response, self.ctx)
            except GeowebError as exc:
                self.stats[f"detect/{exc.reason}"] += 1
                log.info("%s: %s rejected it: %s", url, detector.name, exc)
                continue
            except Exception:  # a detector bug must not end the crawl; it is logged with its trace
                self.stats["detect/crash"] += 1
                log.exception("%s: detector %s crashed", url, detector.name)
                continue
            resources.extend(await self.record(found, level, source))
        extracted: list[tuple[str, str]] = []
        if follow and response.status < 400 and looks_like_html(response):
            extracted = list(extract_links(response.text(), response.final_url))
        if self.pages is not None and response.status == 200:
            self.pages.remember(url, response, extracted, resources, level)
        return response.status, resources, self.scored(extracted, url, level)

    async def carried_over(
        self, known: PageState, url: str, source: str | None, level: int, follow: bool
    ) -> tuple[list[Resource], list[Link]]:
        """A page as an earlier run read it: its resources recorded again (tagged then), its links scored."""
        found = await self.record(
            [resource_from_record(r) for r in known.resources], level, source, tag=False
        )
        return found, self.scored(known.links, url, level) if follow else []

    def scored(self, extracted: Iterable[tuple[str, str]], url: str, level: int) -> list[Link]:
        """The next level's links of a page, from its (link, anchor text) pairs: admitted and scored."""
        links = []
        for link, anchor in extracted:
            admitted = self.admit(link)
            if admitted:
                links.append(Link(admitted, url, self.scorer.score(admitted, anchor, level + 1)))
        return links

    async def record(
        self, found: list[Resource], level: int, source: str | None, *, tag: bool = True
    ) -> list[Resource]:
        """Keep each (url, type) once per run, of the wanted types, stamped with level and source page, its
        datasets tagged with concepts (unless carried over tagged)."""
        kept = []
        now = datetime.now(UTC).isoformat(timespec="seconds")
        for r in found:
            if r.type not in self.types or r.key in self.found:
                continue
            self.found.add(r.key)
            r.level, r.source_page, r.discovered_at = level, source, now
            if tag:
                await tag_datasets_in_turns(r.datasets, self.settings.concept_lcs_threshold)
            kept.append(r)
        return kept


class LevelRun:
    """One level under way (``Crawler.run_level``): its links read into per-host queues as they drain, a
    worker per host slot, the hosts' budgets, and its counts. Every URL it does not fetch goes through
    ``defer``, with its ``DeferReason``.

    A host's time budget counts the time the level waits on it. While some host's next URL waits for a fetch
    slot, the crawl sets the pace, not the hosts: a big healthy host among many is never set aside for its
    size. Once no URL waits for a slot, the hosts with URLs left are what the level waits on.
    """

    def __init__(self, crawler: Crawler, links: Iterable[Link], level: int, on_page: PageSink):
        self.crawler, self.settings, self.level, self.on_page = crawler, crawler.settings, level, on_page
        self.stats = LevelStats(level)
        self.follow = level < self.settings.max_level
        self.started = time.monotonic()
        self.deadline = self.started + self.settings.level_deadline if self.settings.level_deadline else None
        self.unread = iter(links)
        self.more = True  # links left to read
        self.reading_on = False  # a turn of read() is waiting for the loop
        self.queues: dict[str, deque[Link]] = defaultdict(deque)
        self.queued = 0
        # per-host workers keep hosts interleaved; the semaphore keeps fetches within the connection pool,
        # since time spent waiting for a connection counts against the fetcher's total timeout
        self.in_flight = asyncio.Semaphore(self.settings.concurrency)
        self.tasks: set[asyncio.Task] = set()
        self.failed_in_row: Counter[str] = Counter()
        self.waited: Counter[str] = Counter()  # seconds the level waited on each host
        self.working: Counter[str] = Counter()  # workers running per host
        self.waiting_for_slot = 0
        self.next_links = 0

    async def run(self) -> LevelStats:
        ticking = asyncio.create_task(self.clock())
        self.read()
        try:
            with survivors_frozen():
                while self.tasks:  # workers start more workers as they read links
                    done, _ = await asyncio.wait(set(self.tasks), return_when=asyncio.FIRST_EXCEPTION)
                    self.tasks.difference_update(done)
                    for task in done:
                        task.result()
        finally:
            ticking.cancel()
            for task in self.tasks:
                task.cancel()
        stats = self.stats
        stats.deferred_hosts = sum(1 for host in self.queues if host in self.crawler.set_aside)
        stats.seconds = time.monotonic() - self.started
        log.info(
            "level %d: %d URLs fetched, %d failed, %d deferred (%d hosts set aside), %d resources (ratio %.4f), "
            "%d links for the next level, %.1fs",
            self.level, stats.urls, stats.failures, stats.deferred, stats.deferred_hosts, stats.resources,
            stats.discovery_ratio, self.next_links, stats.seconds,
        )  # fmt: skip
        return stats

    async def clock(self) -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(WAIT_CLOCK_SECONDS)
            now = time.monotonic()
            if not self.waiting_for_slot:
                for host in self.working:
                    self.waited[host] += now - last
            last = now

    def defer(self, page: Page, reason: DeferReason) -> None:
        """The one place a URL is not fetched: counted, and handed on as a deferred page (a later run
        takes it)."""
        page.deferred = reason
        self.stats.deferred += 1
        self.crawler.stats[f"defer/{reason}"] += 1
        self.on_page(page)

    def defer_link(self, link: Link) -> None:
        """A link of a host set aside."""
        self.defer(Page(link.url, link.source, self.level), self.crawler.set_aside[origin(link.url)])

    def over_budget(self, host: str, now: float) -> DeferReason | None:
        if self.deadline is not None and now >= self.deadline:
            return DeferReason.LEVEL_DEADLINE
        if self.settings.host_time_budget and self.waited[host] >= self.settings.host_time_budget:
            return DeferReason.HOST_TIME_BUDGET
        if self.settings.host_max_failures and self.failed_in_row[host] >= self.settings.host_max_failures:
            return DeferReason.HOST_FAILURES
        return None

    def read(self) -> None:
        """Queue the next links, up to ``queued_links`` (at least a fetch slot's worth, so that one slow
        host holding the queues cannot idle the others), and start the workers their hosts lack. At most
        READ_TURN links a turn of the event loop: a task reads the rest in the next turns."""
        if self.reading_on:  # the next turn reads
            return
        wanted = max(self.settings.queued_links - self.queued, self.settings.concurrency)
        if wanted > READ_TURN:
            wanted = READ_TURN
            self.reading_on = True
            self.tasks.add(asyncio.create_task(self.read_on()))
        grown = set()
        for count, link in enumerate(self.unread, 1):
            host = origin(link.url)
            if host in self.crawler.set_aside:
                self.defer_link(link)
            else:
                self.queues[host].append(link)
                self.queued += 1
                grown.add(host)
            if count == wanted:
                break
        else:
            self.more = False
        for host in grown:
            while self.working[host] < min(self.settings.per_host_concurrency, len(self.queues[host])):
                self.working[host] += 1
                self.tasks.add(asyncio.create_task(self.worker(host, self.queues[host])))

    async def read_on(self) -> None:
        await asyncio.sleep(0)
        self.reading_on = False
        if self.more:
            self.read()

    async def worker(self, host: str, queue: deque[Link]) -> None:
        try:
            await self.fetch_all(host, queue)
        finally:
            self.working[host] -= 1
            if not self.working[host]:
                del self.working[host]
        if self.more:  # this host's queue ran dry: its slot goes to the links not read yet
            self.read()

    async def fetch_all(self, host: str, queue: deque[Link]) -> None:
        set_aside = self.crawler.set_aside
        while queue:
            if host not in set_aside and (reason := self.over_budget(host, time.monotonic())):
                set_aside[host] = reason
                log.warning("level %d: %s set aside (%s); its %d URLs left are deferred", self.level, host,
                            reason, len(queue))  # fmt: skip
            if host in set_aside:
                self.queued -= len(queue)
                while queue:
                    self.defer_link(queue.popleft())
                return
            link = queue.popleft()
            self.queued -= 1
            if self.more and self.queued <= self.settings.queued_links // 2:
                self.read()
            await self.fetch_one(host, link)

    async def fetch_one(self, host: str, link: Link) -> None:
        """Fetch one link within the level's deadline and a fetch slot, and hand its page on."""
        page = Page(link.url, link.source, self.level)
        # a fetch still running at the level's deadline ends there: the host is set aside
        timer = asyncio.timeout_at(self.deadline)
        self.waiting_for_slot += 1
        try:
            async with timer:
                try:
                    await self.in_flight.acquire()
                finally:
                    self.waiting_for_slot -= 1
                try:
                    status, page.resources, page.links = await self.crawler.process(
                        link.url, link.source, self.level, self.follow
                    )
                finally:
                    self.in_flight.release()
        except TimeoutError:
            if not timer.expired():
                raise
            self.crawler.set_aside.setdefault(host, DeferReason.LEVEL_DEADLINE)
            return self.defer(page, DeferReason.LEVEL_DEADLINE)
        except RobotsDisallowed as exc:
            self.crawler.stats["skip/robots_disallowed"] += 1  # never requested: neither fetched nor failed
            page.error = exc
        except OverMemoryBudget:
            return self.defer(page, DeferReason.MEMORY_BUDGET)  # the crawl's memory, not the host's fault
        except FetchError as exc:
            self.stats.urls += 1
            self.stats.failures += 1
            self.failed_in_row[host] += 1
            self.crawler.stats[f"fail/{exc.reason}"] += 1
            page.error = exc
        else:
            # a host answering 5xx or 429 (after the fetcher's retries) is failing too: a tarpit
            self.failed_in_row[host] = self.failed_in_row[host] + 1 if status == 429 or status >= 500 else 0
            self.stats.urls += 1
            self.stats.resources += len(page.resources)
            self.next_links += len(page.links)
        self.on_page(page)
