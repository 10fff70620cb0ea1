"""Per-origin politeness, like Scrapy's downloader slots: bounded concurrency and a delay between starts."""

from __future__ import annotations

import asyncio
import time


class Slot:
    """One origin: at most ``concurrency`` requests in flight and ``delay`` seconds between two starts.

    Use as ``async with slot:`` around one request.
    """

    __slots__ = ("_semaphore", "active", "delay", "last_start")

    def __init__(self, concurrency: int, delay: float):
        self._semaphore = asyncio.Semaphore(concurrency)
        self.delay = delay
        self.active = 0
        self.last_start = float("-inf")

    async def __aenter__(self) -> Slot:
        await self._semaphore.acquire()
        self.active += 1
        try:
            # Measured from the last real start, re-checked after every sleep: holders woken together (a
            # busy event loop wakes every sleeper at once) still leave one at a time.
            while (wait := self.last_start + self.delay - time.monotonic()) > 0:
                await asyncio.sleep(wait)
            self.last_start = time.monotonic()
        except BaseException:
            self._release()
            raise
        return self

    async def __aexit__(self, *exc_info) -> None:
        self._release()

    def _release(self) -> None:
        self.active -= 1
        self._semaphore.release()

    def idle(self, now: float) -> bool:
        """Nothing in flight or waiting and the delay has passed: forgetting the slot changes nothing."""
        return self.active == 0 and not self._semaphore.locked() and now - self.last_start >= self.delay


class Slots:
    """The slot of each origin, created on first use; idle slots are dropped as the table grows."""

    def __init__(self, concurrency: int, delay: float, *, purge_at: int = 1024):
        self._concurrency = concurrency
        self._delay = delay
        self._min_purge_at = self._purge_at = purge_at
        self._slots: dict[str, Slot] = {}

    def __len__(self) -> int:
        return len(self._slots)

    def get(self, origin: str, crawl_delay: float | None = None) -> Slot:
        """The slot of ``origin``; a robots.txt ``crawl_delay`` longer than the configured delay wins."""
        slot = self._slots.get(origin)
        if slot is None:
            if len(self._slots) >= self._purge_at:
                self._purge()
            slot = self._slots[origin] = Slot(self._concurrency, self._delay)
        if crawl_delay is not None:
            slot.delay = max(self._delay, crawl_delay)
        return slot

    def _purge(self) -> None:
        now = time.monotonic()
        self._slots = {origin: slot for origin, slot in self._slots.items() if not slot.idle(now)}
        self._purge_at = max(self._min_purge_at, 2 * len(self._slots))
