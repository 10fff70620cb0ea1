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
from collections.abc import Callable, Collection, Container, Iterable, Iterator
from datetime import UTC, datetime

from geoweb.crawl.collector import survivors_frozen
from geoweb.crawl.pagestates import PageState, PageStates, Unchanged, Verdict, admission
from geoweb.crawl.report import CrawlReport
from geoweb.detect.base import DetectContext, Detector
from geoweb.detect.ogc import fetch_proof, proved_by
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
AHEAD_PAUSE = 0.5  # seconds between asks for deeper levels' links while fetches run


PageSink = Callable[[Page], None]
# The deeper levels' links a run may take on now, as (level, link), given the lowest level with pages under
# way (None: none). A level's hop counts are exact once every page of the level two above it is done, so a
# source gives links one level below the lowest level still under way or held, no deeper.
Ahead = Callable[[int | None], Iterable[tuple[int, Link]]]


def looks_like_html(response: Response) -> bool:
    """HTML by Content-Type, or by its first bytes when the type is missing or generic (servers lie)."""
    ctype = response.content_type
    if ctype in HTML_TYPES:
        return True
    if ctype in SNIFFED_TYPES:
        head = response.body[:512].lstrip().lower()
        return head.startswith((b"<!doctype html", b"<html")) or b"<body" in head
    return False


class AheadLinks:
    """The links a one-process crawl has found and not yet fetched, by level (``Ahead``): a link that finds a
    URL held here at a lower level gives it that level, since the first link found may come by a longer
    path."""

    def __init__(self) -> None:
        self.levels: defaultdict[int, dict[str, Link]] = defaultdict(dict)
        self.level_of: dict[str, int] = {}

    def add(self, level: int, links: Iterable[Link]) -> None:
        for link in links:
            self.levels[level][link.url] = link
            self.level_of[link.url] = level

    def shallower(self, url: str, level: int, source: str | None) -> None:
        held = self.level_of.get(url)
        if held is not None and held > level:
            link = self.levels[held].pop(url)
            self.add(level, [Link(url, source, link.score)])

    def take(self, open_level: int | None) -> list[tuple[int, Link]]:
        """The links one level below the lowest level under way or held, and above, by level and priority."""
        held = [level for level, links in self.levels.items() if links]
        if not held:
            return []
        deepest = min(held if open_level is None else [*held, open_level]) + 1
        taken = []
        for level in sorted(level for level in held if level <= deepest):
            links = self.levels.pop(level)
            for url in links:
                del self.level_of[url]
            taken.extend((level, link) for link in sorted(links.values(), key=by_priority))
        return taken


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
        started_at: float | None = None,
    ):
        self.settings = settings
        # the run sends no request from then on (``asking``), on the monotonic clock of the level deadlines and
        # the event loop's timeouts; its start is now unless a DAG run's is given
        budget, now = settings.run_time_budget, time.time()
        started = now if started_at is None else started_at
        self.requests_until = time.monotonic() + started + budget - now if budget else None
        self.stats = stats if stats is not None else Counter()
        self.types = frozenset(types)
        self.detectors = [d for d in detectors if self.types.intersection(d.types)]
        self.filters = URLFilters.from_settings(settings, self.stats)
        self.admission = admission(settings.max_url_length, settings.url_policies)
        self.budget = HostBudget(settings.max_pages_per_host)
        self.seen = seen
        self.found: dict[
            tuple[str, str], int
        ] = {}  # each resource of the run: the lowest level it was found at
        # origins crawled no further in the run, with the reason (time or failure budget, level deadline)
        self.set_aside: dict[str, str] = {}
        self.fetch = fetch
        self.scorer = scorer or LinkScorer.default()
        self.pages = pages  # what earlier runs read of each URL: unchanged pages are carried over
        # told of each link to a URL seen before, (url, level, source): a crawl running ahead lowers its level
        self.relinked: Callable[[str, int, str | None], None] | None = None
        self.ctx = DetectContext(
            fetch=fetch, settings=settings, types=self.types, first_time=seen.add, stats=self.stats
        )

    def asking(self) -> bool:
        """Whether the run still sends requests: its time budget (``run_time_budget``) is not spent."""
        if self.requests_until is None or time.monotonic() < self.requests_until:
            return True
        if not self.stats["run/time_budget_spent"]:
            self.stats["run/time_budget_spent"] = 1
            log.warning("the run's time budget of %.0f s is spent: the pages the crawl knows are carried over "
                        "unasked, new URLs deferred", self.settings.run_time_budget)  # fmt: skip
        return False

    def carries(self, url: str) -> bool:
        """Whether the crawl can carry ``url`` over unasked: an earlier run read it."""
        return self.pages is not None and self.pages.get(url) is not None

    def carries_unasked(self, url: str) -> bool:
        """Whether the run carries ``url`` over without asking: an earlier run read it, and the revisit budget
        leaves it out or the run's time budget is spent."""
        return self.carries(url) and (not self.asking() or not self.pages.due(url))

    def admit(self, url: str, level: int | None = None, source: str | None = None) -> str | None:
        """The normalised URL if it passes the filters and is ``new_to_run``."""
        url = self.filters(url)
        return url if url is not None and self.new_to_run(url, level, source) else None

    def new_to_run(self, url: str, level: int | None, source: str | None) -> bool:
        """Whether a normalised URL was never seen in this run and fits the host budget. A URL seen before,
        linked from ``source`` at ``level``, goes to ``relinked``."""
        if not self.seen.add(url):
            self.stats["dedup/filtered"] += 1
            if self.relinked is not None and level is not None:
                self.relinked(url, level, source)
            return False
        if self.budget(url) is None:
            self.stats[f"filter/{self.budget.name}"] += 1
            return False
        return True

    async def crawl(self, seeds: Iterable[str], on_page: PageSink | None = None) -> CrawlReport:
        """Crawl from ``seeds`` to ``max_level``. Without a link budget, levels are accounting, not barriers:
        a page's links join the run as they are found, so no slow host holds the others' next levels. A
        budget ranks a whole level's links, so with one each level waits for the one before."""
        report = CrawlReport(stats=self.stats)
        started = time.monotonic()
        frontier = [Link(url, None) for url in filter(None, map(self.admit, seeds))]
        # what the recall curve needs: every URL with its level, source and score, and where each resource was
        links = [RecordedLink(url, 0, None, score) for url, _, score in frontier]
        found_on: list[str] = []
        run_ahead = self.settings.link_budget >= 1
        next_level: list[Link] = []
        ahead = AheadLinks()

        def remember(page: Page) -> None:
            links.extend(
                RecordedLink(url, page.level + 1, source, score) for url, source, score in page.links
            )
            found_on.extend(page.url for _ in page.resources)
            if run_ahead:
                ahead.add(page.level + 1, self.above_min_score(page.links, page.level))
            else:
                next_level.extend(page.links)
            for resource in page.resources:
                report.resources_by_type[resource.type] += 1
            if on_page:
                on_page(page)

        if run_ahead:
            self.relinked = ahead.shallower
        # A level's sort, its budget and the recall curve take a whole level's links at once, tenths of a
        # second on a big level: in a thread, so that the event loop keeps its turns (the thread yields the
        # GIL to it).
        for level in range(self.settings.max_level + 1):
            if not frontier:
                break
            next_level.clear()
            ordered = await asyncio.to_thread(sorted, frontier, key=by_priority)
            if run_ahead:
                report.levels = await self.run_levels(ordered, level, remember, ahead.take)
                break
            report.levels.extend(await self.run_levels(ordered, level, remember))
            frontier = await asyncio.to_thread(self.within_budget, next_level, level + 1)
        report.seconds = time.monotonic() - started
        report.recall = await asyncio.to_thread(recall_curve, links, found_on)
        return report

    def above_min_score(self, links: list[Link], level: int) -> list[Link]:
        """The links of a page at ``level`` scoring at least ``link_min_score``; the rest are counted."""
        floor = self.settings.link_min_score
        kept = [link for link in links if link.score >= floor]
        if len(kept) < len(links):
            self.stats["budget/dropped"] += len(links) - len(kept)
            log.debug(
                "level %d: %d links under the minimum score %s", level + 1, len(links) - len(kept), floor
            )
        return kept

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
        return (await self.run_levels(links, level, on_page))[0]

    async def run_levels(
        self, links: Iterable[Link], level: int, on_page: PageSink, ahead: Ahead | None = None
    ) -> list[LevelStats]:
        """``run_level``, then the deeper levels' links ``ahead`` gives when asked, as hosts' queues run dry:
        each level's figures, lowest first."""
        return await LevelRun(self, links, level, on_page, ahead).run()

    async def process(
        self, url: str, source: str | None, level: int, follow: bool
    ) -> tuple[int, list[Resource], list[Link]]:
        """Fetch one URL, detect resources in it, and (for HTML pages) collect its new links; returns the
        response's status with them. A page earlier runs read, unchanged since (``pages``), is carried over
        unread; so is one the revisit budget leaves out, or any once the run's time budget is spent, without a
        request."""
        known = self.pages.get(url) if self.pages is not None else None
        if known is not None and self.carries_unasked(url):
            self.stats[f"unchanged/{Unchanged.NOT_DUE}"] += 1
            self.stats["unchanged/bytes_saved"] += known.size
            return 304, *await self.carried_over(known, url, source, level, follow)
        asked = known.conditions(time.time()) if known is not None else {}
        response = await (self.fetch(url, headers=asked) if asked else self.fetch(url))
        if response.final_url != url:
            self.seen.add(response.final_url)
        if self.pages is not None:
            unchanged = self.pages.unchanged(url, response, asked)
            if unchanged is not None:
                self.stats[f"unchanged/{unchanged}"] += 1
                if unchanged == Unchanged.NOT_MODIFIED:  # no body read; the same bytes were read
                    self.stats["unchanged/bytes_saved"] += known.size
                return response.status, *await self.carried_over(known, url, source, level, follow, response)
            if response.status == 304:
                raise BadResponse("304 Not Modified to a request that sent no validator", url=url)
            if self.pages.failed(url, response.status):
                self.stats[f"pages/{Verdict.GONE}"] += 1
        resources, detected = [], []
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
            kept, wanted = await self.record(found, level, source)
            resources.extend(kept)
            detected.extend(wanted)
        extracted: list[tuple[str, str]] = []
        if follow and response.status < 400 and looks_like_html(response):
            extracted = list(extract_links(response.text(), response.final_url))
        if self.pages is not None and response.status == 200:  # all it gives, found first elsewhere or not
            untagged = {r.key for r in detected} - {r.key for r in resources}
            verdict = self.pages.remember(url, response, extracted, detected, level, untagged)
            self.stats[f"pages/{verdict}"] += 1
        return response.status, resources, self.scored(extracted, url, level)

    async def carried_over(
        self,
        known: PageState,
        url: str,
        source: str | None,
        level: int,
        follow: bool,
        response: Response | None = None,
    ) -> tuple[list[Resource], list[Link]]:
        """A page as an earlier run read it: its resources recorded again (tagged then, unless another page
        gave them first), its links scored. The services its capabilities describe carry this run's
        ``response`` (a 304, or the same bytes) as their measured fetch, as a read would."""
        untagged = {(r["url"], r["type"]) for r in known.resources if r.get("tagged") is False}
        resources = [resource_from_record(r) for r in known.resources]
        if response is not None:
            proof = fetch_proof(response)
            for resource in resources:
                if proved_by(resource, response):
                    resource.proof = proof
        kept, _ = await self.record(resources, level, source, untagged=untagged)
        return kept, self.readmitted(known, url, level) if follow else []

    def readmitted(self, known: PageState, url: str, level: int) -> list[Link]:
        """The next level's links of a page carried over, new to the run: as the crawl admitted them when they
        were kept at this level under this run's admission (``PageState.admitted``), else ``scored`` anew.
        States that keep admitted links take those of a page without resources as they are: the page goes on
        with none, its URL in ``PageStates.links_kept``."""
        admitted = known.admitted
        if admitted is None or admitted["level"] != level or admitted["by"] != self.admission:
            return self.scored(known.links, url, level)
        if self.pages.keep_admitted and not known.resources:
            self.pages.links_kept.add(url)
            return []
        return [
            Link(link, url, score)
            for link, score in admitted["links"]
            if self.new_to_run(link, level + 1, url)
        ]

    def scored(self, extracted: Iterable[tuple[str, str]], url: str, level: int) -> list[Link]:
        """The next level's links of a page, from its (link, anchor text) pairs: those new to the run, scored.
        When the states keep admitted links, every link the filters pass is scored and kept with the page's
        state (``PageStates.admitted``)."""
        keep = self.pages is not None and self.pages.keep_admitted
        links, admitted = [], []
        for link, anchor in extracted:
            normal = self.filters(link)
            if normal is None:
                continue
            if keep:
                score = self.scorer.score(normal, anchor, level + 1)
                admitted.append((normal, score))
            if self.new_to_run(normal, level + 1, url):
                links.append(
                    Link(normal, url, score if keep else self.scorer.score(normal, anchor, level + 1))
                )
        if keep:
            self.pages.admitted(url, level, self.admission, admitted)
        return links

    async def record(
        self,
        found: list[Resource],
        level: int,
        source: str | None,
        *,
        untagged: Container[tuple[str, str]] | None = None,
    ) -> tuple[list[Resource], list[Resource]]:
        """(kept, wanted): the resources of the wanted types, stamped with level and source page, and of them
        those new to the run or found at a lower level than before (a page running ahead may have found them
        first), their datasets tagged with concepts. Carried-over resources come tagged, but for the keys in
        ``untagged``; the others are not tagged, since the run keeps them already."""
        kept, wanted = [], [r for r in found if r.type in self.types]
        now = datetime.now(UTC).isoformat(timespec="seconds")
        for r in wanted:
            r.level, r.source_page, r.discovered_at = level, source, now
            if level < self.found.get(r.key, level + 1):
                self.found[r.key] = level
                if untagged is None or r.key in untagged:
                    await tag_datasets_in_turns(r.datasets, self.settings.concept_lcs_threshold)
                kept.append(r)
        return kept, wanted


class LevelRun:
    """A level under way (``Crawler.run_levels``), with the deeper levels' links ``ahead`` gives: links read
    into per-host queues as they drain, a worker per host slot, the hosts' budgets, and each level's counts
    and deadline (from its first link queued). Every URL it does not fetch goes through ``defer``, with its
    ``DeferReason``.

    A host's time budget counts the time the run waits on it. While some host's next URL waits for a fetch
    slot, the crawl sets the pace, not the hosts: a big healthy host among many is never set aside for its
    size. Once no URL waits for a slot, the hosts with URLs left are what the run waits on.
    """

    def __init__(
        self, crawler: Crawler, links: Iterable[Link], level: int, on_page: PageSink, ahead: Ahead | None
    ):
        self.crawler, self.settings, self.on_page, self.ahead = crawler, crawler.settings, on_page, ahead
        self.levels: dict[int, LevelStats] = {}
        self.level_started: dict[int, float] = {}
        self.level_hosts: defaultdict[int, set[str]] = defaultdict(set)
        self.open: Counter[int] = Counter()  # links read and not done, per level
        self.unread: Iterator[tuple[int, Link]] = ((level, link) for link in links)
        self.more = True  # links left to read
        self.batch_gave = False  # the links being read gave one at least: ``ahead`` may give more
        self.done_since_ask = 0  # pages done since ``ahead`` was last asked: it may give their links
        self.reading_on = False  # a turn of read() is waiting for the loop
        self.ahead_asked = float("-inf")  # when ``ahead`` was last asked
        self.asking_later = False  # a task asks ``ahead`` once the pause between asks is over
        self.queues: dict[str, deque[tuple[int, Link]]] = defaultdict(deque)
        self.queued = 0
        # per-host workers keep hosts interleaved; the semaphore keeps fetches within the connection pool,
        # since time spent waiting for a connection counts against the fetcher's total timeout
        self.in_flight = asyncio.Semaphore(self.settings.concurrency)
        self.tasks: set[asyncio.Task] = set()
        self.failed_in_row: Counter[str] = Counter()
        self.waited: Counter[str] = Counter()  # seconds the run waited on each host
        self.working: Counter[str] = Counter()  # workers running per host
        self.fetching: defaultdict[str, Counter[int]] = defaultdict(
            Counter
        )  # fetches under way per host, by level
        self.fetch_ended: defaultdict[str, asyncio.Event] = defaultdict(asyncio.Event)
        self.waiting_for_slot = 0
        self.next_links = 0

    async def run(self) -> list[LevelStats]:
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
        for level, stats in sorted(self.levels.items()):
            stats.deferred_hosts = sum(
                1 for host in self.level_hosts[level] if host in self.crawler.set_aside
            )
            log.info(
                "level %d: %d URLs fetched, %d failed, %d deferred (%d hosts set aside), %d resources (ratio "
                "%.4f), %.1fs",
                level, stats.urls, stats.failures, stats.deferred, stats.deferred_hosts, stats.resources,
                stats.discovery_ratio, stats.seconds,
            )  # fmt: skip
        log.info("%d links found for the next levels", self.next_links)
        return [stats for _, stats in sorted(self.levels.items())]

    async def clock(self) -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(WAIT_CLOCK_SECONDS)
            now = time.monotonic()
            if not self.waiting_for_slot:
                for host in self.working:
                    self.waited[host] += now - last
            last = now

    def stats_of(self, level: int) -> LevelStats:
        """The level's counts, its clock started at its first link."""
        if level not in self.levels:
            self.levels[level] = LevelStats(level)
            self.level_started[level] = time.monotonic()
        return self.levels[level]

    def done(self, page: Page) -> None:
        """A page is done: its level's time runs to here, and the page goes on."""
        self.stats_of(page.level).seconds = time.monotonic() - self.level_started[page.level]
        self.open[page.level] -= 1
        self.done_since_ask += 1
        self.on_page(page)

    def deadline(self, level: int) -> float | None:
        if not self.settings.level_deadline:
            return None
        self.stats_of(level)
        return self.level_started[level] + self.settings.level_deadline

    def defer(self, page: Page, reason: DeferReason) -> None:
        """The one place a URL is not fetched: counted, and handed on as a deferred page (a later run
        takes it)."""
        page.deferred = reason
        self.stats_of(page.level).deferred += 1
        self.crawler.stats[f"defer/{reason}"] += 1
        self.done(page)

    def defer_link(self, level: int, link: Link) -> None:
        """A link of a host set aside."""
        self.defer(Page(link.url, link.source, level), self.crawler.set_aside[origin(link.url)])

    def over_budget(self, host: str, level: int, now: float) -> DeferReason | None:
        deadline = self.deadline(level)
        if deadline is not None and now >= deadline:
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
        for count, (level, link) in enumerate(self.unread, 1):
            self.batch_gave = True
            self.open[level] += 1
            host = origin(link.url)
            self.stats_of(level)
            self.level_hosts[level].add(host)
            if host in self.crawler.set_aside:
                self.defer_link(level, link)
            else:
                self.queues[host].append((level, link))
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
        # what the pages done since the last ask found may be given now
        if not self.more and (self.batch_gave or self.done_since_ask):
            self.take_ahead()

    async def read_on(self) -> None:
        await asyncio.sleep(0)
        self.reading_on = False
        if self.more:
            self.read()

    def take_ahead(self) -> None:
        """Read what ``ahead`` gives now. Asked at most once per AHEAD_PAUSE while other work runs; when
        nothing else runs it is asked at once, and a run ends only when it then gives nothing."""
        if self.more or self.ahead is None:
            return
        others = sum(1 for task in self.tasks if not task.done()) > 1  # the asking worker's own task
        if others and time.monotonic() - self.ahead_asked < AHEAD_PAUSE:
            if not self.asking_later:
                self.asking_later = True
                self.tasks.add(asyncio.create_task(self.take_ahead_later()))
            return
        self.ahead_asked, self.done_since_ask = time.monotonic(), 0
        open_level = min((level for level, count in self.open.items() if count), default=None)
        self.unread, self.more, self.batch_gave = iter(self.ahead(open_level)), True, False
        self.read()

    async def take_ahead_later(self) -> None:
        await asyncio.sleep(max(0.0, self.ahead_asked + AHEAD_PAUSE - time.monotonic()))
        self.asking_later = False
        self.take_ahead()

    async def worker(self, host: str, queue: deque[tuple[int, Link]]) -> None:
        try:
            await self.fetch_all(host, queue)
        finally:
            self.working[host] -= 1
            if not self.working[host]:
                del self.working[host]
        # this host's queue ran dry: its slot goes to the links not read yet, or the deeper levels'
        if self.more:
            self.read()
        else:
            self.take_ahead()

    async def fetch_all(self, host: str, queue: deque[tuple[int, Link]]) -> None:
        set_aside = self.crawler.set_aside
        while queue:
            await self.after_shallower(host, queue[0][0])
            if not queue:  # the host's other worker took them meanwhile
                return
            level = queue[0][0]
            if host not in set_aside and (reason := self.over_budget(host, level, time.monotonic())):
                set_aside[host] = reason
                log.warning("level %d: %s set aside (%s); its %d URLs left are deferred", level, host, reason,
                            len(queue))  # fmt: skip
            if host in set_aside:
                self.queued -= len(queue)
                while queue:
                    self.defer_link(*queue.popleft())
                return
            level, link = queue.popleft()
            self.queued -= 1
            if self.more and self.queued <= self.settings.queued_links // 2:
                self.read()
            await self.fetch_one(host, level, link)

    async def after_shallower(self, host: str, level: int) -> None:
        """Wait until the host has no fetch of a lower level under way: a resource is found by fetching its
        host's URLs, so it is then recorded at the lowest level it is found at, as a level barrier would."""
        while any(count and under < level for under, count in self.fetching[host].items()):
            ended = self.fetch_ended[host]
            ended.clear()
            await ended.wait()

    async def fetch_one(self, host: str, level: int, link: Link) -> None:
        """Fetch one link within its level's deadline and a fetch slot, and hand its page on."""
        self.fetching[host][level] += 1
        try:
            await self.fetch_page(host, level, link)
        finally:
            self.fetching[host][level] -= 1
            self.fetch_ended[host].set()

    async def fetch_page(self, host: str, level: int, link: Link) -> None:
        page = Page(link.url, link.source, level)
        if not self.crawler.asking() and not self.crawler.carries(link.url):
            return self.defer(page, DeferReason.RUN_TIME_BUDGET)
        stats = self.stats_of(level)
        follow = level < self.settings.max_level
        # a fetch still running at the level's deadline ends there, and its host is set aside; one running when
        # the run's time budget is spent ends there too
        ends = [end for end in (self.deadline(level), self.crawler.requests_until) if end is not None]
        timer = asyncio.timeout_at(min(ends, default=None))
        self.waiting_for_slot += 1
        try:
            async with timer:
                try:
                    await self.in_flight.acquire()
                finally:
                    self.waiting_for_slot -= 1
                try:
                    status, page.resources, page.links = await self.crawler.process(
                        link.url, link.source, level, follow
                    )
                finally:
                    self.in_flight.release()
        except TimeoutError:
            if not timer.expired():
                raise
            if self.crawler.asking():
                self.crawler.set_aside.setdefault(host, DeferReason.LEVEL_DEADLINE)
                return self.defer(page, DeferReason.LEVEL_DEADLINE)
            if not self.crawler.carries(link.url):
                return self.defer(page, DeferReason.RUN_TIME_BUDGET)
            # a known page still being asked when the run's time ran out: carried over, as if not asked
            status, page.resources, page.links = await self.crawler.process(
                link.url, link.source, level, follow
            )
            self.answered(host, stats, page, status)
        except RobotsDisallowed as exc:
            self.crawler.stats["skip/robots_disallowed"] += 1  # never requested: neither fetched nor failed
            page.error = exc
        except OverMemoryBudget:
            return self.defer(page, DeferReason.MEMORY_BUDGET)  # the crawl's memory, not the host's fault
        except FetchError as exc:
            stats.urls += 1
            stats.failures += 1
            self.failed_in_row[host] += 1
            self.crawler.stats[f"fail/{exc.reason}"] += 1
            page.error = exc
        else:
            self.answered(host, stats, page, status)
        self.done(page)

    def answered(self, host: str, stats: LevelStats, page: Page, status: int) -> None:
        """Count a page its host answered (or the crawl carried over)."""
        # a host answering 5xx or 429 (after the fetcher's retries) is failing too: a tarpit
        self.failed_in_row[host] = self.failed_in_row[host] + 1 if status == 429 or status >= 500 else 0
        stats.urls += 1
        stats.resources += len(page.resources)
        self.next_links += len(page.links)
