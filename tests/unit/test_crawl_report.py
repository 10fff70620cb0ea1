"""A crawl's totals are computed in one place: the table, the summary a harvest run stores and the GeoWeb
report tab all show those of ``CrawlReport.totals``."""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime

from geohub.reports import CRAWL_DAG, RunReport, render

from geoweb.crawl.report import CrawlReport, CrawlTotals
from geoweb.geohub.reports import CrawlRunReport
from geoweb.models import LevelStats

LEVELS = [
    LevelStats(0, urls=3, resources=1, seconds=0.4),
    LevelStats(1, urls=40, resources=5, failures=2, seconds=1.3, deferred=7, deferred_hosts=2),
    LevelStats(2, urls=11, failures=1, seconds=0.3),
]
BY_TYPE = Counter({"WMS": 2, "KML": 4})
STARTED = datetime(2024, 5, 1, 12)


def page(summary: dict | None) -> str:
    crawl = CrawlRunReport("run-1", "success", STARTED, STARTED, {}, summary, False, 6)
    return render(RunReport(CRAWL_DAG, "run-1", crawl=crawl), "/geohub")


def page_rows(html: str) -> list[list[str]]:
    """The cells of the page's per-level table, its total row last."""
    table = re.search(r'<table id="levels">.*?</table>', html, re.S).group(0)
    return [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table)[1:]]


def test_the_table_the_summary_and_the_report_tab_show_the_same_totals():
    report = CrawlReport.of_levels(LEVELS, BY_TYPE)
    totals = report.totals()
    assert totals == CrawlTotals(
        urls=54, resources=6, failures=3, deferred=7, deferred_hosts=2, seconds=2.0,
        by_type=(("KML", 4), ("WMS", 2)),
    )  # fmt: skip
    table = report.table().splitlines()
    figures = ["all", "54", "6", "3", "7", "0.1111", "2.0"]
    assert table[4].split() == figures
    assert table[5].endswith(": 2 at most in a level")
    assert table[6] == "resources by type: KML 4, WMS 2"
    summary = report.summary()
    assert (summary["urls"], summary["resources"], summary["deferred"]) == (54, 6, 7)
    assert summary["resources_by_type"] == {"KML": 4, "WMS": 2}
    # the report tab reads the stored summary back into the same totals
    assert CrawlReport.from_summary(summary).totals() == totals
    html = page(summary)
    assert page_rows(html)[-1] == figures
    assert [row[0] for row in page_rows(html)[:-1]] == ["0", "1", "2"]
    assert "7 URLs deferred: their hosts (2 at most in a level)" in html
    types = re.search(r'<table id="types">.*?</table>', html, re.S).group(0)
    assert re.findall(r">(\w+)</a></td><td class=\"n\">(\d+)<", types) == [("KML", "4"), ("WMS", "2")]


def test_a_summary_stored_before_deferred_urls_were_counted_shows_none_deferred():
    summary = {
        "levels": [
            {"level": 0, "urls": 3, "resources": 1, "failures": 0, "discovery_ratio": 0.3333, "seconds": 0.0},
            {"level": 1, "urls": 4, "resources": 0, "failures": 1, "discovery_ratio": 0.0, "seconds": 2.5},
        ],
        "urls": 7,
        "resources": 1,
        "resources_by_type": {"WMS": 1},
    }
    totals = CrawlReport.from_summary(summary).totals()
    assert (totals.urls, totals.resources, totals.deferred, totals.deferred_hosts) == (7, 1, 0, 0)
    html = page(summary)
    assert page_rows(html) == [
        ["0", "3", "1", "0", "0", "0.3333", "0.0"],
        ["1", "4", "0", "1", "0", "0.0000", "2.5"],
        ["all", "7", "1", "1", "0", "0.1429", "2.5"],
    ]
    assert 'id="deferred"' not in html


def test_a_summary_without_levels_has_no_figures_yet():
    assert "The run's figures are stored when it finishes." in page({"error": "still running"})
