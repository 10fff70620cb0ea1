"""No host holds the others: while a tarpit host answers one page per 5 s, an innocent host's next-level page
is fetched within 15 s, in a one-process crawl and in a harvest run's shard. Levels are accounting: each page
keeps its hop count from the seeds, and each level's figures count its own pages."""

from __future__ import annotations

import asyncio
import io
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

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


def test_a_shard_runs_on_through_its_hosts_levels_while_a_tarpit_shard_drips(postgis_dsn, monkeypatch):
    """The seed links to the tarpit's pages and to an innocent host's /next (level 1), which links to its
    /deeper (level 2). The two level-1 shards run at once, as two workers run them: the innocent shard's
    task fetches /deeper as its /next commits the link, while the tarpit's shard still drips; the next
    level then has nothing left to plan for it."""
    for name, value in {"READ_TIMEOUT": "10", "TOTAL_TIMEOUT": "12", "HOST_TIME_BUDGET": "16"}.items():
        monkeypatch.setenv(f"GEOWEB_{name}", value)  # the tasks' settings come from their environment
    with TarpitServer() as tarpit, ClockedPages(innocent_pages(), host="127.0.0.3") as innocent:
        seed = f'<html><body>{tarpit_links(tarpit)}<a href="{innocent.url("/next")}">n</a></body></html>'
        with PagesServer({"/": ("text/html", seed.encode())}) as site:
            params = HarvestParams.from_conf({
                "seeds": [site.url("/")], "allowed_hosts": [site.hostport, tarpit.hostport, innocent.hostport],
                "max_level": 2, "shards": separate_shards(site, tarpit, innocent),
            })  # fmt: skip
            run_id = f"tarpit-{uuid.uuid4().hex[:8]}"
            with Store(postgis_dsn) as store:
                start_run(store, run_id, params)
                for shard in plan_level(store, run_id, 0, params):
                    crawl_shard(store, run_id, 0, shard, params)
                shards = plan_level(store, run_id, 1, params)
            started = time.monotonic()
            with ThreadPoolExecutor(len(shards)) as workers:
                summaries = list(
                    workers.map(lambda shard: shard_task(postgis_dsn, run_id, shard, params), shards)
                )
            seconds = time.monotonic() - started
            with Store(postgis_dsn) as store:
                later = plan_level(store, run_id, 2, params)
    deeper = innocent.asked_at["/deeper"] - started
    assert len(shards) == 2 and deeper < HELD_OUT_SECONDS < seconds, (deeper, seconds)
    ran_on = next(s for s in summaries if innocent.url("/").rstrip("/") in s["hosts"])
    assert ran_on["levels"] == [1, 2] and ran_on["urls"] == 2
    assert later == []  # the innocent host's level 2 is done; the tarpit's links led nowhere deeper


def shard_task(dsn: str, run_id: str, shard: int, params: HarvestParams) -> dict:
    """A level-1 crawl task, as a worker runs it: its own connection to the store."""
    with Store(dsn) as store:
        return crawl_shard(store, run_id, 1, shard, params)
