"""Batches the pages of a crawl for commit: one transaction per batch, not per page, and never a long wait."""

from __future__ import annotations

import time
from collections.abc import Callable

from geoweb.models import Page

COMMIT_PAGES = 50
COMMIT_SECONDS = 2.0


class PageBuffer:
    """The ``on_page`` sink of a crawl: commits its pages every ``size`` pages or ``seconds`` seconds.

    A crawl killed between two commits redoes at most one batch. Call ``flush()`` at the end of the crawl.
    """

    def __init__(
        self,
        commit: Callable[[list[Page]], None],
        *,
        size: int = COMMIT_PAGES,
        seconds: float = COMMIT_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.commit = commit
        self.size = size
        self.seconds = seconds
        self.clock = clock
        self.pages: list[Page] = []
        self.committed = 0  # pages committed so far
        self._last = clock()

    def __call__(self, page: Page) -> None:
        self.pages.append(page)
        if len(self.pages) >= self.size or self.clock() - self._last >= self.seconds:
            self.flush()

    def flush(self) -> None:
        if self.pages:
            self.commit(self.pages)
            self.committed += len(self.pages)
            self.pages = []
        self._last = self.clock()
