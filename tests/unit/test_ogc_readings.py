"""Identical capabilities documents are read once, wherever they are served: the outcome of a reading is kept
by the bytes' SHA-256, given again (as a copy at the new URL, or the same miss), shared with readings of the
same bytes under way, and bounded by the datasets it holds."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from geoweb.detect.ogc import read_capabilities
from geoweb.detect.ogc.pool import ValidationTimeout
from geoweb.detect.ogc.readings import Readings, readings
from geoweb.settings import Settings
from tests.unit.test_ogc_detector import FakeWeb, detect, response

WMS = (Path(__file__).resolve().parents[1] / "data" / "capabilities" / "mapserver_wms_130.xml").read_bytes()
WFS = (Path(__file__).resolve().parents[1] / "data" / "capabilities" / "mapserver_wfs_200.xml").read_bytes()


class CountingPool:
    """Reads as the validation pool does, in this process, counting the readings; ``pause`` holds each one
    until set, so that several can be under way at once."""

    def __init__(self):
        self.readings: list[str] = []
        self.pause: asyncio.Event | None = None
        self.fail_with: Exception | None = None

    async def read(self, body: bytes, url: str, max_bytes: int):
        self.readings.append(url)
        if self.pause is not None:
            await self.pause.wait()
        if self.fail_with is not None:
            raise self.fail_with
        return read_capabilities(body, url, max_bytes=max_bytes)


def test_the_same_bytes_at_thirty_urls_are_read_once_each_resource_at_its_url():
    pool = CountingPool()
    cache = Readings(pool)

    async def crawl():
        return [await cache.read(WMS, f"http://h{i}.example/wms", 10**8) for i in range(30)]

    found = asyncio.run(crawl())
    assert len(pool.readings) == 1 and cache.reused == 29
    assert [r.url for r in found] == [f"http://h{i}.example/wms" for i in range(30)]
    assert {(r.title, len(r.datasets), r.conformance) for r in found} == {
        ("Regions of the test web", 4, "conformant")
    }
    found[0].datasets[0].extra["properties"] = ["a"]  # completing one resource leaves the others as read
    assert all("properties" not in r.datasets[0].extra for r in found[1:])


def test_readings_of_the_same_bytes_under_way_wait_for_the_first():
    pool = CountingPool()
    cache = Readings(pool)

    async def crawl():
        pool.pause = asyncio.Event()
        tasks = [asyncio.create_task(cache.read(WMS, f"http://h{i}.example/wms", 10**8)) for i in range(10)]
        tasks.append(asyncio.create_task(cache.read(WFS, "http://other.example/wfs", 10**8)))
        await asyncio.sleep(0.01)
        assert sorted(pool.readings) == ["http://h0.example/wms", "http://other.example/wfs"]
        pool.pause.set()
        return await asyncio.gather(*tasks)

    found = asyncio.run(crawl())
    assert [r.type for r in found] == ["WMS"] * 10 + ["WFS"]
    assert len(pool.readings) == 2


def test_a_miss_is_given_again_without_a_reading():
    pool = CountingPool()
    cache = Readings(pool)
    pool.fail_with = ValidationTimeout("OWSLib took over 10 s (validation_timeout); its worker was ended")

    async def twice():
        for url in ("http://a.example/wms", "http://b.example/wms"):
            with pytest.raises(ValidationTimeout, match="took over 10 s"):
                await cache.read(WMS, url, 10**8)

    asyncio.run(twice())
    assert pool.readings == ["http://a.example/wms"]  # a slow document ends one worker, not one per URL


def test_a_reading_cancelled_is_read_again_by_who_waited_for_it():
    pool = CountingPool()
    cache = Readings(pool)

    async def crawl():
        pool.pause = asyncio.Event()
        first = asyncio.create_task(cache.read(WMS, "http://a.example/wms", 10**8))
        second = asyncio.create_task(cache.read(WMS, "http://b.example/wms", 10**8))
        await asyncio.sleep(0.01)
        first.cancel()
        await asyncio.sleep(0.01)
        pool.pause.set()
        return await second

    assert asyncio.run(crawl()).url == "http://b.example/wms"
    assert pool.readings == ["http://a.example/wms", "http://b.example/wms"]


def test_the_readings_kept_are_bounded_by_their_datasets_the_oldest_used_going_first():
    pool = CountingPool()
    cache = Readings(pool, kept_datasets=7)  # the WMS has 4 datasets, the WFS 3

    async def crawl():
        await cache.read(WMS, "http://a.example/wms", 10**8)
        await cache.read(WFS, "http://a.example/wfs", 10**8)
        await cache.read(WMS, "http://b.example/wms", 10**8)  # kept: used last
        await cache.read(WMS + b" ", "http://c.example/wms", 10**8)  # other bytes: the WFS goes
        await cache.read(WFS, "http://b.example/wfs", 10**8)

    asyncio.run(crawl())
    assert pool.readings == ["http://a.example/wms", "http://a.example/wfs", "http://c.example/wms",
                             "http://b.example/wfs"]  # fmt: skip


def test_the_crawl_s_detector_reads_a_document_linked_many_times_once():
    settings = Settings(validation_workers=1)
    before = readings(settings).reused
    body = WMS.replace(b"Regions of the test web", b"Regions linked from every page")
    found = [
        detect(response(f"http://portal{i}.example/caps.xml", body), FakeWeb().context(settings=settings))
        for i in range(5)
    ]
    assert [[r.url for r in f] for f in found] == [[f"http://portal{i}.example/caps.xml"] for i in range(5)]
    assert readings(settings).reused - before == 4
