"""Bodies admitted under max_memory_bytes: reserved before they are read, refused with a logged reason when
they cannot fit, waiting while reads in flight hold the room; a sink's body is never kept."""

import asyncio
import logging
import os

import pytest
from aiohttp import web

from geoweb.fetch import Fetcher
from geoweb.fetch.memory import GRANULE, MemoryBudget, OverMemoryBudget, resident_bytes
from geoweb.settings import MB, Settings
from tests.data.files.make_fixtures import serve


class Resident:
    """A process's resident memory as the test sets it."""

    def __init__(self, value: int = 100 * MB):
        self.value = value

    def __call__(self) -> int:
        return self.value


def test_resident_bytes_reads_this_process():
    assert 10 * MB < resident_bytes() < 4096 * MB


def test_the_crawls_memory_is_counted_above_the_baseline(caplog):
    resident = Resident(300 * MB)  # a process holding Airflow or a test session before the crawl
    budget = MemoryBudget(50 * MB, resident=resident)

    async def run():
        with await budget.reserve("http://h/a", 40 * MB) as reservation:
            assert budget.in_flight == 40 * MB
            reservation.cover(45 * MB)  # grown past what was reserved: a granule more, or what it needs
            assert budget.in_flight == 45 * MB
            resident.value += 10 * MB  # a detector holding a body meanwhile
            with pytest.raises(OverMemoryBudget):
                reservation.cover(50 * MB)
        assert budget.in_flight == 0
        with pytest.raises(OverMemoryBudget) as refused:
            await budget.reserve("http://h/b", 41 * MB)  # 10 held + 41: no read in flight to wait for
        return refused.value

    with caplog.at_level(logging.WARNING, "geoweb.fetch"):
        refused = asyncio.run(run())
    assert refused.reason == "memory_budget"
    assert "http://h/b: body of 41.0 MB not read (no room left): the crawl holds 10.0 MB" in caplog.text
    assert budget.stats["fetch/memory_refused"] == 2


def test_what_the_crawl_holds_besides_the_bound_is_not_counted():
    resident, state = Resident(300 * MB), Resident(0)
    budget = MemoryBudget(50 * MB, resident=resident, held=state)
    resident.value += 200 * MB  # a state file's pages read this run, 180 MB of them
    state.value = 180 * MB

    async def run():
        with await budget.reserve("http://h/a", 25 * MB):  # 20 MB of the crawl's own, and the body
            pass
        state.value = 0  # were the state counted, nothing would fit
        with pytest.raises(OverMemoryBudget):
            await budget.reserve("http://h/b", 25 * MB)

    asyncio.run(run())


def test_memory_handed_back_below_the_baseline_makes_no_room_for_a_body_over_the_bound():
    resident = Resident(300 * MB)
    budget = MemoryBudget(1 * MB, resident=resident)
    resident.value -= 50 * MB  # what the process held before the crawl, freed and handed back

    async def run():
        with pytest.raises(OverMemoryBudget):
            await budget.reserve("http://h/big.kml", 2 * MB)
        with await budget.reserve("http://h/small.kml", MB // 2):
            assert budget.in_flight == MB // 2

    asyncio.run(run())
    assert budget.stats["fetch/memory_refused"] == 1


def test_a_body_waits_for_the_reads_in_flight_then_is_admitted():
    budget = MemoryBudget(10 * MB, resident=Resident())
    order = []

    async def read(name: str, size: int, seconds: float):
        with await budget.reserve(name, size):
            order.append(f"{name} starts")
            await asyncio.sleep(seconds)
            order.append(f"{name} ends")

    async def run():
        first = asyncio.create_task(read("a", 6 * MB, 0.1))
        await asyncio.sleep(0)
        await asyncio.gather(first, read("b", 6 * MB, 0), read("c", 3 * MB, 0))

    asyncio.run(run())
    # c fits beside a at once; b waits for a's release
    assert order == ["a starts", "c starts", "c ends", "a ends", "b starts", "b ends"]
    assert budget.in_flight == 0 and budget.stats["fetch/memory_waits"] == 1


def test_a_body_waiting_too_long_is_refused():
    budget = MemoryBudget(10 * MB, resident=Resident(), max_wait=0.05)

    async def run():
        with (
            await budget.reserve("a", 8 * MB),
            pytest.raises(OverMemoryBudget, match=r"no room within 0\.05 s"),
        ):
            await budget.reserve("b", 8 * MB)

    asyncio.run(run())


BIG = os.urandom(12 * MB)


async def declared(request):
    return web.Response(body=BIG, content_type="application/octet-stream")


async def chunked(request):
    answer = web.StreamResponse()
    answer.enable_chunked_encoding()
    await answer.prepare(request)
    for start in range(0, len(BIG), 256 * 1024):
        await answer.write(BIG[start : start + 256 * 1024])
    return answer


class Kept:
    """A sink that counts what it is given."""

    def __init__(self):
        self.resets, self.bytes = 0, 0

    def reset(self):
        self.resets += 1
        self.bytes = 0

    def feed(self, chunk):
        self.bytes += len(chunk)


def test_the_fetcher_refuses_a_body_that_cannot_fit_and_reads_a_sinks(caplog):
    async def run():
        async with serve({"/declared": declared, "/chunked": chunked}) as base:
            settings = Settings(
                allowed_hosts=frozenset({base.removeprefix("http://")}), obey_robots=False,
                max_body_bytes=32 * MB, max_memory_bytes=8 * MB,
            )  # fmt: skip
            async with Fetcher(settings) as fetcher:
                outcomes = []
                for path in ("/declared", "/chunked"):
                    try:
                        outcomes.append(await fetcher.get(base + path))
                    except OverMemoryBudget as exc:
                        outcomes.append(exc.reason)
                sink = Kept()
                streamed = await fetcher.get(base + "/chunked", sink=sink)
                return outcomes, streamed, sink, fetcher.stats, fetcher._memory.in_flight

    with caplog.at_level(logging.WARNING, "geoweb.fetch"):
        outcomes, streamed, sink, stats, in_flight = asyncio.run(run())
    assert outcomes == ["memory_budget", "memory_budget"]  # before reading it, and as it grew past the room
    assert "/declared: body of 12.0 MB not read (no room left)" in caplog.text
    assert "/chunked: body of " in caplog.text and "(it grew past the room left)" in caplog.text
    assert (streamed.status, streamed.body, streamed.complete) == (200, b"", True)
    assert (sink.resets, sink.bytes) == (1, len(BIG))
    assert stats["fetch/memory_refused"] == 2 and in_flight == 0
    assert GRANULE == MB


def test_a_sink_that_has_enough_ends_the_read():
    from geoweb.detect.rangezip import Head

    async def run():
        async with serve({"/declared": declared}) as base:
            settings = Settings(allowed_hosts=frozenset({base.removeprefix("http://")}), obey_robots=False)
            async with Fetcher(settings) as fetcher:
                head = Head(1000)
                answer = await fetcher.get(base + "/declared", max_bytes=64 * MB, sink=head)
                return answer, head, fetcher.stats

    answer, head, stats = asyncio.run(run())
    assert (answer.status, answer.body, answer.complete, head.data) == (200, b"", False, BIG[:1000])
    assert stats["fetch/bytes"] == 0


def test_waiting_reserves_woken_together_hand_memory_back_once(monkeypatch):
    """A crawl held at its bound: each release wakes every waiting reserve, and a hand-back of a large heap
    takes milliseconds; one per wake-up made a 2,000,000-page crawl spend its CPU in them."""
    reclaims = []
    monkeypatch.setattr("geoweb.fetch.memory._reclaim", reclaims.append)
    budget = MemoryBudget(10 * MB, resident=Resident())

    async def run():
        held = await budget.reserve("http://h/held", 8 * MB)
        waiting = [asyncio.create_task(budget.reserve(f"http://h/{i}", 4 * MB)) for i in range(50)]
        await asyncio.sleep(0.01)
        asked = len(reclaims)
        budget._release(1 * MB)  # room for none of them: all wake, and all wait again
        held.nbytes -= 1 * MB
        await asyncio.sleep(0.01)
        woken_reclaims = len(reclaims) - asked
        held.release()  # room for two of them, whichever wake first
        await asyncio.sleep(0.01)
        admitted = [task.result() for task in waiting if task.done()]
        for task in waiting:
            task.cancel()
        return asked, woken_reclaims, admitted

    asked, woken_reclaims, admitted = asyncio.run(run())
    assert asked <= 1  # the first waiter's, the others within RECLAIM_EVERY
    assert woken_reclaims <= 1
    assert [r.nbytes for r in admitted] == [4 * MB, 4 * MB]
