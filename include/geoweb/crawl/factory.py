"""The one place a crawler is assembled: an open fetcher, the registered detectors, the URL filters and an
in-process Bloom pre-filter of the URLs seen, built from ``Settings``, with one stats counter for all."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Collection
from contextlib import asynccontextmanager

from geoweb.crawl.engine import Crawler
from geoweb.crawl.pagestates import PageStates
from geoweb.dedup import BloomFilter
from geoweb.detect import load_detectors
from geoweb.fetch.fetcher import Fetcher
from geoweb.models import ALL_TYPES
from geoweb.semantic import default_matcher
from geoweb.settings import Settings


@asynccontextmanager
async def open_crawler(
    settings: Settings,
    *,
    types: Collection[str] = ALL_TYPES,
    stats: Counter | None = None,
    pages: PageStates | None = None,
    started_at: float | None = None,
) -> AsyncIterator[Crawler]:
    """A Crawler of ``types`` over a Fetcher open for the block, both counting into ``stats`` (a new Counter
    by default: ``crawler.stats``). Its ``seen`` is a Bloom filter sized by ``settings.expected_urls`` and
    ``settings.bloom_error_rate``. What ``pages`` grows by in the run is held besides ``max_memory_bytes``
    (``PageStates.held_bytes``), not counted against it. ``started_at``: the run's start, which its time
    budget counts from (default: now)."""
    stats = Counter() if stats is None else stats
    default_matcher(settings.concept_lcs_threshold)  # built before the first fetch, not mid-crawl: 0.1 s
    held = pages.held_bytes if pages is not None else (lambda: 0)
    async with Fetcher(settings, stats=stats, held=held) as fetcher:
        yield Crawler(
            fetcher.get,
            load_detectors(),
            settings=settings,
            seen=BloomFilter(settings.expected_urls, settings.bloom_error_rate),
            types=types,
            stats=stats,
            pages=pages,
            started_at=started_at,
        )
