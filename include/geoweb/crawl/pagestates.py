"""What a crawl remembers of each URL between its runs, so that the next run costs less: ``geoweb crawl
--state PATH``.

Per URL: the validators its server sent (ETag, Last-Modified), the SHA-256 of its body, the links it gave
(with their anchor texts, to score them again) and the resources found in it, when it was last read whole,
and its change history (visits, and how many found it changed). A run asks again with the validators
(If-None-Match, If-Modified-Since); a 304, or a body whose signature is the one remembered, is unchanged:
neither parsed, detected, validated nor tagged again, its links and resources carried over.

Servers that lie are survived. A 304 to a request that sent no validator is a failure (there is nothing to
carry over). A 304 with a body is a 304: the body is not read as the page. A weak or changing ETag on an
unchanged body costs a download, not a parse: the signature decides. Last-Modified in the future is not sent
back. An ETag that stays while the body changes is caught by reading every URL whole at least once per
``FULL_READ_SECONDS``.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import time
from dataclasses import asdict, dataclass, field
from email.utils import parsedate_to_datetime
from enum import StrEnum
from pathlib import Path

from geoweb.fetch.response import Response
from geoweb.models import Resource, sha256

FULL_READ_SECONDS = 7 * 24 * 3600  # a URL is read whole at least this often, whatever its validators say
STATE_VERSION = 1


class Unchanged(StrEnum):
    """Why a page was carried over from the run before, unread."""

    NOT_MODIFIED = "not_modified"  # a 304 to a conditional request
    SAME_BYTES = "same_bytes"  # a full answer with the signature remembered


class Verdict(StrEnum):
    """What this run says of a resource the crawl holds."""

    NEW = "new"
    CHANGED = "changed"
    UNCHANGED = "unchanged"
    GONE = "gone"  # its page no longer gives it, or answered 404/410


@dataclass(slots=True)
class PageState:
    """One URL as the crawl last read it."""

    etag: str | None = None
    last_modified: str | None = None
    signature: str | None = None
    links: list[tuple[str, str]] = field(default_factory=list)  # (url, anchor text) as extracted
    resources: list[dict] = field(default_factory=list)  # Resource.to_record() of each
    read_at: float = 0.0  # when it was last read whole
    visits: int = 0  # visits that could tell a change (a read or a 304)
    changes: int = 0  # of them, those that found it changed

    def conditions(self, now: float) -> dict[str, str]:
        """The conditional headers of the next request; none once it is due for a whole read."""
        if now - self.read_at >= FULL_READ_SECONDS:
            return {}
        headers = {}
        if self.etag:
            headers["If-None-Match"] = self.etag
        if self.last_modified:
            headers["If-Modified-Since"] = self.last_modified
        return headers

    def change_rate(self, seconds_between_visits: float) -> float | None:
        """Changes per second, estimated from "changed since the last visit" histories (Cho and
        Garcia-Molina, ACM TOIT 2003): -ln((n - X + 0.5) / (n + 0.5)) / I for n visits, X changed, mean
        interval I. None before a second visit."""
        if self.visits < 1 or seconds_between_visits <= 0:
            return None
        n, changed = self.visits, self.changes
        return -math.log((n - changed + 0.5) / (n + 0.5)) / seconds_between_visits


def _validator_date(value: str | None, now: float) -> str | None:
    """A Last-Modified worth sending back: a date, not in the future."""
    try:
        moment = parsedate_to_datetime(value).timestamp() if value else None
    except (TypeError, ValueError):
        return None
    return value if moment is not None and moment <= now + 60 else None


class PageStates:
    """Every URL's state, read from and written to one gzip'd JSON file (``--state PATH``)."""

    def __init__(self, path: Path | None = None):
        self.path = path
        self.pages: dict[str, PageState] = {}
        self.visited: set[str] = set()  # URLs this run fetched or carried over
        self.gone_pages: set[str] = set()  # answered 404 or 410 this run
        if path is not None and path.exists():
            with gzip.open(path, "rt", encoding="utf-8") as file:
                saved = json.load(file)
            if saved.get("version") == STATE_VERSION:
                self.pages = {url: _page_state(values) for url, values in saved["pages"].items()}
        self.before = {r["url"] + "\n" + r["type"]: r for p in self.pages.values() for r in p.resources}

    def get(self, url: str) -> PageState | None:
        return self.pages.get(url)

    def unchanged(self, url: str, response: Response, asked: dict[str, str]) -> Unchanged | None:
        """Whether the answer shows the page as remembered; counts the visit either way."""
        known = self.pages.get(url)
        if known is None or response.status not in (200, 304):
            return None
        if response.status == 304:
            outcome = Unchanged.NOT_MODIFIED if asked else None
        else:
            outcome = Unchanged.SAME_BYTES if sha256(response.body) == known.signature else None
        if outcome is not None:
            known.visits += 1
            self.visited.add(url)
            if outcome is Unchanged.SAME_BYTES:
                known.read_at = time.time()
        return outcome

    def remember(
        self, url: str, response: Response, links: list[tuple[str, str]], found: list[Resource]
    ) -> None:
        """A page read whole: its validators, signature, links and resources; a change counted when it was
        known with other bytes."""
        now = time.time()
        known = self.pages.get(url)
        state = PageState(
            etag=response.headers.get("etag"),
            last_modified=_validator_date(response.headers.get("last-modified"), now),
            signature=sha256(response.body),
            links=links,
            resources=[r.to_record() for r in found],
            read_at=now,
        )
        if known is not None:
            state.visits, state.changes = (
                known.visits + 1,
                known.changes + (known.signature != state.signature),
            )
        self.pages[url] = state
        self.visited.add(url)

    def failed(self, url: str, status: int | None) -> None:
        if status in (404, 410):
            self.gone_pages.add(url)

    def verdict(self, record: dict) -> Verdict:
        """A resource this run found, against what the crawl held before it."""
        before = self.before.get(record["url"] + "\n" + record["type"])
        if before is None:
            return Verdict.NEW
        return Verdict.UNCHANGED if _same(before, record) else Verdict.CHANGED

    def not_found_again(self, found: set[str]) -> list[tuple[dict, Verdict]]:
        """The resources held before this run that it did not find: gone where their page was visited and no
        longer gives them, or answered 404/410; held (unchanged, not visited) where the run did not reach
        their page, which keeps its state."""
        left = []
        for url, page in list(self.pages.items()):
            gone = url in self.gone_pages or url in self.visited
            for record in page.resources:
                if record["url"] + "\n" + record["type"] not in found:
                    left.append((record, Verdict.GONE if gone else Verdict.UNCHANGED))
            if url in self.gone_pages:
                del self.pages[url]
        return left

    def save(self) -> None:
        """Write the state, whole or not at all (a crawl killed while saving keeps the state before)."""
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(self.path.name + ".partial")
        with gzip.open(partial, "wt", encoding="utf-8") as file:
            json.dump(
                {"version": STATE_VERSION, "pages": {u: asdict(p) for u, p in self.pages.items()}}, file
            )
        os.replace(partial, self.path)


# what a resource is, without where and when this run saw it
_SIGHTING = ("level", "source_page", "discovered_at")


def _same(before: dict, now: dict) -> bool:
    """Whether two records describe the same resource, compared as the state file holds them (JSON)."""
    return json.loads(json.dumps(_without_sighting(now))) == _without_sighting(before)


def _without_sighting(record: dict) -> dict:
    return {k: v for k, v in record.items() if k not in _SIGHTING}


def _page_state(values: dict) -> PageState:
    values = dict(values)
    values["links"] = [tuple(link) for link in values.get("links", [])]
    return PageState(**values)
