"""Per-origin slots: concurrency per origin, delay between starts, crawl-delay, and forgetting idle slots."""

import asyncio
import itertools
import time

from geoweb.fetch.slots import Slots


def run_requests(slots: Slots, origins: list[str], seconds: float = 0.02):
    """Hold each origin's slot for ``seconds``; the start times and the peak number in flight per origin."""
    in_flight = dict.fromkeys(origins, 0)
    peak = dict.fromkeys(origins, 0)
    starts: list[tuple[str, float]] = []

    async def request(origin: str) -> None:
        async with slots.get(origin):
            starts.append((origin, time.monotonic()))
            in_flight[origin] += 1
            peak[origin] = max(peak[origin], in_flight[origin])
            await asyncio.sleep(seconds)
            in_flight[origin] -= 1

    async def run():
        await asyncio.gather(*(request(o) for o in origins))

    began = time.monotonic()
    asyncio.run(run())
    return starts, peak, time.monotonic() - began


def test_concurrency_is_capped_per_origin_not_globally():
    starts, peak, elapsed = run_requests(Slots(2, 0.0), ["a"] * 6 + ["b"] * 6, seconds=0.05)
    assert peak == {"a": 2, "b": 2}
    assert len(starts) == 12
    assert 0.14 < elapsed < 0.5  # three rounds of 2 per origin, both origins side by side


def test_delay_spaces_request_starts_even_with_free_concurrency():
    starts, _, _ = run_requests(Slots(4, 0.1), ["a"] * 3 + ["b"])
    times = [t for origin, t in starts if origin == "a"]
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    assert all(gap >= 0.095 for gap in gaps), gaps
    # the other origin did not wait for the first one
    assert next(t for origin, t in starts if origin == "b") - times[0] < 0.05


def test_delay_holds_when_a_busy_event_loop_wakes_every_sleeper_at_once():
    slots = Slots(4, 0.1)
    starts: list[float] = []

    async def request() -> None:
        async with slots.get("a"):
            starts.append(time.monotonic())

    async def run():
        tasks = [asyncio.create_task(request()) for _ in range(3)]
        await asyncio.sleep(0.01)  # the first has started, the others sleep towards their turn
        time.sleep(0.3)  # CPU-bound work elsewhere blocks the loop past every planned start
        await asyncio.gather(*tasks)

    asyncio.run(run())
    gaps = [later - earlier for earlier, later in itertools.pairwise(starts)]
    assert len(starts) == 3 and all(gap >= 0.095 for gap in gaps), gaps


def test_crawl_delay_only_lengthens_the_configured_delay():
    slots = Slots(1, 0.5)
    assert slots.get("a", 2.0).delay == 2.0
    assert slots.get("b", 0.1).delay == 0.5
    assert slots.get("c").delay == 0.5


def test_a_request_cancelled_during_its_delay_frees_the_slot():
    slots = Slots(1, 0.2)

    async def run():
        async with slots.get("a"):
            pass
        waiting = asyncio.ensure_future(slots.get("a").__aenter__())
        await asyncio.sleep(0.01)
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
        assert slots.get("a").active == 0
        began = time.monotonic()
        await asyncio.wait_for(slots.get("a").__aenter__(), 1.0)  # not deadlocked by the cancelled one
        assert time.monotonic() - began < 0.25  # and its reserved start was given back

    asyncio.run(run())


def test_idle_slots_are_forgotten_when_the_table_grows_busy_ones_kept():
    slots = Slots(1, 0.0, purge_at=4)

    async def run():
        busy = slots.get("busy")
        async with busy:
            for i in range(3):
                async with slots.get(f"idle{i}"):
                    pass
            assert len(slots) == 4
            slots.get("new")  # the table is full: idle slots go
            assert len(slots) == 2
            assert slots.get("busy") is busy

    asyncio.run(run())


def test_a_slot_inside_its_delay_is_not_forgotten():
    slots = Slots(1, 10.0, purge_at=1)

    async def run():
        async with slots.get("a"):
            pass
        slots.get("b")
        assert len(slots) == 2  # forgetting "a" would let the next request skip its delay

    asyncio.run(run())
