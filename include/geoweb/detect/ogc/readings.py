"""Identical capabilities documents are read once: what reading a document gave is kept by its SHA-256, so
the same bytes served at many URLs (a big WMS linked from every page of a portal, one document answering every
``service=``) cost one OWSLib reading, not one per URL.

``Readings.read`` answers a document already read from what it gave (a copy of the resource at the new URL,
or the same miss: a document over the time limit is not tried again in a worker), waits for a reading of the
same bytes under way, and reads anything else in the validation pool. The readings kept are bounded by their
number of datasets, the oldest used going first; they live as long as the process, and bytes that change are
other bytes.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
from collections import OrderedDict

from geoweb.detect.ogc.pool import ValidationPool, validation_pool
from geoweb.errors import GeowebError
from geoweb.models import Resource
from geoweb.settings import Settings

# Datasets of the readings kept: about 2 KB each, so some 100 MB at most.
KEPT_DATASETS = 50_000
# Bodies from this size on are hashed off the event loop (SHA-256 takes about 2 ms a megabyte).
HASH_IN_THREAD_BYTES = 1 << 20


class Readings:
    """The outcomes of the documents a process read, by their bytes' SHA-256, in front of its pool."""

    def __init__(self, pool: ValidationPool, kept_datasets: int = KEPT_DATASETS):
        self.pool, self.kept_datasets = pool, kept_datasets
        self._kept: OrderedDict[str, Resource | GeowebError] = OrderedDict()
        self._datasets = 0
        self._under_way: dict[str, asyncio.Future] = {}
        self.reused = 0  # readings answered without reading

    async def read(self, body: bytes, url: str, max_bytes: int) -> Resource:
        """``read_capabilities(body, url)``, read once per distinct body. Raises what the reading raised."""
        digest = await _digest(body)
        outcome = await self._outcome(digest, body, url, max_bytes)
        if isinstance(outcome, GeowebError):
            raise outcome
        resource = copy.deepcopy(outcome)  # its datasets are completed and tagged per URL afterwards
        resource.url = url
        return resource

    async def _outcome(self, digest: str, body: bytes, url: str, max_bytes: int) -> Resource | GeowebError:
        while True:
            if digest in self._kept:
                self.reused += 1
                self._kept.move_to_end(digest)
                return self._kept[digest]
            under_way = self._under_way.get(digest)
            if under_way is None:
                return await self._read(digest, body, url, max_bytes)
            await asyncio.wait([under_way])  # not its result: a reading cancelled is read again here

    async def _read(self, digest: str, body: bytes, url: str, max_bytes: int) -> Resource | GeowebError:
        done = self._under_way[digest] = asyncio.get_running_loop().create_future()
        try:
            outcome: Resource | GeowebError = await self.pool.read(body, url, max_bytes)
        except GeowebError as exc:
            outcome = exc
        finally:
            del self._under_way[digest]
            done.set_result(None)
        self._keep(digest, outcome)
        return outcome

    def _keep(self, digest: str, outcome: Resource | GeowebError) -> None:
        size = len(outcome.datasets) if isinstance(outcome, Resource) else 0
        if size > self.kept_datasets:
            return
        self._kept[digest] = outcome
        self._datasets += size
        while self._datasets > self.kept_datasets:
            _, gone = self._kept.popitem(last=False)
            self._datasets -= len(gone.datasets) if isinstance(gone, Resource) else 0


async def _digest(body: bytes) -> str:
    if len(body) < HASH_IN_THREAD_BYTES:
        return hashlib.sha256(body).hexdigest()
    return (await asyncio.to_thread(hashlib.sha256, body)).hexdigest()


_READINGS: dict[int, Readings] = {}


def readings(settings: Settings) -> Readings:
    """The process's readings in front of its validation pool for these settings."""
    pool = validation_pool(settings)
    if id(pool) not in _READINGS:
        _READINGS[id(pool)] = Readings(pool)
    return _READINGS[id(pool)]
