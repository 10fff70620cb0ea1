"""The in-memory crawl of ``geoweb crawl``: every level from the seeds in one process, no database, each
resource found written as a JSON line. With a state file (``pagestates``), a run carries over what has not
changed since the run before, and its lines list every resource the crawl holds, each with this run's
verdict (new, changed, unchanged, gone)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Collection, Iterable
from typing import Any, TextIO

from geoweb.crawl.factory import open_crawler
from geoweb.crawl.pagestates import PageStates
from geoweb.crawl.report import CrawlReport
from geoweb.models import Page
from geoweb.settings import Settings

log = logging.getLogger("geoweb.crawl")

TURN = 64  # datasets encoded between two turns of the event loop: a 2,000-layer service takes 0.1 s


async def crawl_to_jsonl(
    seeds: Iterable[str],
    settings: Settings,
    types: Collection[str],
    out: TextIO,
    states: PageStates | None = None,
) -> CrawlReport:
    """Crawl from ``seeds`` up to ``settings.max_level`` with the crawler of ``open_crawler``, writing the
    resources of each page to ``out`` as it is done; returns the report. A writer task encodes the lines
    beside the crawl, a batch of datasets at a time, so a large service never stalls the fetches. With
    ``states``, each line has its verdict, the resources held but not found follow the run, and the states
    are saved; their ``revisit_budget`` (None: all) bounds the known URLs requested, the others carried over
    unasked."""
    pages: asyncio.Queue[Page | None] = asyncio.Queue()
    found_keys: set[str] = set()

    async def writer() -> None:
        while (page := await pages.get()) is not None:
            for resource in page.resources:
                record = resource.to_record()
                if states is not None:
                    found_keys.add(record["url"] + "\n" + record["type"])
                    record["verdict"] = states.verdict(record)
                await write_line(out, record)
            out.flush()

    def found(page: Page) -> None:
        if written.done():
            written.result()  # the writer failed (a full disk, a closed pipe): the crawl ends with its error
        if page.resources:
            pages.put_nowait(page)

    written = asyncio.create_task(writer())
    try:
        async with open_crawler(settings, types=types, pages=states) as crawler:
            report = await crawler.crawl(seeds, on_page=found)
    finally:
        pages.put_nowait(None)
        await written
    if states is not None:
        for record, verdict in states.not_found_again(found_keys):
            await write_line(out, {**record, "verdict": verdict})
        out.flush()
        if report.requests and report.seconds > 0:  # a run that sent none keeps the pace of the one before
            states.pace = report.requests / report.seconds
        states.save()
        log.info(
            "the crawl's state holds %d pages; this run added %.0f MB to it, held besides max_memory_bytes",
            len(states.pages), states.held_bytes() / 2**20,
        )  # fmt: skip
    return report


async def write_line(out: TextIO, record: dict[str, Any]) -> None:
    """One record as a JSON line, its ``dataset_list`` (the last member) encoded ``TURN`` datasets at a time."""
    datasets = record.pop("dataset_list")
    out.write(json.dumps(record, ensure_ascii=False)[:-1] + ', "dataset_list": [')
    for start in range(0, len(datasets), TURN):
        batch = datasets[start : start + TURN]
        out.write(("" if start == 0 else ", ") + json.dumps(batch, ensure_ascii=False)[1:-1])
        await asyncio.sleep(0)
    out.write("]}\n")
