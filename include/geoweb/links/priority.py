"""Topical link priority: links scored against a geospatial vocabulary, a level's budget, and the recall curve.

A link's score (Ma's topical spider) is anchor-text relevance plus URL relevance minus a depth term. Within a
level, links are followed in descending score; a budget keeps the top fraction of a level's links (and those
above a minimum score). The recall curve tells, from what a run recorded, how many of its resources a budget
of X % would still have found, against the same budget over a random order of the links.
"""

from __future__ import annotations

import hashlib
import math
import re
from bisect import bisect_right
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from itertools import accumulate

from geoweb.models import Link, RecordedLink

VOCABULARY = "geo_vocabulary.txt"  # shipped next to this module
MAX_TEXT = 1024  # characters of a text scored: enough for any URL the filters pass and any real anchor
# Score = ANCHOR_WEIGHT * relevance(anchor) + URL_WEIGHT * relevance(url) - DEPTH_WEIGHT * level. The anchor
# says what a page calls the link, the URL what the server calls it (service=WMS, .kml): equal evidence. The
# depth term (Ma: deeper is lower) orders nothing within a level; it raises the bar of a minimum score with
# every hop, as relevance falls with depth.
ANCHOR_WEIGHT = 0.5
URL_WEIGHT = 0.5
DEPTH_WEIGHT = 0.05
PERCENTS = tuple(range(5, 101, 5))  # the budgets of the recall curve

_TOKEN = re.compile(r"[a-z0-9]+")


def _parse_vocabulary(text: str) -> dict[str, float]:
    """``WEIGHT TERM`` lines (``#`` comments) -> {term as space-joined tokens: weight}."""
    weights = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        weight, _, term = line.partition(" ")
        tokens = _TOKEN.findall(term.lower())
        try:
            value = float(weight)
        except ValueError:
            value = math.nan
        if not tokens or not -1.0 < value < 1.0:
            raise ValueError(f"vocabulary line {number}: need 'WEIGHT TERM' with -1 < WEIGHT < 1: {line!r}")
        weights[" ".join(tokens)] = value
    return weights


class LinkScorer:
    """Scores links against weighted terms: single words by lookup, phrases by their tokens in sequence."""

    def __init__(self, weights: Mapping[str, float]):
        self.words = {t: w for t, w in weights.items() if " " not in t}
        self.phrases = tuple((f" {t} ", w) for t, w in weights.items() if " " in t)

    @classmethod
    @cache
    def default(cls) -> LinkScorer:
        """The scorer of the shipped vocabulary (read once per process)."""
        return cls(_parse_vocabulary(resources.files(__package__).joinpath(VOCABULARY).read_text("utf-8")))

    def relevance(self, text: str) -> float:
        """In (-1, 1): the evidence of the distinct terms in ``text``, positive minus negative, each combined
        as independent chances, so repeating a word adds nothing."""
        tokens = _TOKEN.findall(text[:MAX_TEXT].lower())
        if not tokens:
            return 0.0
        matched = {t: self.words[t] for t in tokens if t in self.words}
        if self.phrases:
            joined = f" {' '.join(tokens)} "
            matched |= {phrase: w for phrase, w in self.phrases if phrase in joined}
        missed_positive = missed_negative = 1.0
        for w in matched.values():
            if w > 0:
                missed_positive *= 1.0 - w
            else:
                missed_negative *= 1.0 + w
        return missed_negative - missed_positive

    def score(self, url: str, anchor: str, level: int) -> float:
        """The score of a link to ``url`` with ``anchor`` text, found ``level`` hops from the seeds."""
        anchor_part = ANCHOR_WEIGHT * self.relevance(anchor)
        url_part = URL_WEIGHT * self.relevance(url.partition("://")[2])
        return round(anchor_part + url_part - DEPTH_WEIGHT * level, 4)


def shuffle_key(url: str) -> tuple[int, str]:
    """A fixed pseudo-random position of a URL: the tie-break of equal scores and the baseline's order. The
    first 60 bits of the URL's MD5, which PostgreSQL computes alike (``geoweb.store.frontier``); the URL itself
    breaks the rare equal hashes, so the order is total and every reader of a level sees the same one."""
    return _shuffle_hash(url), url


def _shuffle_hash(url: str) -> int:
    return int(hashlib.md5(url.encode("utf-8", "replace")).hexdigest()[:15], 16)


def by_priority(link: Link | RecordedLink) -> tuple[float, int, str]:
    """Sort key: descending score, ties in a fixed pseudo-random order (not by URL, which favours a path)."""
    return (-link.score, *shuffle_key(link.url))


def check_budget(fraction: float) -> float:
    """``fraction`` if it is a link budget, a fraction in (0, 1]; else ValueError."""
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"a link budget is a fraction in (0, 1], not {fraction}")
    return fraction


def kept_count(links: int, fraction: float) -> int:
    """How many of a level's ``links`` a budget of ``fraction`` follows: at least one of any."""
    return min(links, math.ceil(links * check_budget(fraction) - 1e-9))


def apply_budget(links: Sequence[Link], fraction: float, min_score: float) -> tuple[list[Link], list[Link]]:
    """(kept, dropped) of one level's links: the top ``fraction`` by priority whose score is at least
    ``min_score``; kept in priority order."""
    ranked = sorted(links, key=by_priority)
    top = kept_count(len(ranked), fraction)
    kept = [link for link in ranked[:top] if link.score >= min_score]
    dropped = ranked[top:] + [link for link in ranked[:top] if link.score < min_score]
    return kept, dropped


@dataclass(frozen=True)
class RecallCurve:
    """Share of a run's resources still found at each budget, by score and by a random order (baseline)."""

    percents: tuple[int, ...]
    scored: tuple[float, ...]
    baseline: tuple[float, ...]
    resources: int
    links: int

    @classmethod
    def tally(
        cls, percents: Sequence[int], needed: Iterable[tuple[int, int, int]], links: int
    ) -> RecallCurve:
        """The curve from (scored, baseline, resources) rows: how many resources need, by score and by the
        random order, the budget of index scored and baseline in ``percents`` (``len(percents)``: none)."""
        scored, baseline = [0] * (len(percents) + 1), [0] * (len(percents) + 1)
        for by_score, by_chance, count in needed:
            scored[by_score] += count
            baseline[by_chance] += count
        total = sum(scored)

        def shares(tallies: list[int]) -> tuple[float, ...]:
            return tuple(found / total if total else 1.0 for found in accumulate(tallies[:-1]))

        return cls(tuple(percents), shares(scored), shares(baseline), resources=total, links=links)

    def at(self, percent: int) -> tuple[float, float]:
        """(scored, baseline) recall at a budget of ``percent``."""
        i = self.percents.index(percent)
        return self.scored[i], self.baseline[i]

    def summary(self) -> dict:
        """The JSON form of the run summary."""
        return {
            "resources": self.resources,
            "links": self.links,
            "percent": list(self.percents),
            "scored": [round(r, 4) for r in self.scored],
            "baseline": [round(r, 4) for r in self.baseline],
        }

    def table(self) -> str:
        """A small plain-text table for the log: recall at 10, 25, 50 and 75 %."""
        shown = [p for p in (10, 25, 50, 75) if p in self.percents]
        rows = [
            f"recall when only the top X % of each level's links are followed "
            f"({self.resources} resources, {self.links} links):",
            f"{'X %':>9}  " + "  ".join(f"{p:>6}" for p in shown),
            f"{'by score':>9}  " + "  ".join(f"{self.at(p)[0]:>6.3f}" for p in shown),
            f"{'random':>9}  " + "  ".join(f"{self.at(p)[1]:>6.3f}" for p in shown),
        ]
        return "\n".join(rows)


def check_percents(percents: Sequence[int]) -> tuple[int, ...]:
    """``percents`` if they are budgets of a recall curve, increasing within (0, 100]; else ValueError."""
    if not percents or list(percents) != sorted(set(percents)) or not 0 < percents[0] <= percents[-1] <= 100:
        raise ValueError(f"the budgets of a recall curve increase within (0, 100], not {percents}")
    return tuple(percents)


def kept_counts(level: int, links: int, percents: Sequence[int]) -> list[int]:
    """How many of a level's ``links`` each budget of ``percents`` keeps: all of the seeds (level 0)."""
    return [links if level == 0 else kept_count(links, percent / 100) for percent in percents]


def needed_budget(position: int, counts: Sequence[int]) -> int:
    """The index of the smallest budget that keeps the link at ``position`` of its level's order, given the
    level's ``kept_counts`` (``len(counts)``: none): the number of budgets that keep fewer links."""
    return bisect_right(counts, position)


def recall_curve(
    links: Iterable[RecordedLink], found_on: Iterable[str], percents: Sequence[int] = PERCENTS
) -> RecallCurve:
    """The recall curve of a run from what it recorded: every URL once (level, source page, score) and, per
    resource, the URL whose fetch found it.

    A budget of X % keeps the top X % of each level's links (level 0, the seeds, is never cut); a URL is
    reached when it is kept and its source page, recorded at a lower level, was reached; a resource counts
    when the URL that found it was reached. URLs outside the recorded links (a search result page as a seed's
    source) count as reached; a source recorded at the same level or deeper (which no crawl records) never.
    A URL recorded twice counts as first recorded. A resource found on two paths counts on the one recorded
    only, so the curve is a lower bound.

    In one pass, level by level: each URL needs the larger of the smallest budget that keeps it and the budget
    its source needs. A harvest's curve is this one over the rows its store recorded
    (``store.runs.recall_curve``)."""
    percents = check_percents(percents)
    # per URL, the budgets (indexes) it needs by score and by chance; None while its level is not done
    needed: dict[str, tuple[int, int] | None] = {}
    levels: dict[int, list[RecordedLink]] = defaultdict(list)
    for link in links:
        if link.url not in needed:
            needed[link.url] = None
            levels[link.level].append(link)
    pairs = [[(s, b) for b in range(len(percents) + 1)] for s in range(len(percents) + 1)]  # shared by URLs
    for level in sorted(levels):
        level_links = levels.pop(level)
        counts = kept_counts(level, len(level_links), percents)
        # shuffle_key and by_priority as stable sorts by each part, last part first: lighter keys
        by_chance = sorted(range(len(level_links)), key=lambda i: level_links[i].url)
        by_chance.sort(key=lambda i: _shuffle_hash(level_links[i].url))
        by_score = sorted(by_chance, key=lambda i: -level_links[i].score)
        level_needs = []
        for link, own_score, own_chance in zip(
            level_links, _needed_budgets(by_score, counts), _needed_budgets(by_chance, counts), strict=True
        ):
            source = link.source
            if level == 0 or source is None or source not in needed:
                via = pairs[0][0]
            else:  # None: a source recorded at this level or deeper
                via = needed[source] or pairs[-1][-1]
            level_needs.append(pairs[max(own_score, via[0])][max(own_chance, via[1])])
        needed.update(zip((link.url for link in level_links), level_needs, strict=True))
    tallies = Counter(needed.get(url) or pairs[0][0] for url in found_on)
    return RecallCurve.tally(
        percents, ((s, b, count) for (s, b), count in tallies.items()), links=len(needed)
    )


def _needed_budgets(order: list[int], counts: Sequence[int]) -> list[int]:
    """Per link of a level, the index of the smallest budget that keeps it, from the level's ``order`` (link
    indexes, first followed first)."""
    needed = [0] * len(order)
    for position, i in enumerate(order):
        needed[i] = needed_budget(position, counts)
    return needed
