"""Hosts that stall, tarpit or keep failing are set aside: their URLs left are deferred with the reason,
counted in the report, and no level waits on them; the other hosts' resources are still found."""

import asyncio
import io
import json
import time

from geoweb.crawl.jsonl import crawl_to_jsonl
from geoweb.settings import Settings
from tests.hostile.servers import HostileServer, PagesServer, loopback_settings

KML = b"""<?xml version="1.0"?><kml xmlns="http://www.opengis.net/kml/2.2"><Document><name>Good</name>
<Placemark><Point><coordinates>5,45</coordinates></Point></Placemark></Document></kml>"""
TARPIT_PAGES = 200


def crawl(hostile: HostileServer, paths: list[str], **settings):
    """A crawl of a site linking to a good KML file and to ``paths`` on the hostile host: (report, found
    file names, seconds)."""
    links = [hostile.url(p) for p in paths] + ["/good.kml"]
    seed = "".join(f'<a href="{link}">x</a>' for link in links).encode()
    pages = {
        "/": ("text/html", b"<html><body>" + seed + b"</body></html>"),
        "/good.kml": ("application/vnd.google-earth.kml+xml", KML),
    }
    with PagesServer(pages) as site:
        out = io.StringIO()
        started = time.monotonic()
        report = asyncio.run(
            crawl_to_jsonl(
                [site.url("/")], loopback_settings(hostile, site, max_level=1, **settings), ["KML"], out
            )
        )
        seconds = time.monotonic() - started
    found = {r["url"].rsplit("/", 1)[-1] for r in map(json.loads, out.getvalue().splitlines())}
    return report, found, seconds


def test_a_tarpit_host_is_set_aside_after_its_failures_in_a_row():
    """At the defaults: 503 with Retry-After 60 on every one of 200 pages. The wait is longer than
    max_retry_after, so none is waited for; after host_max_failures answers in a row the rest are deferred."""
    defaults = Settings()
    with HostileServer() as hostile:
        paths = [f"/status/503?retry_after=60&page={i}" for i in range(TARPIT_PAGES)]
        report, found, seconds = crawl(hostile, paths)
        requested = [p for p in hostile.paths() if p.startswith("/status/")]
    assert found == {"good.kml"}
    level = report.levels[1]
    # per-host concurrency 2: a second fetch may be under way when the last failure in a row lands
    assert defaults.host_max_failures <= len(requested) <= defaults.host_max_failures + 1
    assert level.deferred == TARPIT_PAGES - len(requested) and level.deferred_hosts == 1
    assert report.stats["defer/host_failures"] == level.deferred
    assert seconds < 5, f"{seconds:.1f} s"


def test_a_stalling_host_is_set_aside_when_its_time_budget_is_spent():
    with HostileServer() as hostile:
        paths = [f"/stall?page={i}" for i in range(20)]
        report, found, seconds = crawl(hostile, paths, host_time_budget=2.0, total_timeout=1.0)
    assert found == {"good.kml"}
    level = report.levels[1]
    assert level.deferred > 0 and level.deferred_hosts == 1
    assert report.stats["defer/host_time_budget"] == level.deferred
    assert level.failures + level.deferred == 20
    # without the budget: 20 stalls of 1 s each, two at a time, plus a retry each
    assert seconds < 8, f"{seconds:.1f} s"


def test_a_fetch_running_at_the_level_deadline_ends_there():
    """A slow-drip body longer than the whole level: the level ends at its deadline, the URL deferred."""
    with HostileServer() as hostile:
        report, _, seconds = crawl(
            hostile, ["/drip"], level_deadline=1.5, total_timeout=30.0, read_timeout=5.0, host_time_budget=0
        )
    level = report.levels[1]
    assert level.deferred >= 1 and report.stats["defer/level_deadline"] >= 1
    assert seconds < 6, f"{seconds:.1f} s"


def test_budgets_off_leave_every_url_fetched():
    with HostileServer() as hostile:
        paths = [f"/status/503?page={i}" for i in range(12)]
        report, found, _ = crawl(hostile, paths, host_max_failures=0, host_time_budget=0, level_deadline=0)
    assert found == {"good.kml"}
    assert report.levels[1].urls == 13 and report.levels[1].deferred == 0


def test_hosts_the_crawl_keeps_waiting_are_not_set_aside_for_their_size():
    """Two healthy hosts of 25 pages, one request at a time in all, 0.1 s between a host's requests: each
    takes longer than its time budget, but the crawl's one fetch slot sets the pace, not the hosts."""
    with HostileServer() as first, HostileServer(host="127.0.0.2") as second:
        links = [server.url(f"/ok?page={i}") for server in (first, second) for i in range(25)]
        seed = "".join(f'<a href="{link}">x</a>' for link in links).encode()
        with PagesServer({"/": ("text/html", b"<html><body>" + seed + b"</body></html>")}) as site:
            settings = loopback_settings(first, second, site, max_level=1, concurrency=1,
                                         per_host_concurrency=1, per_host_delay=0.1, host_time_budget=1.0)  # fmt: skip
            started = time.monotonic()
            report = asyncio.run(crawl_to_jsonl([site.url("/")], settings, ["KML"], io.StringIO()))
            seconds = time.monotonic() - started
    level = report.levels[1]
    assert seconds > 2 * settings.host_time_budget  # each host's pages took longer than its budget
    assert level.urls == 50 and level.deferred == 0 and level.deferred_hosts == 0
