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

A run may revisit only some of the URLs it knows (``PageStates.revisit_budget`` URLs, or ``revisit_bytes`` of
their last whole reads): ``revisits`` chooses them by the freshness a revisit adds, from each URL's estimated
change rate and the time since its last visit; the others are carried over unasked. New URLs are always
fetched.
"""

from __future__ import annotations

import gzip
import hashlib
import heapq
import itertools
import json
import math
import os
import sys
import time
import zlib
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field, fields
from email.utils import parsedate_to_datetime
from enum import StrEnum
from pathlib import Path

from geoweb.crawl.collector import collection_paused
from geoweb.errors import UnreadableState
from geoweb.fetch.response import Response
from geoweb.models import Resource, sha256

FULL_READ_SECONDS = 7 * 24 * 3600  # a URL is read whole at least this often, whatever its validators say
# A URL leaves the crawl's schedule when it answers 404 or 410 in this many runs in a row (one lost answer is
# no proof), or when no run reached it for UNREACHED_SECONDS (nothing the crawl reaches links to it).
GONE_RUNS = 2
UNREACHED_SECONDS = 4 * FULL_READ_SECONDS


def _code_digest(*packages) -> str:
    """A digest of the packages' code and data files."""
    digest = hashlib.sha256()
    for package in packages:
        root = Path(package.__file__).parent
        for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".txt", ".json", ".ttl")):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _readers_digest() -> str:
    """A digest of the code that turns a page into resources (detectors, concept tagging, the records), so
    that what an earlier version read is read again, not carried over, once that code changes."""
    import geoweb.detect
    import geoweb.models
    import geoweb.semantic

    return _code_digest(geoweb.detect, geoweb.models, geoweb.semantic)


def _links_digest() -> str:
    """A digest of the code that admits and scores links, part of ``admission``."""
    import geoweb.links

    return _code_digest(geoweb.links)


READERS = _readers_digest()
LINKS_CODE = _links_digest()
# 2: each distinct link URL once, in the file's table "urls", a page's links as one list alternating a URL's
# index and the anchor text (anchor texts seldom repeat); 1 (still read): its links as (url, text) pairs
STATE_VERSION = 2


class Unchanged(StrEnum):
    """Why a page was carried over from the run before, unread."""

    NOT_MODIFIED = "not_modified"  # a 304 to a conditional request
    SAME_BYTES = "same_bytes"  # a full answer with the signature remembered
    NOT_DUE = "not_due"  # not requested: the revisit budget went to URLs likelier to have changed


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
    visits: int = 0  # visits after the first, each able to tell a change (a read or a 304)
    changes: int = 0  # of them, those that found it changed
    visited_at: float = 0.0  # the last visit, the first read included
    visit_seconds: float = 0.0  # the sum of the intervals before each of the ``visits``
    level: int = 0  # the level it was last read at
    size: int = 0  # bytes of its last whole read: what carrying it over unread saves
    gone_runs: int = 0  # runs in a row it answered 404 or 410
    readers: str = READERS  # the code that read it: a page another version read is read again
    # its links as the crawl admitted them, kept by a crawl DAG's states (``PageStates.keep_admitted``) so that a
    # run can carry the page over in SQL: {"level": the page's level, "by": ``admission``, "links": [[url,
    # score], ...]}, normalised and filtered, each scored one level below the page; None when not kept
    admitted: dict | None = None

    def conditions(self, now: float) -> dict[str, str]:
        """The conditional headers of the next request; none once it is due for a whole read, or when other
        code read it."""
        if now - self.read_at >= FULL_READ_SECONDS or self.readers != READERS:
            return {}
        headers = {}
        if self.etag:
            headers["If-None-Match"] = self.etag
        if self.last_modified:
            headers["If-Modified-Since"] = self.last_modified
        return headers

    def count_visit(self, now: float, changed: bool) -> None:
        """One more visit that could tell whether the page changed since the one before."""
        self.visits += 1
        self.changes += changed
        self.visit_seconds += max(0.0, now - self.visited_at)
        self.visited_at = now

    def scheduling_rate(self) -> float | None:
        """The change rate revisits are planned by: ``change_rate`` of the visits, over their mean interval,
        a history without a change counted as half of one, so that the rate falls with the time watched but
        never to zero (a page that never changed is revisited, less and less often). None before a second
        visit."""
        if self.visits < 1 or self.visit_seconds <= 0:
            return None
        return change_rate(self.visits, max(self.changes, 0.5), self.visit_seconds / self.visits)

    def change_probability(self, now: float) -> float:
        """The probability that the page changed since its last visit, 1 - exp(-rate * elapsed) for a
        Poisson process at ``scheduling_rate``. A URL read only once has no rate: it counts as changed (1.0),
        its second visit being what starts its history."""
        rate = self.scheduling_rate()
        if rate is None:
            return 1.0
        return -math.expm1(-rate * max(0.0, now - self.visited_at))

    def revisit_value(self, now: float) -> float:
        """Seconds of freshness a revisit now is worth: dF/df of F(f) = (f / rate) (1 - exp(-rate / f)), the
        time-averaged freshness of a page revisited f times a second, at f = 1 / elapsed; that is
        (p - x (1 - p)) / rate for x = rate * elapsed and p the change probability. Cho and Garcia-Molina's
        optimal revisit frequencies make it equal across pages, so the largest go first. Unlike the change
        probability alone, it gives little to a page that changes faster than any revisit keeps it fresh.
        Infinite for a URL read only once."""
        rate = self.scheduling_rate()
        if rate is None:
            return math.inf
        elapsed = rate * max(0.0, now - self.visited_at)
        changed = self.change_probability(now)
        return (changed - elapsed * (1 - changed)) / rate


@dataclass(slots=True)
class Brief:
    """What a crawl task decides by whether to carry a page over in SQL: its state without links, resources
    or admitted links (``state``), whether it holds resources, and the level and admission its admitted
    links were kept at (None when none were)."""

    state: PageState
    resources: bool
    admitted_level: int | None
    admitted_by: str | None


def admission(max_url_length: int, url_policies: object) -> str:
    """What a page's admitted links depend on besides the page (``PageState.admitted``): the code that
    admits and scores links, and the settings of the URL filters."""
    settings = json.dumps([LINKS_CODE, max_url_length, url_policies], sort_keys=True, default=str)
    return hashlib.sha256(settings.encode()).hexdigest()[:16]


def change_rate(visits: int, changes: float, seconds_between_visits: float) -> float:
    """Changes per second, estimated from a "changed since the last visit" history (Cho and Garcia-Molina,
    ACM TOIT 2003): -ln((n - X + 0.5) / (n + 0.5)) / I for n visits, X of them changed, mean interval I."""
    return -math.log((visits - changes + 0.5) / (visits + 0.5)) / seconds_between_visits


RevisitKey = tuple[float, int, float, str]


def revisit_key(url: str, state: PageState, now: float) -> RevisitKey:
    """The order known URLs are revisited in: the largest ``revisit_value`` first (URLs read only once before
    any other), ties by level (lower first), then by the oldest visit; finite, so that it fits in JSON."""
    return (-min(state.revisit_value(now), sys.float_info.max), state.level, state.visited_at, url)


def due_anyway(state: PageState, now: float) -> bool:
    """Asked whatever the budget: it last answered 404 or 410 (to confirm), it was not read whole for
    ``FULL_READ_SECONDS`` (its validators may lie), or other code read it (``READERS``)."""
    return state.gone_runs > 0 or now - state.read_at >= FULL_READ_SECONDS or state.readers != READERS


def revisits(pages: Mapping[str, PageState], now: float, budget: int) -> set[str]:
    """The ``budget`` known URLs a run revisits, first in ``revisit_key`` order."""
    ranked = heapq.nsmallest(max(budget, 0), pages.items(), key=lambda item: revisit_key(*item, now))
    return {url for url, _ in ranked}


NONE_DUE: RevisitKey = (-sys.float_info.max, -1, -sys.float_info.max, "")  # before every key


def paced_budget(budget: int | None, pace: float | None, seconds: float) -> int | None:
    """The revisit budget of a run with a time budget of ``seconds``: the requests its crawl's last run sent
    in that time at ``pace`` per second, within ``budget`` (None: none). Spent on the pages likeliest to have
    changed, they are asked rather than those first in crawl order until the time is out."""
    if pace is None or not seconds:
        return budget
    fit = int(pace * seconds)
    return fit if budget is None else min(budget, fit)


def revisit_cutoff(
    pages: Iterable[tuple[str, PageState]], now: float, budget: int | None, budget_bytes: int | None = None
) -> RevisitKey | None:
    """The ``revisit_key`` of the last URL a run revisits, of ``pages`` streamed (a crawl's kept states): the
    URLs are taken in key order while they are at most ``budget`` and their last whole reads
    (``PageState.size``) add up to at most ``budget_bytes``; None when every one fits. A URL is due when its
    key is at most this."""
    chosen: list[_Chosen] = []  # the URLs within the budget so far, the last key on top
    spent, dropped = 0, None  # dropped: the first key left out, and so every key after it
    for url, state in pages:
        if due_anyway(state, now):
            continue
        key = revisit_key(url, state, now)
        if dropped is not None and key >= dropped:
            continue
        heapq.heappush(chosen, _Chosen(key, state.size))
        spent += state.size
        while (budget is not None and len(chosen) > budget) or (
            budget_bytes is not None and spent > budget_bytes
        ):
            last = heapq.heappop(chosen)
            spent -= last.size
            dropped = last.key if dropped is None else min(dropped, last.key)
    if dropped is None:
        return None
    return chosen[0].key if chosen else NONE_DUE


class _Chosen:
    """A URL within a revisit budget, ordered so that the top of a heapq heap is the last key: the one to
    drop when the budget is exceeded."""

    __slots__ = ("key", "size")

    def __init__(self, key: RevisitKey, size: int):
        self.key, self.size = key, size

    def __lt__(self, other: _Chosen) -> bool:
        return self.key > other.key


def _validator_date(value: str | None, now: float) -> str | None:
    """A Last-Modified worth sending back: a date, not in the future."""
    try:
        moment = parsedate_to_datetime(value).timestamp() if value else None
    except (TypeError, ValueError):
        return None
    return value if moment is not None and moment <= now + 60 else None


class PageStates:
    """Every URL's state, read from and written to one gzip'd JSON file (``--state PATH``)."""

    def __init__(
        self,
        path: Path | None = None,
        revisit_budget: int | None = None,
        cutoff: tuple[float, RevisitKey | None] | None = None,
        revisit_bytes: int | None = None,
        keep_admitted: bool = False,
    ):
        self.path = path
        # keep each page's admitted links (``PageState.admitted``); a page carried over whose kept links hold is
        # then handed on without them, for its sink to write them from its state (``links_kept``)
        self.keep_admitted = keep_admitted
        self.revisit_budget = revisit_budget  # known URLs a run requests; None: all of them
        self.revisit_bytes = revisit_bytes  # the sum of their last whole reads' sizes at most; None: any
        # (when it was drawn, the key of the last URL revisited): drawn from the budget at the first URL asked
        # about, or given (a crawl DAG run draws it once for all its shards)
        self.cutoff = cutoff
        self.pace: float | None = None  # requests per second of the run that saved the state file
        self.pages: dict[str, PageState] = {}
        self.visited: set[str] = set()  # URLs this run fetched or carried over
        self.readmitted: set[str] = set()  # URLs carried over unasked whose admitted links were kept anew
        # URLs carried over whose links are the admitted ones their states keep, left for the sink to write
        self.links_kept: set[str] = set()
        self.gone_pages: set[str] = set()  # answered 404 or 410 in GONE_RUNS runs in a row: to forget
        self.dropped: dict[str, list[dict]] = {}  # the resources of the pages that answered 404 or 410
        if path is not None and path.exists():
            try:
                with gzip.open(path, "rb") as file, collection_paused():
                    saved = json.loads(file.read())
                    self.pages = _loaded(saved)
                    self.pace = _pace(saved)
            except (
                OSError,
                EOFError,
                zlib.error,
                ValueError,
                KeyError,
                IndexError,
                TypeError,
                AttributeError,
            ) as exc:
                raise UnreadableState(
                    f"the state file {path} cannot be read ({type(exc).__name__}: {exc}); it is left as it is: "
                    "move it away to start the crawl's state afresh"
                ) from exc
        self.known = frozenset(self.pages)  # the URLs the state file held, the ones a budget chooses among
        self._grown = 0  # bytes the pages read in this run added to a state file's (``held_bytes``)
        self._record_bytes: dict[str, int] = {}  # footprint of a resource's record, per document
        self.before = {r["url"] + "\n" + r["type"]: r for p in self.pages.values() for r in p.resources}

    def get(self, url: str) -> PageState | None:
        return self.pages.get(url)

    def _held(self, state: PageState) -> int:
        """``footprint`` of a state; its links, pairs of strings, summed in C, and a resource's record walked
        once per document (a document linked from many pages gives each a record, alike but for where)."""
        links = state.links
        pairs = sys.getsizeof(links) + _PAIR * len(links) + sum(map(sys.getsizeof, itertools.chain(*links)))
        records = sys.getsizeof(state.resources)
        for record in state.resources:
            document = record.get("content_sha256")
            if document is None:
                records += footprint(record)
                continue
            if document not in self._record_bytes:
                self._record_bytes[document] = footprint(record)
            records += self._record_bytes[document]
        scalars = sum(map(sys.getsizeof, map(state.__getattribute__, _SCALAR_FIELDS)))
        return sys.getsizeof(state) + pairs + records + scalars

    def held_bytes(self) -> int:
        """What the state has grown by in this run, held in memory besides the crawl's memory bound: the pages
        read replace their states, and new pages add theirs (``footprint``; 0 without a state file, whose
        states leave memory as a DAG task commits them)."""
        return max(0, self._grown)

    def due(self, url: str) -> bool:
        """Whether this run requests a URL the state holds: all of them without a revisit budget or cutoff,
        else those up to the cutoff in ``revisit_key`` order (the budget's share), any not read whole for
        ``FULL_READ_SECONDS`` (its validators may lie), and any that last answered 404 or 410."""
        state = self.pages.get(url)
        if state is None:  # not held: the crawl fetches it as new, never as a revisit
            return False
        if due_anyway(state, time.time()):
            return True
        if self.cutoff is None and (self.revisit_budget is not None or self.revisit_bytes is not None):
            now = time.time()
            held = ((u, self.pages[u]) for u in self.known if u in self.pages)
            self.cutoff = (now, revisit_cutoff(held, now, self.revisit_budget, self.revisit_bytes))
        if self.cutoff is None or self.cutoff[1] is None:
            return True
        drawn_at, last = self.cutoff
        return revisit_key(url, state, drawn_at) <= last

    def unchanged(self, url: str, response: Response, asked: dict[str, str]) -> Unchanged | None:
        """Whether the answer shows the page as remembered; counts the visit either way."""
        known = self.pages.get(url)
        if known is None or known.readers != READERS or response.status not in (200, 304):
            return None
        if response.status == 304:
            outcome = Unchanged.NOT_MODIFIED if asked else None
        else:
            outcome = Unchanged.SAME_BYTES if sha256(response.body) == known.signature else None
        if outcome is not None:
            now = time.time()
            known.count_visit(now, changed=False)
            self.visited.add(url)
            if outcome is Unchanged.SAME_BYTES:
                known.read_at = now
        return outcome

    def remember(
        self,
        url: str,
        response: Response,
        links: list[tuple[str, str]],
        found: list[Resource],
        level: int = 0,
        untagged: Container[tuple[str, str]] = frozenset(),
    ) -> Verdict:
        """A page read whole at ``level``: its validators, signature, links and resources; a visit counted
        when it was known, a change when with other bytes; ``untagged``, the keys of ``found`` the run did not
        tag (another page gave them first). Returns what the read found: a new page, a changed one, or the
        same bytes."""
        now = time.time()
        known = self.pages.get(url)
        state = PageState(
            etag=response.headers.get("etag"),
            last_modified=_validator_date(response.headers.get("last-modified"), now),
            signature=sha256(response.body),
            links=links,
            resources=[held_record(r, tagged=r.key not in untagged) for r in found],
            read_at=now,
            visited_at=now,
            level=level,
            size=len(response.body),
        )
        if self.path is not None:
            self._grown += self._held(state) - (self._held(known) if known is not None else 0)
        verdict = Verdict.NEW
        if known is not None:
            state.visits, state.changes = known.visits, known.changes
            state.visited_at, state.visit_seconds = known.visited_at, known.visit_seconds
            changed = known.signature != state.signature
            state.count_visit(now, changed=changed)
            verdict = Verdict.CHANGED if changed else Verdict.UNCHANGED
        self.pages[url] = state
        self.visited.add(url)
        return verdict

    def admitted(self, url: str, level: int, by: str, links: list[tuple[str, float]]) -> None:
        """Keep the links the crawl admitted from a page at ``level`` under the admission ``by``, when the
        states keep them; a page carried over unasked is then kept again too (``settle``), once."""
        state = self.pages.get(url)
        if not self.keep_admitted or state is None:
            return
        admitted = {"level": level, "by": by, "links": [list(link) for link in links]}
        if state.admitted != admitted:
            state.admitted = admitted
            self.readmitted.add(url)

    def settle(self, urls: Iterable[str]) -> tuple[dict[str, PageState], list[str]]:
        """Take the states of pages done with out of memory (a shard of a crawl DAG run, as it commits its
        pages): those this run read or carried over, or whose admitted links it kept anew, to keep, and the
        URLs that answered 404 or 410, to forget."""
        kept, gone = {}, []
        for url in urls:
            state = self.pages.pop(url, None)
            if url in self.gone_pages:
                gone.append(url)
            elif state is not None and (url in self.visited or url in self.readmitted):
                kept[url] = state
            self.visited.discard(url)
            self.readmitted.discard(url)
            self.links_kept.discard(url)
            self.gone_pages.discard(url)
        return kept, gone

    def failed(self, url: str, status: int | None) -> bool:
        """Whether the answer's ``status`` says the page is gone (404, 410): it is, for this run, and it gives
        nothing a later run could carry over; in GONE_RUNS runs in a row it leaves the schedule."""
        if status not in (404, 410):
            return False
        state = self.pages.get(url)
        if state is not None:
            state.gone_runs += 1
            self.dropped.setdefault(url, state.resources)
            state.etag = state.last_modified = state.signature = None
            state.links, state.resources = [], []
            self.visited.add(url)
            if state.gone_runs >= GONE_RUNS:
                self.gone_pages.add(url)
        return True

    def verdict(self, record: dict) -> Verdict:
        """A resource this run found, against what the crawl held before it."""
        before = self.before.get(record["url"] + "\n" + record["type"])
        if before is None:
            return Verdict.NEW
        return Verdict.UNCHANGED if _same(before, record) else Verdict.CHANGED

    def not_found_again(self, found: set[str]) -> list[tuple[dict, Verdict]]:
        """The resources held before this run that it did not find: gone where their page was visited and no
        longer gives them, or answered 404/410; held (unchanged, not visited) where the run did not reach
        their page, which keeps its state. The URLs leaving the schedule (``GONE_RUNS``,
        ``UNREACHED_SECONDS``) leave the state."""
        left = []
        unreached_since = time.time() - UNREACHED_SECONDS
        for url, page in list(self.pages.items()):
            gone = url in self.visited
            for record in self.dropped.get(url, page.resources):
                if record["url"] + "\n" + record["type"] not in found:
                    left.append((_without(record, _HELD_ONLY), Verdict.GONE if gone else Verdict.UNCHANGED))
            if url in self.gone_pages or (not gone and page.visited_at < unreached_since):
                del self.pages[url]
        return left

    def save(self) -> None:
        """Write the state, whole or not at all (a crawl killed while saving keeps the state before)."""
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(self.path.name + ".partial")
        with collection_paused():
            saved = self._saved()
        # json.dumps whole, in C (json.dump writes piece by piece in Python: ten times slower), and the
        # fastest gzip level: a 100,000-page state saves in seconds, not half a minute (bench/README.md)
        with gzip.open(partial, "wb", compresslevel=1) as file:
            file.write(json.dumps(saved).encode("utf-8"))
        os.replace(partial, self.path)

    def _saved(self) -> dict:
        """The state as its file holds it (``STATE_VERSION``)."""
        urls: dict[str, int] = {}
        pages = {}
        for url, state in self.pages.items():
            values = state_values(state)
            flat: list[int | str] = [0] * (2 * len(state.links))
            flat[0::2] = [urls.setdefault(link, len(urls)) for link, _ in state.links]
            flat[1::2] = [text for _, text in state.links]
            values["links"] = flat
            pages[url] = values
        return {"version": STATE_VERSION, "urls": list(urls), "pages": pages, "pace": self.pace}


# what a resource is, without where and when this run saw it
_SIGHTING = ("level", "source_page", "discovered_at")
# what a state keeps of a resource beyond its record: what a revisit compares, so one carried over is stored
# as a read of its document would store it
_HELD_ONLY = ("content_sha256", "tagged")


def held_record(resource: Resource, tagged: bool = True) -> dict:
    """A resource as a page's state keeps it: its record, the sha256 of the document that proved it, and
    whether its datasets were tagged with concepts (not when another page of the run gave it first)."""
    return (
        resource.to_record()
        | {"content_sha256": resource.content_sha256}
        | ({} if tagged else {"tagged": False})
    )


def _without(record: dict, keys: tuple[str, ...]) -> dict:
    return {k: v for k, v in record.items() if k not in keys}


def _same(before: dict, now: dict) -> bool:
    """Whether two records describe the same resource, compared as the state file holds them: equal as
    they are (a record holds JSON's types), else equal as JSON (a tuple in ``extra``, a NaN)."""
    before, now = _without_sighting(before), _without_sighting(now)
    return now == before or _json(now) == _json(before)


def _json(record: dict) -> str:
    return json.dumps(record, sort_keys=True)


def _without_sighting(record: dict) -> dict:
    return _without(record, _SIGHTING + _HELD_ONLY)


_STATE_FIELDS = tuple(f.name for f in fields(PageState))
_SCALAR_FIELDS = tuple(name for name in _STATE_FIELDS if name not in ("links", "resources"))
_PAIR = sys.getsizeof(("", ""))


def footprint(value: object) -> int:
    """Bytes a value of a state holds in memory: its objects' sizes, a string shared by several counted at
    each place (an upper bound)."""
    size = sys.getsizeof(value)
    if isinstance(value, dict):
        size += sum(footprint(key) + footprint(item) for key, item in value.items())
    elif isinstance(value, (list, tuple)):
        size += sum(footprint(item) for item in value)
    return size


def state_values(state: PageState) -> dict:
    """A PageState as JSON takes it; one level deep, as its values are (``asdict`` copies every link and
    record: ten seconds for 100,000 pages)."""
    return {name: getattr(state, name) for name in _STATE_FIELDS}


def _pace(saved: dict) -> float | None:
    pace = saved.get("pace")
    if pace is not None and not (isinstance(pace, int | float) and pace > 0):
        raise ValueError(f"pace {pace!r:.40}")
    return pace


def _loaded(saved: dict) -> dict[str, PageState]:
    """The pages of a state file, of this version or the one before; the pages linking a URL share one string
    of it. Another version is refused (ValueError), never replaced: a newer geoweb may have written it."""
    version = saved.get("version")
    if version == 1:
        return {url: page_state(values) for url, values in saved["pages"].items()}
    if version != STATE_VERSION:
        raise ValueError(f"state file version {version!r}, this geoweb reads 1 and {STATE_VERSION}")
    urls, pages = saved["urls"], {}
    for url, values in saved["pages"].items():
        pairs = values["links"]
        values["links"] = list(zip(map(urls.__getitem__, pairs[0::2]), pairs[1::2], strict=True))
        pages[url] = page_state(values)
    return pages


# The JSON types of a state's values: a value of another type is a damaged state
_NUMBER = (int, float)
_OPTIONAL_TEXT = (str, type(None))
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "etag": _OPTIONAL_TEXT, "last_modified": _OPTIONAL_TEXT, "signature": _OPTIONAL_TEXT, "links": (list,),
    "resources": (list,), "read_at": _NUMBER, "visits": (int,), "changes": (int,), "visited_at": _NUMBER,
    "visit_seconds": _NUMBER, "level": (int,), "size": (int,), "gone_runs": (int,), "readers": (str,),
    "admitted": (dict, type(None)),
}  # fmt: skip


def page_state(values: dict) -> PageState:
    """A PageState from its JSON form (a state file's, the page_states table's). ValueError when a value is not
    of its field's type, a link not a pair of texts, or the admitted links not [url, score] pairs: the state
    is damaged."""
    values = dict(values)
    for name, value in values.items():
        if not isinstance(value, _FIELD_TYPES.get(name, ())):
            raise ValueError(f"{name!r} is {value!r:.80}" if name in _FIELD_TYPES else f"no field {name!r}")
    values["links"] = [link if type(link) is tuple else tuple(link) for link in values.get("links", [])]
    if not all(len(link) == 2 and type(link[0]) is str and type(link[1]) is str for link in values["links"]):
        raise ValueError("a link is not a pair of texts")
    if (admitted := values.get("admitted")) is not None and not _admitted_links(admitted):
        raise ValueError(f"admitted links {admitted!r:.80}")
    values.setdefault("readers", "")  # kept before readers were: read by other code
    if "visited_at" not in values:  # kept without visit times: its intervals are unknown, its counts restart
        values.update(visits=0, changes=0, visited_at=values.get("read_at", 0.0))
    return PageState(**values)


def _admitted_links(admitted: dict) -> bool:
    """Whether ``PageState.admitted`` has its level, admission and [url, score] pairs."""
    links = admitted.get("links")
    return (
        type(admitted.get("level")) is int
        and type(admitted.get("by")) is str
        and type(links) is list
        and all(
            type(link) is list and len(link) == 2 and type(link[0]) is str and type(link[1]) in _NUMBER
            for link in links
        )
    )
