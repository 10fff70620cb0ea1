"""The crawl's long steps give the event loop turns: tagging a large service's 2,001 layers with concepts and
writing their JSON line run in batches, and a large level is queued a turn at a time, with the loop's other
tasks (fetches, timers) between them."""

from __future__ import annotations

import asyncio
import io
import json
from collections import Counter

from geoweb.crawl.engine import READ_TURN, Crawler
from geoweb.crawl.jsonl import TURN, write_line
from geoweb.fetch import Response
from geoweb.models import Dataset, Link, Resource
from geoweb.semantic import tag_datasets, tag_datasets_in_turns
from geoweb.settings import Settings

LAYERS = 2001
THRESHOLD = Settings().concept_lcs_threshold


def large_service() -> Resource:
    names = ("rivers", "roads", "lakes", "buildings", "land use", "railway stations", "contours")
    datasets = [
        Dataset(f"layer_{i}", f"{names[i % len(names)]} {i}", (i % 170 - 85.0, -10.0, i % 170 - 84.0, 10.0),
                keywords=["hydrography" if i % 2 else "transport", "ÅÄÖ \"quoted\", comma"])
        for i in range(LAYERS)
    ]  # fmt: skip
    return Resource("http://maps.example/wms", "WMS", "1.3.0", "Big", datasets=datasets, level=1)


async def turns_during(step) -> int:
    """How many times a task that only yields ran while ``step`` ran."""
    ran = 0
    done = False

    async def ticker() -> None:
        nonlocal ran
        while not done:
            ran += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    before = ran
    await step
    done = True
    await task
    return ran - before


def test_tagging_a_large_service_in_turns_tags_as_in_one_go_and_lets_the_loop_run():
    at_once, in_turns = large_service(), large_service()
    tag_datasets(at_once.datasets, THRESHOLD)
    turns = asyncio.run(turns_during(tag_datasets_in_turns(in_turns.datasets, THRESHOLD)))
    assert [d.concepts for d in in_turns.datasets] == [d.concepts for d in at_once.datasets]
    assert [d.extra for d in in_turns.datasets] == [d.extra for d in at_once.datasets]
    assert any(d.concepts for d in in_turns.datasets)
    assert turns >= LAYERS // TURN


def test_a_large_json_line_is_written_in_turns_and_reads_back_as_the_record():
    record = large_service().to_record()
    out = io.StringIO()
    turns = asyncio.run(turns_during(write_line(out, dict(record))))
    line = out.getvalue()
    assert line.endswith("}\n") and line.count("\n") == 1
    assert json.loads(line) == json.loads(json.dumps(record))
    assert turns >= LAYERS // TURN


def test_a_resource_without_datasets_is_one_plain_line():
    record = Resource("http://example.org/a.kml", "KML").to_record()
    out = io.StringIO()
    asyncio.run(write_line(out, dict(record)))
    assert json.loads(out.getvalue()) == record and record["dataset_list"] == []


def test_a_large_level_is_queued_a_turn_at_a_time_and_every_link_fetched():
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    read_at: list[int] = []  # the ticker's count when each link was read

    def source():
        for i in range(5000):
            read_at.append(ticks)
            yield Link(f"http://h{i % 5}.example/{i}", None)

    async def fetch(url, **kwargs):
        await asyncio.sleep(0)
        return Response(url, url, 200, {"content-type": "text/plain"}, b"")

    async def level() -> list:
        pages: list = []
        crawler = Crawler(fetch, [], settings=Settings(queued_links=10_000), seen=set())
        task = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        await crawler.run_level(source(), 0, pages.append)
        task.cancel()
        return pages

    pages = asyncio.run(level())
    assert sorted(p.url for p in pages) == sorted(f"http://h{i % 5}.example/{i}" for i in range(5000))
    per_turn = Counter(read_at)
    assert max(per_turn.values()) <= READ_TURN and len(per_turn) >= 5000 // READ_TURN
