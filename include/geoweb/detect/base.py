"""The detector interface and the context a detector works in.

A detector looks at a response the crawl already fetched and returns the resources it proves are there.
It may send a few more requests through ``ctx.fetch`` (a GetCapabilities probe, an HTTP Range read), which
obey the same robots.txt, politeness and address rules and are counted per run.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import ClassVar

from geoweb.errors import GeowebError
from geoweb.fetch.response import Response
from geoweb.models import Resource
from geoweb.settings import Settings

log = logging.getLogger("geoweb.detect")

Fetch = Callable[..., Awaitable[Response]]


@dataclass
class DetectContext:
    """What detectors may use: the run's fetch, its settings, a run-wide 'first time' check, counters."""

    # fetch(url, *, headers=None, max_bytes=None, tail=False, sink=None) -> Response (Fetcher.get); raises
    # geoweb.errors.FetchError
    fetch: Fetch
    settings: Settings
    types: Collection[str]  # resource types wanted in this run
    first_time: Callable[[str], bool]  # True once per key per run (shared across workers in a fan-out)
    stats: Counter = field(default_factory=Counter)

    def wants(self, *types: str) -> bool:
        return any(t in self.types for t in types)

    def miss(self, detector: str, url: str, exc: GeowebError) -> list[Resource]:
        """Log and count why a response a detector accepted is not a resource; returns no resources."""
        log.info("%s: %s is not a resource (%s): %s", detector, url, exc.reason, exc)
        self.stats[f"{detector}/miss/{exc.reason}"] += 1
        return []


class Detector(ABC):
    """One family of resources (OGC services, KML, shapefiles...). Subclasses live one per module."""

    name: ClassVar[str]  # the short name the registry knows it by
    types: ClassVar[tuple[str, ...]]  # the resource types it can report

    @abstractmethod
    def accepts(self, response: Response) -> bool:
        """Cheap test on URL, headers and the first bytes: is this response worth ``detect``?"""

    @abstractmethod
    async def detect(self, response: Response, ctx: DetectContext) -> list[Resource]:
        """The resources this response proves. Raise nothing for ordinary misses; return []."""
