"""Politeness across processes: two `geoweb crawl` processes of one host at once, and a crawl with a revisit
(the library's revisit of due resources, in a thread of the test), as two DAGs' tasks would be, against a
server that logs when each request arrives and ends. With the shared leases the host never sees
more than per_host_concurrency requests in flight nor two starts closer than the delay; without them it does.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

from aiohttp import web

from geoweb.harvest.revisit import _check_all
from geoweb.models import CheckResult, Due, ScheduleState
from geoweb.settings import Settings
from tests.hostile.politeness import LEASES_URL, closest_starts, leases_client, peak_in_flight
from tests.hostile.servers import PagesServer

PAGES = 24
CONCURRENCY = 2
DELAY = 0.1
ANSWER_SECONDS = 0.15  # each answer takes longer than the delay, so requests overlap when allowed to
# Starts are granted at the clients and stamped on arrival here: between the two, a busy crawl process may be
# reading a page and a new connection arrives later than a reused one (up to 20-odd ms on a loaded machine).
ARRIVAL_JITTER = 0.03


class TimedServer(PagesServer):
    """A site of PAGES pages linked from /; every request's (arrival, end) in ``spans``."""

    def __init__(self):
        super().__init__({})
        self.spans: list[tuple[float, float]] = []

    async def _page(self, request: web.Request) -> web.Response:
        arrival = time.monotonic()
        await asyncio.sleep(ANSWER_SECONDS)
        links = "".join(f"<a href='/p{i}'>page {i}</a>" for i in range(PAGES)) if request.path == "/" else ""
        self.spans.append((arrival, time.monotonic()))
        if request.path == "/robots.txt":
            return web.Response(status=404)
        return web.Response(text=f"<html><body>{links}</body></html>", content_type="text/html")


def crawl_twice_at_once(server: TimedServer, leases: str | None, tmp_path: Path) -> None:
    crawls = [start_crawl(server, leases, tmp_path / f"crawl{i}.jsonl") for i in range(2)]
    for crawl in crawls:
        wait_for(crawl)


def start_crawl(server: TimedServer, leases: str | None, output: Path) -> subprocess.Popen:
    geoweb = Path(sys.executable).with_name("geoweb")
    env = {k: v for k, v in os.environ.items() if k != "GEOWEB_HOST_LEASES"}
    if leases:
        env["GEOWEB_HOST_LEASES"] = leases
    command = [str(geoweb), "crawl", "--seed", server.url("/"), "--allow-host", server.hostport,
               "--max-level", "1", "--per-host-concurrency", str(CONCURRENCY), "--delay", str(DELAY)]  # fmt: skip
    return subprocess.Popen([*command, "-o", str(output)], env=env, stderr=subprocess.PIPE)


def wait_for(crawl: subprocess.Popen) -> None:
    _, stderr = crawl.communicate(timeout=120)
    assert crawl.returncode == 0, stderr.decode()[-2000:]


def revisit(server: TimedServer, leases: str | None) -> list[CheckResult]:
    """The revisit's checks of PAGES due KML files (here pages: each check is a failed one, a request all
    the same), with the crawl's per-host settings."""
    settings = Settings(
        allowed_hosts=frozenset({server.hostport}),
        per_host_concurrency=CONCURRENCY,
        per_host_delay=DELAY,
        host_leases=leases or "",
    )
    due = [Due(i, server.url(f"/p{i}"), "KML", None, None, ScheduleState(3600.0)) for i in range(PAGES)]
    results: list[CheckResult] = []
    asyncio.run(_check_all(due, settings, results.append, operations=True))
    return results


def test_two_crawls_of_one_host_keep_its_politeness_with_shared_leases(tmp_path):
    leases_client().close()
    with TimedServer() as server:
        crawl_twice_at_once(server, LEASES_URL, tmp_path)
        spans = list(server.spans)
    assert len(spans) == 2 * (PAGES + 2)  # robots.txt, the seed and its pages, by each crawl
    assert peak_in_flight(spans) <= CONCURRENCY
    assert closest_starts(spans) >= DELAY - ARRIVAL_JITTER


def crawl_and_revisit_at_once(server: TimedServer, leases: str | None, tmp_path: Path) -> list[CheckResult]:
    crawl = start_crawl(server, leases, tmp_path / "crawl.jsonl")
    deadline = time.monotonic() + 60
    while len(server.spans) < 2 and time.monotonic() < deadline:  # its robots.txt and seed: pages come next
        time.sleep(0.01)
    results = revisit(server, leases)
    wait_for(crawl)
    return results


def test_a_crawl_and_a_revisit_of_one_host_keep_its_politeness_with_shared_leases(tmp_path):
    leases_client().close()
    with TimedServer() as server:
        results = crawl_and_revisit_at_once(server, LEASES_URL, tmp_path)
        spans = list(server.spans)
    assert [r.error_reason for r in results] == ["not_found"] * PAGES
    assert len(spans) == (PAGES + 2) + (PAGES + 1)  # the crawl's, and the revisit's with its robots.txt
    assert peak_in_flight(spans) <= CONCURRENCY
    assert closest_starts(spans) >= DELAY - ARRIVAL_JITTER


def test_a_crawl_and_a_revisit_of_one_host_without_shared_leases_exceed_it(tmp_path):
    with TimedServer() as server:
        crawl_and_revisit_at_once(server, None, tmp_path)
        spans = list(server.spans)
    assert len(spans) == (PAGES + 2) + (PAGES + 1)
    assert peak_in_flight(spans) > CONCURRENCY
    assert closest_starts(spans) < DELAY / 2


def test_two_crawls_of_one_host_without_shared_leases_exceed_it(tmp_path):
    with TimedServer() as server:
        crawl_twice_at_once(server, None, tmp_path)
        spans = list(server.spans)
    assert len(spans) == 2 * (PAGES + 2)
    assert peak_in_flight(spans) > CONCURRENCY
    assert closest_starts(spans) < DELAY / 2
