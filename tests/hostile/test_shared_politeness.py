"""Politeness across processes: two `geoweb crawl` processes of one host at once, as two DAGs' tasks would be,
against a server that logs when each request arrives and ends. With the shared leases the host never sees
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

from tests.hostile.politeness import LEASES_URL, closest_starts, leases_client, peak_in_flight
from tests.hostile.servers import PagesServer

PAGES = 24
CONCURRENCY = 2
DELAY = 0.05
ANSWER_SECONDS = 0.08  # each answer takes longer than the delay, so requests overlap when allowed to
# Starts are granted at the clients and stamped on arrival here: a new connection on a busy machine arrives
# a few ms later than a reused one.
ARRIVAL_JITTER = 0.01


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
    geoweb = Path(sys.executable).with_name("geoweb")
    env = {k: v for k, v in os.environ.items() if k != "GEOWEB_HOST_LEASES"}
    if leases:
        env["GEOWEB_HOST_LEASES"] = leases
    command = [str(geoweb), "crawl", "--seed", server.url("/"), "--allow-host", server.hostport,
               "--max-level", "1", "--per-host-concurrency", str(CONCURRENCY), "--delay", str(DELAY)]  # fmt: skip
    crawls = [
        subprocess.Popen([*command, "-o", str(tmp_path / f"crawl{i}.jsonl")], env=env, stderr=subprocess.PIPE)
        for i in range(2)
    ]
    for crawl in crawls:
        _, stderr = crawl.communicate(timeout=120)
        assert crawl.returncode == 0, stderr.decode()[-2000:]


def test_two_crawls_of_one_host_keep_its_politeness_with_shared_leases(tmp_path):
    leases_client().close()
    with TimedServer() as server:
        crawl_twice_at_once(server, LEASES_URL, tmp_path)
        spans = list(server.spans)
    assert len(spans) == 2 * (PAGES + 2)  # robots.txt, the seed and its pages, by each crawl
    assert peak_in_flight(spans) <= CONCURRENCY
    assert closest_starts(spans) >= DELAY - ARRIVAL_JITTER


def test_two_crawls_of_one_host_without_shared_leases_exceed_it(tmp_path):
    with TimedServer() as server:
        crawl_twice_at_once(server, None, tmp_path)
        spans = list(server.spans)
    assert len(spans) == 2 * (PAGES + 2)
    assert peak_in_flight(spans) > CONCURRENCY
    assert closest_starts(spans) < DELAY / 2
