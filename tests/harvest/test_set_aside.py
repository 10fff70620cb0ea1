"""A host set aside in one level of a harvest run stays aside for the run: the next level's shard defers its
URLs without a request, and the run's report counts them. The next run, catching up, fetches them."""

from __future__ import annotations

import uuid

from aiohttp import web

from geoweb.harvest.crawl import crawl_shard, finish_run, plan_level, start_run
from geoweb.harvest.params import HarvestParams
from geoweb.settings import Settings
from geoweb.store import Store
from tests.hostile.servers import HostileServer, PagesServer

TARPIT = "/status/503?retry_after=60&page={}"


class FlakyServer(PagesServer):
    """Its pages, or while ``failing`` a 503 whose Retry-After the fetcher does not wait for (robots.txt
    answers 404: no rules)."""

    failing = True

    async def _page(self, request: web.Request) -> web.Response:
        if self.failing and request.path != "/robots.txt":
            self.seen.append(request.path_qs)
            return web.Response(status=503, headers={"Retry-After": "60"})
        return await super()._page(request)

    def pages_seen(self) -> list[str]:
        return [path for path in self.seen if path != "/robots.txt"]


def harvest(store: Store, params: HarvestParams, tasks: list[dict] | None = None) -> tuple[str, dict]:
    """One run of the crawl DAG's tasks, in their order; returns its id and summary. ``tasks``, when given,
    receives each crawl task's summary."""
    run_id = f"set-aside-{uuid.uuid4().hex[:8]}"
    start_run(store, run_id, params)
    for level in range(params.max_level + 1):
        for shard in plan_level(store, run_id, level, params):
            summary = crawl_shard(store, run_id, level, shard, params)
            if tasks is not None:
                tasks.append(summary)
    return run_id, finish_run(store, run_id)


def test_a_host_set_aside_at_one_level_is_deferred_at_the_next(postgis_dsn):
    failures = Settings().host_max_failures
    with HostileServer() as tarpit:
        level_1 = "".join(f'<a href="{tarpit.url(TARPIT.format(i))}">x</a>' for i in range(30))
        level_2 = "".join(f'<a href="{tarpit.url(TARPIT.format(100 + i))}">x</a>' for i in range(5))
        pages = {
            "/": ("text/html", f'<html><body>{level_1}<a href="/more">more</a></body></html>'.encode()),
            "/more": ("text/html", f"<html><body>{level_2}</body></html>".encode()),
        }
        with PagesServer(pages) as site:
            params = HarvestParams.from_conf({
                "seeds": [site.url("/")], "allowed_hosts": [site.hostport, tarpit.hostport], "max_level": 2,
                "shards": 1,
            })  # fmt: skip
            run_id = f"set-aside-{uuid.uuid4().hex[:8]}"
            with Store(postgis_dsn) as store:
                start_run(store, run_id, params)
                for level in range(3):
                    for shard in plan_level(store, run_id, level, params):
                        crawl_shard(store, run_id, level, shard, params)
                        if (
                            level <= 1
                        ):  # a shard runs on to its hosts' next level: level 1 may be level 0's task
                            asked_at_level_1 = len([p for p in tarpit.paths() if p.startswith("/status/")])
                summary = finish_run(store, run_id)
        asked = [p for p in tarpit.paths() if p.startswith("/status/")]
    assert failures <= asked_at_level_1 <= failures + 1
    assert len(asked) == asked_at_level_1  # nothing asked of the tarpit at level 2
    by_level = {s["level"]: s for s in summary["levels"]}
    assert by_level[1]["deferred"] == 30 - asked_at_level_1 and by_level[1]["deferred_hosts"] == 1
    assert by_level[2]["deferred"] == 5 and by_level[2]["urls"] == 0
    assert summary["deferred"] == 30 - asked_at_level_1 + 5


def test_the_next_run_catches_up_on_what_a_run_deferred(postgis_dsn):
    """With catch_up, a run crawls the URLs the run before deferred, each at its level from its source page,
    though its own seeds lead elsewhere: the host set aside then answers now."""
    failures = Settings().host_max_failures
    page = ("text/html", b"<html><body>a page</body></html>")
    with FlakyServer({f"/p{i}": page for i in range(20)}) as flaky:
        links = "".join(f'<a href="{flaky.url(f"/p{i}")}">x</a>' for i in range(20))
        pages = {"/": ("text/html", f"<html><body>{links}</body></html>".encode()), "/other": page}
        with PagesServer(pages) as site:
            conf = {"allowed_hosts": [site.hostport, flaky.hostport], "max_level": 1, "shards": 2}
            with Store(postgis_dsn) as store:
                _, first = harvest(store, HarvestParams.from_conf(conf | {"seeds": [site.url("/")]}))
                asked = len(flaky.pages_seen())
                flaky.failing = False
                run_id, second = harvest(
                    store, HarvestParams.from_conf(conf | {"seeds": [site.url("/other")], "catch_up": True})
                )
                with store.transaction() as cur:
                    cur.execute(
                        "SELECT url, level, source_page, status FROM frontier_urls WHERE run_id = %s "
                        "AND url <> %s ORDER BY url",
                        (run_id, site.url("/other")),
                    )
                    caught_up = cur.fetchall()
                again = store.frontier.take_deferred(run_id, 2)  # a retried start_run
    assert failures <= asked <= failures + 1
    assert first["levels"][1]["deferred"] == 20 - asked
    fetched_now = sorted(flaky.pages_seen()[asked:])
    assert len(fetched_now) == 20 - asked
    assert caught_up == [(flaky.url(path), 1, site.url("/"), "fetched") for path in fetched_now]
    assert second["levels"][1]["urls"] == 20 - asked and second["deferred"] == 0
    assert again[1] == 0  # what it took is there once, fetched
