"""Topical link priority on the local GeoWeb: the recall curve of a full crawl against its random baseline,
and a crawl under a budget of half of each level's links against the ground truth."""

from __future__ import annotations

import asyncio
import io
import json

import pytest

from geoweb.crawl.jsonl import crawl_to_jsonl
from geoweb.crawl.report import CrawlReport
from geoweb.models import ALL_TYPES
from geoweb.settings import Settings

pytestmark = pytest.mark.testweb

MAX_LEVEL = 5


def crawl(manifest: dict, **settings) -> tuple[set[tuple[str, str]], CrawlReport]:
    s = Settings(max_level=MAX_LEVEL, allowed_hosts=frozenset({"127.0.0.1"}), **settings)
    out = io.StringIO()
    report = asyncio.run(crawl_to_jsonl(manifest["seeds"], s, ALL_TYPES, out))
    return {(r["url"], r["type"]) for r in map(json.loads, out.getvalue().splitlines())}, report


@pytest.fixture(scope="module")
def full(testweb):
    return crawl(testweb)


def linked(manifest: dict) -> set[tuple[str, str]]:
    return {
        (r["url"], r["type"])
        for r in manifest["resources"]
        if r["via"] == "links" and r["level"] <= MAX_LEVEL
    }


def test_scoring_keeps_more_recall_than_a_random_order(testweb, full, capsys):
    found, report = full
    curve = report.recall
    assert linked(testweb) <= found and curve.resources == len(found)
    assert curve.at(100) == (1.0, 1.0)
    for percent in (25, 50, 75):
        scored, baseline = curve.at(percent)
        assert scored >= baseline, (percent, scored, baseline)
    assert sum(curve.scored) > sum(curve.baseline)  # over the whole curve, the scores buy recall
    with capsys.disabled():
        print(f"\n{curve.table()}")


def test_the_curve_predicts_a_crawl_under_a_half_budget(testweb, full, capsys):
    found, report = full
    half_found, half = crawl(testweb, link_budget=0.5)
    assert half.stats["budget/dropped"] > 0 and half.urls < report.urls
    assert half_found <= found
    # the curve, computed from the full crawl, estimates the recall of a crawl under the budget; they differ
    # as a budgeted level chooses only among the links of the pages kept above it
    recall, predicted = len(half_found) / len(found), report.recall.at(50)[0]
    assert abs(recall - predicted) <= 0.15, (recall, predicted)
    with capsys.disabled():
        print(
            f"\nhalf budget: {len(half_found)} of {len(found)} resources ({recall:.3f}; the curve said "
            f"{predicted:.3f}), {half.urls} of {report.urls} URLs fetched, "
            f"{half.requests} of {report.requests} requests"
        )
