"""No host holds the others: while a tarpit host answers one page per 5 s, an innocent host's next-level page
is fetched within 15 s, in a one-process crawl and in a harvest run's shard. Levels are accounting: each page
keeps its hop count from the seeds, and each level's figures count its own pages."""

from __future__ import annotations

import asyncio
import io
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from aiohttp import web

from geoweb.crawl.jsonl import crawl_to_jsonl
from geoweb.harvest.crawl import crawl_shard, plan_level, start_run
from geoweb.harvest.params import HarvestParams
from geoweb.links.normalize import origin
from geoweb.store import Store, shard_of
from tests.hostile.servers import PagesServer, loopback_settings

TARPIT_PAGES = 16
TARPIT_SECONDS = 5.0  # the tarpit answers one page per this many seconds, one at a time
HELD_OUT_SECONDS = 15.0


class TarpitServer(PagesServer):
    """An HTML page for every path, answered one request at a time, each after TARPIT_SECONDS."""

    def __init__(self, host: str = "127.0.0.2"):
        super().__init__({}, host)
        self.turn: asyncio.Lock | None = None

    async def _page(self, request: web.Request) -> web.Response:
        if request.path == "/robots.txt":
            return web.Response(status=404)
        self.turn = self.turn or asyncio.Lock()
        async with self.turn:
            await asyncio.sleep(TARPIT_SECONDS)
        self.seen.append(request.path_qs)
        return web.Response(body=b"<html><body>slow</body></html>", content_type="text/html")


class ClockedPages(PagesServer):
    """PagesServer that notes when each path was first asked for."""

    def __init__(self, pages: dict[str, tuple[str, bytes]], host: str = "127.0.0.1"):
        super().__init__(pages, host)
        self.asked_at: dict[str, float] = {}

    async def _page(self, request: web.Request) -> web.Response:
        self.asked_at.setdefault(request.path, time.monotonic())
        return await super()._page(request)


def tarpit_links(tarpit: TarpitServer) -> str:
    return "".join(f'<a href="{tarpit.url(f"/p{i}")}">t</a>' for i in range(TARPIT_PAGES))


def innocent_pages(first: str = "/next") -> dict[str, tuple[str, bytes]]:
    """An innocent host: ``first`` links to /deeper."""
    return {
        first: ("text/html", b'<html><body><a href="/deeper">d</a></body></html>'),
        "/deeper": ("text/html", b"<html><body>end</body></html>"),
    }


def test_a_tarpit_host_holds_no_other_hosts_next_levels_in_one_process():
    """The seed links to the tarpit's pages and to its own /next (level 1), which links to /deeper (level 2).
    Were levels barriers, /deeper would wait until the tarpit is set aside (its host time budget, 16 s)."""
    with TarpitServer() as tarpit:
        pages = {
            "/": (
                "text/html",
                f'<html><body>{tarpit_links(tarpit)}<a href="/next">n</a></body></html>'.encode(),
            )
        }
        with ClockedPages(pages | innocent_pages()) as site:
            settings = loopback_settings(
                tarpit, site, max_level=2, read_timeout=10.0, total_timeout=12.0, host_time_budget=16.0
            )
            started = time.monotonic()
            report = asyncio.run(crawl_to_jsonl([site.url("/")], settings, ["KML"], io.StringIO()))
            seconds = time.monotonic() - started
            deeper = site.asked_at["/deeper"] - started
    assert deeper < HELD_OUT_SECONDS < seconds, (deeper, seconds)
    assert 1 <= len(tarpit.seen) < TARPIT_PAGES  # the tarpit was still dripping, then set aside
    by_level = {stats.level: stats for stats in report.levels}
    assert (by_level[0].urls, by_level[2].urls) == (1, 1)  # hop counts, not the order pages were fetched in
    assert by_level[1].urls == 1 + len(tarpit.seen) and by_level[1].deferred_hosts == 1
    assert by_level[1].deferred == TARPIT_PAGES - len(tarpit.seen)


def separate_shards(*servers) -> int:
    """A shard count that puts each server's origin in a shard of its own."""
    origins = [origin(server.url("/")) for server in servers]
    return next(n for n in range(2, 1000) if len({shard_of(o, n) for o in origins}) == len(origins))


@dataclass
class LevelOne:
    """A harvest run's level 1 whose shards ran at once, as two workers run them."""

    shards: list[int]  # the level's planned shards
    summaries: list[dict]  # their tasks' summaries
    started: float  # time.monotonic() when they started
    seconds: float  # until the last ended
    later: list[int]  # the shards level 2 plans then
    levels: list  # the run's level figures


def level_one_at_once(dsn: str, seed: str, servers: tuple, monkeypatch) -> LevelOne:
    """Level 0 of a run from ``seed`` over the ``servers``' hosts, each in a shard of its own, then level 1's
    shards at once, each with its own connection to the store; the tarpit is set aside after 16 s."""
    for name, value in {"READ_TIMEOUT": "10", "TOTAL_TIMEOUT": "12", "HOST_TIME_BUDGET": "16"}.items():
        monkeypatch.setenv(f"GEOWEB_{name}", value)  # the tasks' settings come from their environment
    params = HarvestParams.from_conf({
        "seeds": [seed], "allowed_hosts": [s.hostport for s in servers], "max_level": 2,
        "shards": separate_shards(*servers),
    })  # fmt: skip
    run_id = f"tarpit-{uuid.uuid4().hex[:8]}"
    with Store(dsn) as store:
        start_run(store, run_id, params)
        for shard in plan_level(store, run_id, 0, params):
            crawl_shard(store, run_id, 0, shard, params)
        shards = plan_level(store, run_id, 1, params)
    started = time.monotonic()
    with ThreadPoolExecutor(len(shards)) as workers:
        summaries = list(workers.map(lambda shard: shard_task(dsn, run_id, shard, params), shards))
    seconds = time.monotonic() - started
    with Store(dsn) as store:
        return LevelOne(
            shards,
            summaries,
            started,
            seconds,
            plan_level(store, run_id, 2, params),
            store.runs.level_stats(run_id),
        )


def shard_task(dsn: str, run_id: str, shard: int, params: HarvestParams) -> dict:
    """A level-1 crawl task, as a worker runs it: its own connection to the store."""
    with Store(dsn) as store:
        return crawl_shard(store, run_id, 1, shard, params)


def test_a_shard_runs_on_through_its_hosts_levels_while_a_tarpit_shard_drips(postgis_dsn, monkeypatch):
    """The seed links to the tarpit's pages and to an innocent host's /next (level 1), which links to its
    /deeper (level 2). The innocent shard's task fetches /deeper as its /next commits the link, while the
    tarpit's shard still drips; the next level then has nothing left to plan for it."""
    with TarpitServer() as tarpit, ClockedPages(innocent_pages(), host="127.0.0.3") as innocent:
        seed = f'<html><body>{tarpit_links(tarpit)}<a href="{innocent.url("/next")}">n</a></body></html>'
        with PagesServer({"/": ("text/html", seed.encode())}) as site:
            run = level_one_at_once(postgis_dsn, site.url("/"), (site, tarpit, innocent), monkeypatch)
    deeper = innocent.asked_at["/deeper"] - run.started
    assert len(run.shards) == 2 and deeper < HELD_OUT_SECONDS < run.seconds, (deeper, run.seconds)
    ran_on = next(s for s in run.summaries if innocent.url("/").rstrip("/") in s["hosts"])
    assert ran_on["levels"] == [1, 2] and ran_on["urls"] == 2
    assert run.later == []  # the innocent host's level 2 is done; the tarpit's links led nowhere deeper


def test_a_shard_takes_on_a_shard_no_task_crawls_while_a_tarpit_shard_drips(postgis_dsn, monkeypatch):
    """As above, but the innocent host's /next links to /deeper on another host, in a shard of its own that
    has no level-1 URLs, so no level-1 task. The innocent shard's task, with nothing left of its own, takes that
    shard's level 2 on (it holds it, so no other task crawls its hosts) and fetches /deeper while the tarpit
    still drips."""
    other_pages = {"/deeper": ("text/html", b"<html><body>end</body></html>")}
    with TarpitServer() as tarpit, ClockedPages(other_pages, host="127.0.0.4") as other:
        nxt = f'<html><body><a href="{other.url("/deeper")}">d</a></body></html>'
        with ClockedPages({"/next": ("text/html", nxt.encode())}, host="127.0.0.3") as innocent:
            seed = f'<html><body>{tarpit_links(tarpit)}<a href="{innocent.url("/next")}">n</a></body></html>'
            with PagesServer({"/": ("text/html", seed.encode())}) as site:
                servers = (site, tarpit, innocent, other)
                run = level_one_at_once(postgis_dsn, site.url("/"), servers, monkeypatch)
    deeper = other.asked_at["/deeper"] - run.started
    other_shard = shard_of(origin(other.url("/")), separate_shards(*servers))
    assert len(run.shards) == 2 and other_shard not in run.shards
    assert deeper < HELD_OUT_SECONDS < run.seconds, (deeper, run.seconds)
    took_on = next(s for s in run.summaries if innocent.url("/").rstrip("/") in s["hosts"])
    assert took_on["adopted_shards"] == [other_shard] and took_on["levels"] == [1, 2]
    assert next(s for s in run.summaries if s is not took_on)["adopted_shards"] == []  # it never ran dry
    assert run.later == []  # nothing left for a level-2 task
    assert [s.urls for s in run.levels if s.level == 2] == [1]  # /deeper counted once, at its hop count
