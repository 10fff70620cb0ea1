"""Admission of response bodies under the process's memory bound (``max_memory_bytes``).

An address-space limit (RLIMIT_AS) is no bound for a Python crawl: threads, GDAL and the allocator reserve
far more address space than they touch, and hitting it raises MemoryError anywhere. The bound is enforced
where memory comes in instead, the bodies read: before a body is read, its size (the declared length, else a
first megabyte) is reserved, and as it grows past that, a megabyte more at a time. A reservation is admitted
while the crawl's memory, the process's resident memory (measured, so bodies held by detectors count) above
what it held when the budget was made (the interpreter and its libraries; in a DAG task, Airflow's too) and
above what the crawl keeps by design besides the bound (``held``: a state file's pages read in the run),
plus the bodies being read, fits under the bound (memory freed but kept by the allocator is handed back
first). Otherwise it waits for the reads in flight to end, and a body that cannot fit even when none is left,
or not within ``MAX_WAIT`` seconds, is refused: ``OverMemoryBudget``, logged with its size.
Readers never wait once their body started (a body that outgrows the room left is refused there), so no two
reads wait on each other.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import logging
import os
import time
from collections import Counter
from collections.abc import Callable

from geoweb.errors import FetchError

log = logging.getLogger("geoweb.fetch")

GRANULE = 1024 * 1024  # reserved at a time for a body of unknown length
MAX_WAIT = 20.0  # seconds a body waits for room before it is refused
COLLECT_EVERY = 1.0  # seconds between two garbage collections before a hand-back of freed memory
# seconds between two hand-backs: a release wakes every waiting reserve, and each hand-back of a large heap
# takes milliseconds, so a crawl held near its bound spent its CPU in them (142 pages/s at 2,000,000 pages)
RECLAIM_EVERY = 0.05
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
try:
    _LIBC = ctypes.CDLL("libc.so.6")
    _LIBC.malloc_trim  # noqa: B018 - glibc's only
except (OSError, AttributeError):
    _LIBC = None


class OverMemoryBudget(FetchError):
    """Raised by the fetcher when a body does not fit in what is left of ``max_memory_bytes``: the URL is
    deferred (a later run reads it), never read past the bound."""

    reason = "memory_budget"
    user_msg = "The answer did not fit in the crawl's memory bound"


def _reclaim(collect: bool) -> None:
    """Hand memory freed but kept by glibc's allocator back to the system (nothing elsewhere), after
    collecting garbage cycles when ``collect``."""
    if collect:
        gc.collect()
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def resident_bytes() -> int:
    """This process's resident set size, from /proc (0 where there is none: only the reads are counted)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


class MemoryBudget:
    """Bytes of bodies being read (``in_flight``), admitted against ``limit`` with the process's resident
    memory above ``baseline`` (its resident memory when made) and above what ``held`` says the crawl keeps
    besides the bound (a crawl's state). One per fetcher, used from one event loop."""

    def __init__(
        self,
        limit: int,
        *,
        resident: Callable[[], int] = resident_bytes,
        held: Callable[[], int] = lambda: 0,
        max_wait: float = MAX_WAIT,
        stats: Counter | None = None,
    ):
        self.limit = limit
        self.in_flight = 0
        self._resident = resident
        self._held = held
        self.baseline = resident()
        self._max_wait = max_wait
        self._waiting: set[asyncio.Future] = set()  # reserves waiting for a release
        self._collected_at = self._reclaimed_at = float("-inf")
        self.stats = stats if stats is not None else Counter()

    def _fits(self, nbytes: int, force: bool = False) -> bool:
        """Whether ``nbytes`` more fit; before saying no, memory freed but kept by the allocator (a body
        read and dropped) is handed back to the system and measured again, at most every RECLAIM_EVERY
        seconds unless ``force`` (before a refusal). Cycles are collected first at most once a second: a
        full collection can take a tenth of a second of the event loop."""
        if self._used() + nbytes <= self.limit:
            return True
        now = time.monotonic()
        if not force and now - self._reclaimed_at < RECLAIM_EVERY:
            return False
        self._reclaimed_at = now
        collect = now - self._collected_at >= COLLECT_EVERY
        if collect:
            self._collected_at = now
        _reclaim(collect)
        return self._used() + nbytes <= self.limit

    def _used(self) -> int:
        """The crawl's memory: resident above the baseline and what is held besides the bound (none below
        them: memory the process held before the crawl and handed back is no room for a body over the
        bound), plus the bodies being read."""
        return self._holding() + self.in_flight

    def _holding(self) -> int:
        return max(0, self._resident() - self.baseline - self._held())

    def _refuse(self, url: str, nbytes: int, why: str) -> OverMemoryBudget:
        self.stats["fetch/memory_refused"] += 1
        log.warning(
            "%s: body of %.1f MB not read (%s): the crawl holds %.1f MB and reads %.1f MB, bound %.0f MB "
            "(max_memory_bytes)", url, nbytes / 2**20, why, self._holding() / 2**20,
            self.in_flight / 2**20, self.limit / 2**20,
        )  # fmt: skip
        return OverMemoryBudget(f"a body of {nbytes} bytes does not fit under max_memory_bytes ({why})")

    async def reserve(self, url: str, nbytes: int) -> Reservation:
        """Reserve ``nbytes`` for the body of ``url``, waiting while the reads in flight leave no room."""
        if not self._fits(nbytes):
            self.stats["fetch/memory_waits"] += 1
            try:
                async with asyncio.timeout(self._max_wait):
                    # with no read in flight, no end of one can make room: a hand-back is the last chance
                    while not self._fits(nbytes, force=self.in_flight == 0):
                        if self.in_flight == 0:
                            raise self._refuse(url, nbytes, "no room left")
                        released = asyncio.get_running_loop().create_future()
                        self._waiting.add(released)
                        try:
                            await released
                        finally:
                            self._waiting.discard(released)
            except TimeoutError:
                raise self._refuse(url, nbytes, f"no room within {self._max_wait:g} s") from None
        self.in_flight += nbytes
        return Reservation(self, url, nbytes)

    def _release(self, nbytes: int) -> None:
        self.in_flight -= nbytes
        for released in self._waiting:
            if not released.done():
                released.set_result(None)


class Reservation:
    """The bytes reserved for one body; ``cover`` grows it as the body does, ``release`` ends it."""

    def __init__(self, budget: MemoryBudget, url: str, nbytes: int):
        self.budget, self.url, self.nbytes = budget, url, nbytes

    def cover(self, size: int) -> None:
        """Make the reservation cover a body of ``size`` bytes, a granule at a time; raises OverMemoryBudget
        when there is no room for it (never waits: this body's bytes are held meanwhile)."""
        if size <= self.nbytes:
            return
        more = max(GRANULE, size - self.nbytes)
        if not self.budget._fits(more, force=True):
            raise self.budget._refuse(self.url, size, "it grew past the room left")
        self.budget.in_flight += more
        self.nbytes += more

    def release(self) -> None:
        if self.nbytes:
            self.budget._release(self.nbytes)
            self.nbytes = 0

    def __enter__(self) -> Reservation:
        return self

    def __exit__(self, *exc_info) -> None:
        self.release()
