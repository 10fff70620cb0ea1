"""Shared host leases against the stack's real Redis (database 3, a key prefix per test): concurrency bound,
delay between starts, expiry of a dead holder's lease, release, acquirers in several processes, robots.txt
Crawl-delay shared by two fetchers, and an unreachable store failing the request."""

import asyncio
import multiprocessing
import secrets
import socket
import time

import pytest

from geoweb.errors import LeaseStoreUnavailable
from geoweb.fetch.leases import HostLeases
from tests.hostile.politeness import LEASES_URL, closest_starts, leases_client, peak_in_flight
from tests.hostile.servers import HostileServer, fetch_each, loopback_settings

ORIGIN = "http://example.org:80"


@pytest.fixture
def prefix():
    client = leases_client()
    prefix = f"test-leases-{secrets.token_hex(4)}:"
    yield prefix
    keys = list(client.scan_iter(match=prefix + "*"))
    if keys:
        client.delete(*keys)
    client.close()


def hold_leases(prefix, *, requests, concurrency, delay, hold, lease_seconds=30.0):
    """``requests`` acquirers at once, each holding its lease ``hold`` seconds; their (start, end) times."""

    async def run():
        leases = HostLeases(LEASES_URL, concurrency, lease_seconds, prefix=prefix)
        spans = []

        async def one():
            async with leases.hold(ORIGIN, delay):
                start = time.time()
                await asyncio.sleep(hold)
                spans.append((start, time.time()))

        try:
            await asyncio.gather(*(one() for _ in range(requests)))
        finally:
            await leases.close()
        return spans

    return asyncio.run(run())


def test_no_more_leases_than_the_concurrency(prefix):
    spans = hold_leases(prefix, requests=12, concurrency=3, delay=0.0, hold=0.05)
    assert len(spans) == 12
    assert peak_in_flight(spans) == 3


def test_starts_are_the_delay_apart(prefix):
    spans = hold_leases(prefix, requests=6, concurrency=6, delay=0.1, hold=0.0)
    assert closest_starts(spans) >= 0.1 - 0.003
    assert max(s for s, _ in spans) - min(s for s, _ in spans) < 5 * 0.1 + 0.3  # and not much more


def test_a_dead_holders_lease_expires(prefix):
    async def run():
        leases = HostLeases(LEASES_URL, 1, 0.3, prefix=prefix)
        try:
            await leases.acquire(ORIGIN, 0.0)  # never released, as by a killed worker
            began = time.monotonic()
            await leases.acquire(ORIGIN, 0.0)
            return time.monotonic() - began
        finally:
            await leases.close()

    waited = asyncio.run(run())
    assert 0.25 <= waited < 0.6


def test_release_frees_the_lease_at_once(prefix):
    async def run():
        leases = HostLeases(LEASES_URL, 1, 30.0, prefix=prefix)
        try:
            token = await leases.acquire(ORIGIN, 0.0)
            await leases.release(ORIGIN, token)
            began = time.monotonic()
            await asyncio.wait_for(leases.acquire(ORIGIN, 0.0), 1.0)
            return time.monotonic() - began
        finally:
            await leases.close()

    assert asyncio.run(run()) < 0.1


def _acquirer(prefix, queue):
    queue.put(hold_leases(prefix, requests=3, concurrency=2, delay=0.1, hold=0.15))


def test_acquirers_in_several_processes_share_the_bound(prefix):
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    processes = [context.Process(target=_acquirer, args=(prefix, queue)) for _ in range(4)]
    for process in processes:
        process.start()
    spans = [span for _ in processes for span in queue.get(timeout=60)]
    for process in processes:
        process.join(timeout=10)
    assert len(spans) == 12
    assert peak_in_flight(spans) == 2
    # starts are stamped by each process once it has its lease: allow its scheduling on a busy machine
    assert closest_starts(spans) >= 0.1 - 0.015


def test_two_fetchers_share_the_robots_crawl_delay(prefix):
    """Two fetchers (two processes' worth of slots) on one host: robots.txt's Crawl-delay holds across both."""
    with HostileServer(robots="User-agent: *\nCrawl-delay: 0.2\n") as server:
        settings = loopback_settings(server, host_leases=LEASES_URL)

        async def run():
            return await asyncio.gather(
                *(
                    asyncio.to_thread(fetch_each, settings, server.url("/ok"), server.url("/ok"))
                    for _ in range(2)
                )
            )

        results = asyncio.run(run())
        assert all(r.status == 200 for pair in results for r in pair)
        spans = [(s.time, s.time) for s in server.seen if s.path == "/ok"]
    assert len(spans) == 4
    assert closest_starts(spans) >= 0.2 - 0.005


def test_an_unreachable_lease_store_fails_the_request_unsent():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = f"redis://127.0.0.1:{sock.getsockname()[1]}/0"  # a port nothing listens on
    with HostileServer() as server:
        settings = loopback_settings(server, host_leases=closed, obey_robots=False, retries=0)
        (result,) = fetch_each(settings, server.url("/ok"))
        assert isinstance(result, LeaseStoreUnavailable)
        assert result.reason == "lease_store"
        assert server.paths() == []
