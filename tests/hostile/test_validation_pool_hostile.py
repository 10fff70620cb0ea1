"""Documents that make OWSLib slow, greedy or fatal, read in the validation pool: each ends as a miss naming
its reason, the worker is replaced where it had to be, and the documents after it are read as ever."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time

import pytest

from geoweb.detect.ogc.pool import (
    ValidationMemory,
    ValidationPool,
    ValidationTimeout,
    validation_pool,
)
from geoweb.settings import MB, Settings
from tests.unit.test_ogc_detector import WFS_DOC, WMS_DOC, FakeWeb, detect, response

URL = "http://h/ows"
MAX_BYTES = Settings().max_xml_bytes


def slow_wms(layers: int = 3000, codes: int = 1000) -> bytes:
    """A 180 KB WMS 1.1.1 that takes OWSLib over a second: its reader copies the root layer's SRS list into
    every layer."""
    srs = "".join(f"<SRS>EPSG:{3000 + i}</SRS>" for i in range(codes))
    named = "".join(f"<Layer><Name>l{i}</Name><Title>L {i}</Title></Layer>" for i in range(layers))
    return (
        '<WMT_MS_Capabilities version="1.1.1"><Service><Name>OGC:WMS</Name><Title>Slow</Title></Service>'
        f"<Capability><Request><GetCapabilities/></Request><Layer><Title>root</Title>{srs}{named}</Layer>"
        "</Capability></WMT_MS_Capabilities>"
    ).encode()


def big_wms(layers: int = 20_000) -> bytes:
    """A 2.5 MB WMS whose tree and OWSLib objects need far more than 200 MB of address space."""
    named = "".join(
        f'<Layer><Name>layer{i}</Name><Title>Layer {i}</Title><LatLonBoundingBox minx="-1" miny="-1" '
        f'maxx="1" maxy="1"/></Layer>'
        for i in range(layers)
    )
    return (
        '<WMT_MS_Capabilities version="1.1.1"><Service><Name>OGC:WMS</Name><Title>Big</Title></Service>'
        f"<Capability><Request><GetCapabilities/></Request><Layer><Title>root</Title>{named}</Layer>"
        "</Capability></WMT_MS_Capabilities>"
    ).encode()


@pytest.fixture
def pools():
    """ValidationPool(workers, timeout, memory_bytes) pools, closed at the end."""
    made: list[ValidationPool] = []

    def make(*args) -> ValidationPool:
        made.append(ValidationPool(*args))
        return made[-1]

    yield make
    for pool in made:
        pool.close()


def _worker(pool: ValidationPool) -> int:
    (pid,) = pool._executor._processes
    return pid


def test_a_document_over_the_cpu_limit_is_a_miss_and_its_worker_goes_on(pools):
    pool = pools(1, 0.3, 1024 * MB)

    async def run():
        await pool.read(WMS_DOC, URL, MAX_BYTES)
        before = _worker(pool)
        with pytest.raises(ValidationTimeout, match=r"over 0\.3 s of CPU"):
            await pool.read(slow_wms(), URL, MAX_BYTES)
        after = await pool.read(WMS_DOC, URL, MAX_BYTES)
        return before, _worker(pool), after

    before, worker, after = asyncio.run(run())
    assert worker == before and pool.replaced == 0
    assert [d.name for d in after.datasets] == ["roads"]


def test_a_worker_kept_from_the_cpu_longer_than_the_limit_still_reads_its_document(pools):
    # a niced worker on a busy machine: stopped for three times the limit, it reads its document once let go
    pool = pools(1, 0.5, 1024 * MB)

    async def run():
        await pool.read(WMS_DOC, URL, MAX_BYTES)
        pid = _worker(pool)
        os.kill(pid, signal.SIGSTOP)
        asyncio.get_running_loop().call_later(1.5, os.kill, pid, signal.SIGCONT)
        return await pool.read(WMS_DOC, URL, MAX_BYTES)

    assert [d.name for d in asyncio.run(run()).datasets] == ["roads"]
    assert pool.replaced == 0


def test_a_worker_stuck_for_ten_times_the_limit_is_replaced(pools, caplog):
    pool = pools(1, 0.2, 1024 * MB)

    async def run():
        await pool.read(WMS_DOC, URL, MAX_BYTES)
        os.kill(_worker(pool), signal.SIGSTOP)  # never let go: only the wall-time bound ends it
        started = time.monotonic()
        with pytest.raises(ValidationTimeout, match=r"over 2 s of wall time .* its worker was ended"):
            await pool.read(WMS_DOC, URL, MAX_BYTES)
        waited = time.monotonic() - started
        return waited, await pool.read(WMS_DOC, URL, MAX_BYTES)

    with caplog.at_level(logging.WARNING):
        waited, after = asyncio.run(run())
    assert 2.0 <= waited < 5.0
    assert pool.replaced == 1 and "validation pool replaced" in caplog.text
    assert after.title == "Maps"


def test_the_time_limit_counts_reading_not_waiting_for_a_worker(pools):
    # four documents of about a second each through one worker: each waits for the one before, none times out
    pool = pools(1, 2.5, 1024 * MB)

    async def run():
        return await asyncio.gather(*(pool.read(slow_wms(2000), URL, MAX_BYTES) for _ in range(4)))

    assert [len(r.datasets) for r in asyncio.run(run())] == [2000] * 4
    assert pool.replaced == 0


def test_a_document_over_the_memory_bound_is_a_miss_and_the_worker_goes_on(pools):
    pool = pools(1, 60, 200 * MB)

    async def run():
        with pytest.raises(ValidationMemory, match="validation_memory_bytes"):
            await pool.read(big_wms(), URL, MAX_BYTES)
        return await pool.read(WMS_DOC, URL, MAX_BYTES)

    assert asyncio.run(run()).title == "Maps"
    assert pool.replaced == 0


def test_a_worker_that_dies_is_replaced_and_its_document_read_again(pools):
    pool = pools(1, 60, 1024 * MB)

    async def run():
        reading = asyncio.ensure_future(pool.read(slow_wms(4000, 1500), URL, MAX_BYTES))  # seconds of OWSLib
        while pool._executor is None:  # the worker starting
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)  # the worker is inside OWSLib
        for process in pool._executor._processes.values():
            process.kill()
        return await reading

    assert len(asyncio.run(run()).datasets) == 4000
    assert pool.replaced == 1


def test_the_crawl_reports_the_miss_with_its_reason_and_finds_the_rest(caplog):
    settings = Settings(validation_timeout=0.3)
    endpoint = "http://h/slow/wms"
    web = FakeWeb({endpoint + "?service=WFS&request=GetCapabilities": WFS_DOC})
    ctx = web.context(types=("WMS", "WFS"), settings=settings)
    try:
        with caplog.at_level(logging.WARNING, logger="geoweb.detect.ogc"):
            found = detect(response(endpoint + "?service=WMS&request=GetCapabilities", slow_wms()), ctx)
        assert [(r.type, r.url) for r in found] == [("WFS", endpoint)]  # the probes went on
        assert ctx.stats["ogc/validation_timeout"] == 1
        assert "capabilities not read (validation_timeout): OWSLib took over 0.3 s" in caplog.text
    finally:
        validation_pool(settings).close()


def _read_in_a_daemonic_process(results) -> None:
    pool = ValidationPool(1, 30.0, 0)
    try:
        resource = asyncio.run(pool.read(WMS_DOC, URL, MAX_BYTES))
        results.put((pool.inline, resource.type, len(resource.datasets)))
    except Exception as exc:  # reported to the test, not lost with the process
        results.put(repr(exc))


def test_a_daemonic_process_reads_in_a_thread():
    """Celery's prefork children are daemonic, and may start no process: the pool reads in a thread there."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    results = context.Queue()
    child = context.Process(target=_read_in_a_daemonic_process, args=(results,), daemon=True)
    child.start()
    answer = results.get(timeout=60)
    child.join(30)
    assert answer[:2] == (True, "WMS") and answer[2] > 0, answer
