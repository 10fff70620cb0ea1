"""``geoweb crawl --state``: a second run over a small real loopback site asks with the validators it kept,
carries over what did not change (a 304, or the same bytes) unread, finds every change, lists every resource
it holds with its verdict, and survives servers that lie about their validators."""

from __future__ import annotations

import asyncio
import concurrent.futures
import gzip
import json
import logging
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from email.utils import formatdate

import pytest
from aiohttp import web

from geoweb.crawl import pagestates
from geoweb.crawl.jsonl import crawl_to_jsonl
from geoweb.crawl.pagestates import PageStates
from geoweb.fetch.response import Response
from geoweb.settings import Settings

KML = """<?xml version="1.0" encoding="UTF-8"?>
<kml xmlns="http://www.opengis.net/kml/2.2"><Document><name>{name}</name>
<Placemark><name>A</name><Point><coordinates>10.0,50.0</coordinates></Point></Placemark>
</Document></kml>"""
LAST_WEEK = formatdate(1_700_000_000, usegmt=True)
FUTURE = "Tue, 01 Jan 2099 00:00:00 GMT"


class Site:
    """Pages and KML files that a test edits between runs; records each request's conditional headers."""

    def __init__(self):
        self.requests: Counter = Counter()
        self.conditional: dict[str, dict[str, str]] = {}
        self.pages = {
            "/": "<a href='/a.html'>a</a> <a href='/b.html'>b</a> <a href='/weak.html'>w</a>"
            " <a href='/future.html'>f</a> <a href='/liar.html'>l</a>",
            "/a.html": "<a href='/parks.kml'>parks</a> <a href='/changing.kml'>c</a> <a href='/gone.kml'>g</a>",
            "/b.html": "<p>no validators, never changes</p>",
            "/weak.html": "<p>a new weak ETag every time, the same bytes</p>",
            "/future.html": "<p>modified in the future</p>",
        }
        self.kml = {"/parks.kml": "Parks", "/changing.kml": "Rivers", "/gone.kml": "Lakes"}
        self.served = 0
        self.dripping: set[str] = set()  # tarpits: a byte every half second for a minute

    async def handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        self.requests[path] += 1
        self.served += 1
        self.conditional[path] = {
            k: v for k, v in request.headers.items() if k in ("If-None-Match", "If-Modified-Since")
        }
        if path in self.dripping:
            response = web.StreamResponse(headers={"Content-Type": "text/html"})
            await response.prepare(request)
            try:
                for _ in range(120):
                    await response.write(b" ")
                    await asyncio.sleep(0.5)
            except ConnectionResetError:  # the crawler let go
                pass
            return response
        if path == "/liar.html":  # 304 to a request that sent no validator
            return web.Response(status=304)
        if path in self.kml:
            body = KML.format(name=self.kml[path]).encode()
            return self.answer(request, body, "application/vnd.google-earth.kml+xml", etag=f'"{hash(body)}"')
        if path not in self.pages:
            return web.Response(status=404, text="not found")
        body = f"<html><body>{self.pages[path]}</body></html>".encode()
        headers = {
            "/": {"etag": f'"{hash(body)}"'},
            "/a.html": {"last_modified": LAST_WEEK},
            "/weak.html": {"etag": f'W/"{self.served}"'},
            "/future.html": {"last_modified": FUTURE},
        }.get(path, {})
        return self.answer(request, body, "text/html", **headers)

    @staticmethod
    def answer(request, body: bytes, content_type: str, etag=None, last_modified=None) -> web.Response:
        if etag and request.headers.get("If-None-Match") == etag:
            return web.Response(status=304, headers={"ETag": etag})
        if last_modified and request.headers.get("If-Modified-Since") == last_modified:
            return web.Response(status=304)
        headers = {"ETag": etag} if etag else {}
        if last_modified:
            headers["Last-Modified"] = last_modified
        return web.Response(body=body, content_type=content_type, headers=headers)


def run(site: Site, state, tmp_path, port: int | None = None, revisit_budget: int | None = None, **settings):
    """One ``geoweb crawl --state`` run with ``settings`` changed: (records by path, the report, the port)."""

    async def go():
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", site.handle)
        runner = web.AppRunner(app)
        await runner.setup()
        tcp = web.TCPSite(runner, "127.0.0.1", port or 0)
        await tcp.start()
        bound = tcp._server.sockets[0].getsockname()[1]
        changed = Settings(max_level=3, **settings).with_(allowed_hosts=frozenset({f"127.0.0.1:{bound}"}))
        try:
            with (tmp_path / "out.jsonl").open("w") as out:
                report = await crawl_to_jsonl([f"http://127.0.0.1:{bound}/"], changed, ["KML"], out,
                                              PageStates(state, revisit_budget))  # fmt: skip
        finally:
            await runner.cleanup()
        return report, bound

    site.requests.clear()
    report, bound = asyncio.run(go())
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    return {r["url"].rsplit("/", 1)[1]: r for r in lines}, report, bound


def test_a_second_run_carries_over_what_did_not_change_and_finds_every_change(tmp_path):
    site, state = Site(), tmp_path / "crawl.state"
    first, report, port = run(site, state, tmp_path)
    assert {name: r["verdict"] for name, r in first.items()} == dict.fromkeys(
        ["parks.kml", "changing.kml", "gone.kml"], "new"
    )
    assert report.stats["fail/bad_response"] == 1  # the liar's 304 to an unconditional request
    assert state.exists()

    site.kml["/changing.kml"] = "Rivers and canals"
    del site.kml["/gone.kml"]
    second, report, _ = run(site, state, tmp_path, port)
    assert {name: r["verdict"] for name, r in second.items()} == {
        "parks.kml": "unchanged", "changing.kml": "changed", "gone.kml": "gone",
    }  # fmt: skip
    assert second["changing.kml"]["title"] == "Rivers and canals"
    # validators went back as sent; a Last-Modified in the future did not
    assert site.conditional["/"]["If-None-Match"].startswith('"')
    assert site.conditional["/a.html"] == {"If-Modified-Since": LAST_WEEK}
    assert site.conditional["/future.html"] == {}
    assert site.conditional["/weak.html"]["If-None-Match"].startswith('W/"')
    # the index and a.html answered 304, parks.kml too; b.html and the weak ETag came whole, the same bytes
    assert report.stats["unchanged/not_modified"] == 3
    assert report.stats["unchanged/same_bytes"] == 3  # b.html, weak.html, future.html
    assert report.stats["fail/bad_response"] == 1  # the liar still has nothing to carry over


def test_the_memory_bound_still_holds_bodies_and_the_state_is_held_besides_it(tmp_path, caplog):
    site = Site()
    site.kml["/parks.kml"] = "P" * (2 * 2**20)  # a body over the whole bound
    with caplog.at_level(logging.INFO, "geoweb.crawl"):
        _, report, _ = run(site, tmp_path / "crawl.state", tmp_path, max_memory_bytes=2**20)
    assert report.stats["defer/memory_budget"] >= 1
    [held] = [r.getMessage() for r in caplog.records if "held besides max_memory_bytes" in r.getMessage()]
    assert held.startswith("the crawl's state holds ")


def test_a_state_files_growth_is_what_its_pages_read_add(tmp_path):
    states = PageStates(tmp_path / "crawl.state")
    links = [(f"http://example.org/page/{i:06d}.html", f"anchor {i}") for i in range(1000)]
    page = Response("http://example.org/", "http://example.org/", 200, {}, b"<html></html>")
    states.remember("http://example.org/", page, links, [])
    grown = states.held_bytes()
    assert 1000 * (40 + 8) < grown < 1000 * 400  # each link's strings and tuple

    states.remember("http://example.org/", page, links[:10], [])  # read again, with fewer links
    assert states.held_bytes() < grown / 50
    memory_only = PageStates()
    memory_only.remember("http://example.org/", page, links, [])
    assert memory_only.held_bytes() == 0  # a DAG task's states leave memory as its pages commit


def test_a_new_link_on_a_changed_page_is_followed_and_its_resource_is_new(tmp_path):
    site, state = Site(), tmp_path / "crawl.state"
    _, _, port = run(site, state, tmp_path)
    site.pages["/b.html"] = "<a href='/new.kml'>new</a>"
    site.kml["/new.kml"] = "Forests"
    second, _, _ = run(site, state, tmp_path, port)
    assert second["new.kml"]["verdict"] == "new"
    assert second["parks.kml"]["verdict"] == "unchanged"


def test_every_url_is_read_whole_once_per_full_read_interval(tmp_path, monkeypatch):
    site, state = Site(), tmp_path / "crawl.state"
    _, _, port = run(site, state, tmp_path)
    site.kml["/changing.kml"] = "Rivers and canals"
    monkeypatch.setattr(pagestates, "FULL_READ_SECONDS", 0)  # an ETag that stays while the body changes
    second, report, _ = run(site, state, tmp_path, port)
    assert all(headers == {} for headers in site.conditional.values())
    assert report.stats["unchanged/not_modified"] == 0
    assert second["changing.kml"]["verdict"] == "changed"


def test_the_change_rate_follows_the_visits_that_found_a_change():
    assert pagestates.change_rate(10, 0, 3600) == 0
    assert 0 < pagestates.change_rate(10, 5, 3600) < (5 / 10) / 3600 * 2
    assert pagestates.change_rate(10, 10, 3600) > 0  # changed every visit: a finite rate, not a division by 0
    assert pagestates.PageState().scheduling_rate() is None  # no visit after the first read: no rate


def test_with_a_revisit_budget_the_urls_not_chosen_are_not_requested_and_their_resources_are_kept(tmp_path):
    site, state = Site(), tmp_path / "crawl.state"
    _, _, port = run(site, state, tmp_path)
    site.kml["/changing.kml"] = "Rivers and canals"
    # every known URL was read once, so all are as worth revisiting: the budget goes by level, the index first
    second, report, _ = run(site, state, tmp_path, port, revisit_budget=1)
    asked = {path for path, count in site.requests.items() if count and path != "/robots.txt"}
    assert asked == {"/", "/liar.html"}  # the liar is not known (its answer failed): it is new, fetched
    assert report.stats["unchanged/not_due"] == 7  # four pages and three KML files carried over unasked
    assert {name: r["verdict"] for name, r in second.items()} == dict.fromkeys(
        ["parks.kml", "changing.kml", "gone.kml"], "unchanged"
    )
    assert second["changing.kml"]["title"] == "Rivers"  # not asked, so not seen changing


def test_once_the_time_budget_is_spent_known_pages_are_carried_over_and_new_urls_deferred(tmp_path):
    site, state = Site(), tmp_path / "crawl.state"
    _, _, port = run(site, state, tmp_path)
    site.pages["/b.html"] = "<a href='/new.kml'>a file new to the crawl</a>"
    site.kml["/new.kml"] = "Glaciers"
    # spent as the run begins: it sends no request at all
    second, report, _ = run(site, state, tmp_path, port, run_time_budget=1e-9)
    assert site.requests == Counter()
    assert {name: r["verdict"] for name, r in second.items()} == dict.fromkeys(
        ["parks.kml", "changing.kml", "gone.kml"], "unchanged"
    )
    assert report.stats["unchanged/not_due"] == 8  # the pages and files the state holds
    assert report.stats["defer/run_time_budget"] == 1  # the liar: its answers failed, so it is not known
    assert sum(level.deferred for level in report.levels) == 1
    # a budget that lasts: the change is read, the new file found
    third, _, _ = run(site, state, tmp_path, port, run_time_budget=3600)
    assert third["new.kml"]["verdict"] == "new"


def test_a_fetch_under_way_when_the_time_budget_is_spent_ends_there(tmp_path):
    """Tarpits do not hold a run past its time budget: a known page still dripping is carried over as the run
    before read it, a new one deferred."""
    site, state = Site(), tmp_path / "crawl.state"
    _, _, port = run(site, state, tmp_path)
    site.pages["/"] += " <a href='/new.html'>n</a>"
    site.pages["/new.html"] = "<p>new to the crawl</p>"
    site.dripping = {"/b.html", "/new.html"}
    started = time.monotonic()
    # slots for every page of a level: none waits behind the tarpits
    second, report, _ = run(site, state, tmp_path, port, run_time_budget=3, per_host_concurrency=8)
    assert time.monotonic() - started < 10  # not the minute the tarpits drip for
    assert site.requests["/b.html"] == site.requests["/new.html"] == 1
    assert report.stats["defer/run_time_budget"] == 1  # new.html
    # b.html, carried over when the budget ended its fetch, and the KML files of the level below, which wait
    # for the host's fetches above them to end
    assert report.stats["unchanged/not_due"] == 4
    assert {name: r["verdict"] for name, r in second.items()} == dict.fromkeys(
        ["parks.kml", "changing.kml", "gone.kml"], "unchanged"
    )


def test_geoweb_crawl_keeps_its_state_between_runs_and_says_what_it_carried_over(tmp_path):
    site, state = Site(), tmp_path / "crawl.state"
    with serving(site) as port:

        def geoweb_crawl(*extra: str) -> tuple[dict, str]:
            out = tmp_path / "out.jsonl"
            done = subprocess.run(
                [sys.executable, "-c", "import sys; from geoweb.cli import main; sys.exit(main())", "crawl",
                 "--seed", f"http://127.0.0.1:{port}/", "--allow-host", f"127.0.0.1:{port}", "--types", "KML",
                 "--max-level", "3", "--state", str(state), "--output", str(out), *extra],
                capture_output=True, text=True, timeout=120, check=True,
            )  # fmt: skip
            lines = [json.loads(line) for line in out.read_text().splitlines()]
            return {r["url"].rsplit("/", 1)[1]: r["verdict"] for r in lines}, done.stderr

        first, _ = geoweb_crawl()
        assert first == dict.fromkeys(["parks.kml", "changing.kml", "gone.kml"], "new")
        del site.kml["/gone.kml"]
        second, said = geoweb_crawl()
        assert second == {"parks.kml": "unchanged", "changing.kml": "unchanged", "gone.kml": "gone"}
        assert "this run carried over 4 not modified (304) and 3 unchanged by signature" in said
        site.requests.clear()
        third, _ = geoweb_crawl("--revisit-budget", "1")
        assert third == {"parks.kml": "unchanged", "changing.kml": "unchanged"}
        # one URL the state holds, and those it does not: the liar (its answers failed) and the page gone since
        assert len(set(site.requests) - {"/robots.txt", "/liar.html", "/gone.kml"}) == 1
        assert {"/liar.html", "/gone.kml"} <= set(site.requests)
        site.requests.clear()
        fourth, _ = geoweb_crawl("--revisit-megabytes", "0")  # no URL the state holds fits in 0 bytes
        assert fourth == third and set(site.requests) - {"/robots.txt", "/liar.html", "/gone.kml"} == set()
        site.requests.clear()
        fifth, said = geoweb_crawl("--time-budget-hours", "1e-12")  # spent as it begins
        assert fifth == third and site.requests == Counter() and "time budget of 0 s is spent" in said
        # a time budget is a revisit budget at the pace of the last run that sent requests
        saved = json.loads(gzip.decompress(state.read_bytes()))
        assert saved["pace"] > 0
        state.write_bytes(gzip.compress(json.dumps(saved | {"pace": 0.05}).encode()))
        sixth, _ = geoweb_crawl("--time-budget-hours", str(30 / 3600))  # 1.5 requests at that pace
        assert sixth == third
        assert len(set(site.requests) - {"/robots.txt", "/liar.html", "/gone.kml"}) == 1


@contextmanager
def serving(site: Site) -> Iterator[int]:
    """The site on a loopback port, served from a thread of its own while a ``geoweb`` process crawls it."""
    loop = asyncio.new_event_loop()
    started: concurrent.futures.Future = concurrent.futures.Future()

    async def serve() -> web.AppRunner:
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", site.handle)
        runner = web.AppRunner(app)
        await runner.setup()
        tcp = web.TCPSite(runner, "127.0.0.1", 0)
        await tcp.start()
        started.set_result(tcp._server.sockets[0].getsockname()[1])
        return runner

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    runner = asyncio.run_coroutine_threadsafe(serve(), loop).result(10)
    try:
        yield started.result(10)
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


@pytest.mark.parametrize(
    "content",
    [
        b"",  # empty
        gzip.compress(b'{"version": 2, "urls": ["u"], "pages": {"p": {"links": [0, "a"')[:-9],  # cut short
        b"\x1f\x8b\x08\x00" + b"\xff" * 64,  # a gzip header over garbage
        gzip.compress(b"not json"),
        gzip.compress(
            b'{"version": 2, "urls": [], "pages": {"p": {"links": [5, "a"]}}}'
        ),  # an index past the table
        gzip.compress(
            b'{"version": 2, "urls": ["u"], "pages": {"p": {"links": [0]}}}'
        ),  # a link without text
        gzip.compress(b'{"version": 1, "pages": {"p": {"no_such_field": 1}}}'),
        gzip.compress(b"[1, 2]"),
        gzip.compress(b'{"version": 3, "urls": [], "pages": {}}'),  # a version this geoweb does not know
        gzip.compress(b'{"version": 2, "urls": [], "pages": {}, "pace": "fast"}'),
    ],
)
def test_a_broken_state_file_stops_geoweb_crawl_with_one_line_and_is_left_as_it_was(tmp_path, content):
    state, out = tmp_path / "crawl.state", tmp_path / "out.jsonl"
    state.write_bytes(content)
    out.write_text("the last run's output\n")
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from geoweb.cli import main; sys.exit(main())", "crawl",
         "--seed", "http://127.0.0.1:9/", "--state", str(state), "--output", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert f"geoweb crawl: the state file {state} cannot be read (" in done.stderr
    assert "move it away to start the crawl's state afresh" in done.stderr and "Traceback" not in done.stderr
    assert state.read_bytes() == content and out.read_text() == "the last run's output\n"
