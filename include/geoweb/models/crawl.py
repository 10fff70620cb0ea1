"""What a crawl carries and records: links, what became of each URL, per-level figures, and the statuses the
store keeps of runs and frontier URLs."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, NamedTuple

from geoweb.models.resources import Resource

if TYPE_CHECKING:
    from geoweb.errors import FetchError


class RunStatus(StrEnum):
    """A harvest run's status."""

    RUNNING = "running"
    SUCCESS = "success"
    FAILED = "failed"


class URLStatus(StrEnum):
    """What became of a URL of a run's frontier."""

    DISCOVERED = "discovered"  # still to fetch
    FETCHED = "fetched"
    ERROR = "error"  # the fetch failed, or the database refused what it found
    SKIPPED = "skipped"  # refused by robots.txt, or not followed under the link budget
    DEFERRED = "deferred"  # not fetched in this run, for a ``DeferReason``


class DeferReason(StrEnum):
    """Why a URL of a level was not fetched (``Page.deferred``, a deferred row's ``error_reason``): a later run
    takes it (``Frontier.take_deferred``)."""

    LEVEL_DEADLINE = "level_deadline"  # the shard's level ran past its deadline
    HOST_TIME_BUDGET = "host_time_budget"  # the level waited on its host too long
    HOST_FAILURES = "host_failures"  # its host failed too many times in a row
    MEMORY_BUDGET = "memory_budget"  # its answer did not fit in the crawl's memory bound
    RUN_TIME_BUDGET = "run_time_budget"  # new to the crawl when the run's time budget was spent

    @property
    def message(self) -> str:
        """Why the URL was not fetched, as its frontier row and the run's report say it."""
        return _DEFER_MESSAGES[self]

    @classmethod
    def of_hosts(cls) -> tuple[DeferReason, ...]:
        """The reasons that set a URL's host aside for the run; the others are the crawl's own limits."""
        return cls.LEVEL_DEADLINE, cls.HOST_TIME_BUDGET, cls.HOST_FAILURES


_DEFER_MESSAGES = {
    DeferReason.LEVEL_DEADLINE: "not fetched: its host was set aside, its level having run past its deadline",
    DeferReason.HOST_TIME_BUDGET: "not fetched: its host was set aside, the level having waited on it too long",
    DeferReason.HOST_FAILURES: "not fetched: its host was set aside, having failed too many times in a row",
    DeferReason.MEMORY_BUDGET: "not read: the answer did not fit in the memory bound",
    DeferReason.RUN_TIME_BUDGET: "not fetched: new to the crawl when the run's time budget was spent",
}


class Link(NamedTuple):
    """A link as the crawl carries it: the URL, the page that linked to it (None for seeds), its score."""

    url: str
    source: str | None
    score: float = 0.0


class RecordedLink(NamedTuple):
    """A URL of a run as the frontier holds it: the level it was found at, its source page, its score."""

    url: str
    level: int
    source: str | None
    score: float


@dataclass
class Page:
    """What became of one URL of a level: handed to ``on_page`` as soon as the URL is done, so a caller can
    commit progress page by page (a crawl killed half-way then redoes only the pages it had not committed)."""

    url: str
    source: str | None
    level: int
    resources: list[Resource] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    error: FetchError | None = None  # the fetch failed (robots.txt refusals included)
    deferred: DeferReason | None = None  # not fetched, for this reason


@dataclass
class LevelStats:
    level: int
    urls: int = 0  # URLs fetched at this level (the paper's "URLs crawled")
    resources: int = 0
    failures: int = 0
    seconds: float = 0.0
    deferred: int = 0  # URLs not fetched, for a DeferReason
    deferred_hosts: int = 0

    @property
    def discovery_ratio(self) -> float:
        return self.resources / self.urls if self.urls else 0.0
