"""The crawl engine over a small real loopback site: levels, dedup, budgets, robots and failures."""

import asyncio
import json
from collections import Counter

from aiohttp import web

from geoweb.crawl.jsonl import crawl_to_jsonl
from geoweb.models import DeferReason
from geoweb.settings import Settings

KML = b"""<?xml version="1.0" encoding="UTF-8"?>
<kml xmlns="http://www.opengis.net/kml/2.2"><Document><name>Parks</name>
<Placemark><name>A</name><Point><coordinates>10.0,50.0</coordinates></Point></Placemark>
</Document></kml>"""


def page(*links: str, text: str = "") -> web.Response:
    body = "".join(f'<a href="{href}">{href}</a>' for href in links)
    return web.Response(text=f"<html><body>{body}<p>{text}</p></body></html>", content_type="text/html")


def make_site(requests: Counter) -> web.Application:
    routes = {
        "/": lambda: page(
            "/a.html", "/b.html", "/cal?m=0", "/private/x.html", "/missing.html", "/report.pdf"
        ),
        "/a.html": lambda: page("/b.html", "/deep/c.html", "/"),
        "/b.html": lambda: page("/a.html", "/deep/c.html", text="see http://127.0.0.1:{port}/plain.kml"),
        "/deep/c.html": lambda: page("../data/parks.kml"),
        "/private/x.html": lambda: page("/data/secret.kml"),
        "/robots.txt": lambda: web.Response(text="User-agent: *\nDisallow: /private/\n"),
    }

    async def handle(request: web.Request) -> web.StreamResponse:
        requests[request.path_qs] += 1
        if request.path == "/cal":  # an endless calendar: every month links to the next
            month = int(request.query.get("m", "0"))
            return page(f"/cal?m={month + 1}")
        if request.path.endswith(".kml"):
            return web.Response(body=KML, content_type="application/vnd.google-earth.kml+xml")
        route = routes.get(request.path)
        if route is None:
            return web.Response(status=404, text="not found")
        response = route()
        if response.text and "{port}" in response.text:
            response.text = response.text.replace("{port}", str(request.url.port))
        return response

    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", handle)
    return app


def crawl(settings: Settings, tmp_path):
    requests: Counter = Counter()

    async def go():
        runner = web.AppRunner(make_site(requests))
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        out = (tmp_path / "out.jsonl").open("w")
        try:
            s = settings.with_(allowed_hosts=frozenset({f"127.0.0.1:{port}"}))
            report = await crawl_to_jsonl([f"http://127.0.0.1:{port}/"], s, ["KML"], out)
        finally:
            out.close()
            await runner.cleanup()
        return port, report

    port, report = asyncio.run(go())
    records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    return port, report, records, requests


def test_crawl_levels_dedup_robots_and_traps(tmp_path):
    port, report, records, requests = crawl(Settings(max_level=3, max_pages_per_host=20), tmp_path)
    base = f"http://127.0.0.1:{port}"
    by_url = {r["url"]: r for r in records}
    # parks.kml is 3 hops away (/ -> a -> deep/c -> parks), plain.kml 2 hops via a plain-text URL
    assert set(by_url) == {f"{base}/data/parks.kml", f"{base}/plain.kml"}
    assert by_url[f"{base}/data/parks.kml"]["level"] == 3
    assert by_url[f"{base}/data/parks.kml"]["source_page"] == f"{base}/deep/c.html"
    assert by_url[f"{base}/plain.kml"]["level"] == 2
    assert by_url[f"{base}/plain.kml"]["source_page"] == f"{base}/b.html"
    assert by_url[f"{base}/plain.kml"]["type"] == "KML"
    # every page fetched once although linked from several pages
    assert all(n == 1 for path, n in requests.items()), requests
    # robots.txt kept the crawler out of /private/, and the PDF link was never followed
    assert not any(path.startswith("/private/") for path in requests)
    assert "/data/secret.kml" not in requests and "/report.pdf" not in requests
    # the calendar trap stopped at max_level: months 0..2 at levels 1..3
    assert sorted(p for p in requests if p.startswith("/cal")) == ["/cal?m=0", "/cal?m=1", "/cal?m=2"]
    # the 404 was a failure of its own and the crawl went on
    assert [s.level for s in report.levels] == [0, 1, 2, 3]
    assert report.stats["fetch/status/404"] == 1
    assert report.resources == 2
    assert "resources by type: KML 2" in report.table()


def test_host_budget_ends_a_trap_before_max_level(tmp_path):
    _, report, _, requests = crawl(Settings(max_level=5, max_pages_per_host=6), tmp_path)
    # six URLs admitted; the one under /private/ was refused by robots.txt, never requested
    assert report.urls == 5
    assert report.stats["skip/robots_disallowed"] == 1
    assert report.stats["filter/host_budget"] >= 1
    assert len([p for p in requests if p != "/robots.txt"]) == 5


def test_a_page_over_the_memory_bound_is_deferred_not_failed():
    """A body the memory budget refuses is the crawl's limit, not the host's failure: deferred with the
    reason (a later run reads it), the host's other pages fetched."""
    from geoweb.crawl.engine import Crawler, Link
    from geoweb.fetch import Response
    from geoweb.fetch.memory import OverMemoryBudget

    async def fetch(url, **kwargs):
        if url.endswith("/big"):
            raise OverMemoryBudget("a body of 300000000 bytes does not fit under max_memory_bytes")
        return Response(url, url, 200, {"content-type": "text/html"}, b"<html></html>")

    pages = []
    crawler = Crawler(fetch, [], settings=Settings(host_max_failures=1), seen=set())
    links = [Link("http://h/big", None), Link("http://h/a", None), Link("http://h/b", None)]
    stats = asyncio.run(crawler.run_level(links, 0, pages.append))
    assert {p.url: p.deferred for p in pages} == {
        "http://h/big": "memory_budget",
        "http://h/a": None,
        "http://h/b": None,
    }
    assert (stats.deferred, stats.failures, crawler.set_aside) == (1, 0, {})
    assert crawler.stats["defer/memory_budget"] == 1


def test_a_level_is_read_as_its_queues_drain():
    """A level streamed from its source is read a little ahead of the fetches, never whole: at most
    about ``queued_links`` links wait in the queues, every link is fetched once, and the
    links of a host set aside mid-level, read after, are deferred without a request."""
    from geoweb.crawl.engine import Crawler, Link
    from geoweb.errors import FetchError
    from geoweb.fetch import Response

    hosts = [f"http://h{i}.example" for i in range(5)]
    links = [Link(f"{hosts[i % 5]}/{i}", None) for i in range(400)]
    read: list[str] = []
    fetched: list[str] = []
    pages = []
    ahead: list[int] = []  # links read and not done yet, at each fetch

    def source():
        for link in links:
            read.append(link.url)
            yield link

    async def fetch(url, **kwargs):
        ahead.append(len(read) - len(pages))
        fetched.append(url)
        await asyncio.sleep(0)
        if url.startswith(hosts[4]):
            raise FetchError("connection refused")
        return Response(url, url, 200, {"content-type": "text/plain"}, b"")

    settings = Settings(queued_links=20, concurrency=4, host_max_failures=3)
    crawler = Crawler(fetch, [], settings=settings, seen=set())
    stats = asyncio.run(crawler.run_level(source(), 0, pages.append))
    assert max(ahead) < 2 * 20 and len(read) == 400  # queued, a few slots' worth more, in flight
    assert crawler.set_aside == {hosts[4]: "host_failures"}
    failed = [u for u in fetched if u.startswith(hosts[4])]
    assert 3 <= len(failed) <= 4  # the fetch of its other worker may be in flight at the third failure
    assert sorted(p.url for p in pages) == sorted(link.url for link in links)
    assert sorted(fetched) == sorted(p.url for p in pages if not p.deferred)
    assert (stats.urls, stats.failures, stats.deferred) == (320 + len(failed), len(failed), 80 - len(failed))
    assert {p.deferred for p in pages if p.deferred} == {DeferReason.HOST_FAILURES}
    assert crawler.stats["defer/host_failures"] == stats.deferred  # one place counts each deferral
