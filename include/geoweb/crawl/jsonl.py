"""The in-memory crawl of ``geoweb crawl``: every level from the seeds in one process, no database, each
resource found written as a JSON line."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from typing import TextIO

from geoweb.crawl.factory import open_crawler
from geoweb.crawl.report import CrawlReport
from geoweb.models import Page
from geoweb.settings import Settings


async def crawl_to_jsonl(
    seeds: Iterable[str], settings: Settings, types: Collection[str], out: TextIO
) -> CrawlReport:
    """Crawl from ``seeds`` up to ``settings.max_level`` with the crawler of ``open_crawler``, writing the
    resources of each page to ``out`` as it is done; returns the report."""

    def write(page: Page) -> None:
        for resource in page.resources:
            out.write(json.dumps(resource.to_record(), ensure_ascii=False) + "\n")
        if page.resources:
            out.flush()

    async with open_crawler(settings, types=types) as crawler:
        return await crawler.crawl(seeds, on_page=write)
