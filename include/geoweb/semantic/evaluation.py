"""Precision, recall and F1 of the matcher on a labelled set (``tests/data/semantic/labelled.csv``).

A row's expected concepts are compared with the matched ones as sets of ids, strictly: a lake tagged
``hydrography`` is a false positive for hydrography and a miss of lake. Micro figures sum the counts over
concepts; macro figures average the per-concept F1 over every concept expected or predicted at least once.
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from geoweb.semantic.matcher import Matcher

NONE = "none"


@dataclass(frozen=True, slots=True)
class LabelledRow:
    source: str
    name: str
    title: str
    keywords: tuple[str, ...]
    properties: tuple[str, ...]
    expected: frozenset[str]


def _split(value: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in value.split(";") if v.strip())


def read_labelled(path: Path) -> list[LabelledRow]:
    """The rows of a labelled CSV (source, name, title, keywords, properties, expected)."""
    with path.open(newline="", encoding="utf-8") as f:
        return [
            LabelledRow(
                source=row["source"],
                name=row["name"],
                title=row["title"],
                keywords=_split(row["keywords"]),
                properties=_split(row["properties"]),
                expected=frozenset(_split(row["expected"])) - {NONE},
            )
            for row in csv.DictReader(f)
        ]


@dataclass(frozen=True, slots=True)
class Score:
    tp: int
    fp: int
    fn: int

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


@dataclass(slots=True)
class Evaluation:
    per_concept: dict[str, Score] = field(default_factory=dict)
    rows: int = 0
    exact_rows: int = 0  # rows whose matched set equals the expected set

    @property
    def micro(self) -> Score:
        return Score(*(sum(getattr(s, k) for s in self.per_concept.values()) for k in ("tp", "fp", "fn")))

    @property
    def macro_f1(self) -> float:
        scores = list(self.per_concept.values())
        return sum(s.f1 for s in scores) / len(scores) if scores else 1.0


def evaluate(matcher: Matcher, rows: Iterable[LabelledRow], *, use_schema: bool = True) -> Evaluation:
    """Match every row and score the concepts against the labels."""
    tp, fp, fn = Counter(), Counter(), Counter()
    result = Evaluation()
    for row in rows:
        properties = row.properties if use_schema else ()
        found = {m.concept for m in matcher.match(row.name, row.title, row.keywords, properties)}
        for concept in found & row.expected:
            tp[concept] += 1
        for concept in found - row.expected:
            fp[concept] += 1
        for concept in row.expected - found:
            fn[concept] += 1
        result.rows += 1
        result.exact_rows += found == row.expected
    for concept in sorted(set(tp) | set(fp) | set(fn)):
        result.per_concept[concept] = Score(tp[concept], fp[concept], fn[concept])
    return result
