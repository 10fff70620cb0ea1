"""Topical link priority: the scorer, the order of a level, the budget, and the recall curve on a known graph."""

from __future__ import annotations

import asyncio
import math

import pytest
from aiohttp import web

from geoweb.crawl.jsonl import crawl_to_jsonl
from geoweb.crawl.report import CrawlReport
from geoweb.links.priority import (
    DEPTH_WEIGHT,
    PERCENTS,
    LinkScorer,
    _parse_vocabulary,
    apply_budget,
    kept_count,
    recall_curve,
)
from geoweb.models import LevelStats, Link, RecordedLink
from geoweb.settings import Settings

SCORER = LinkScorer.default()


def test_the_shipped_vocabulary_holds_the_geospatial_terms():
    for term in ("getcapabilities", "wms", "wfs", "ows", "geoserver", "mapserver", "arcgis rest", "ogc api",
                 "collections", "stac", "kml", "kmz", "shapefile", "shp", "geojson", "geotiff", "cog", "gis",
                 "map", "spatial", "geospatial", "geoportal", "sdi", "metadata", "catalogue", "csw", "dataset",
                 "download", "layer", "elevation"):  # fmt: skip
        assert term in SCORER.words or f" {term} " in dict(SCORER.phrases), term
    assert SCORER.words["calendar"] < 0 < SCORER.words["map"] < SCORER.words["wms"]


def test_a_broken_vocabulary_line_is_named():
    assert _parse_vocabulary("# note\n0.5 Web  Map\n\n-0.3 login # why\n") == {"web map": 0.5, "login": -0.3}
    for bad in ("1.0 wms", "0.5", "x wms", "0.5 ..."):
        with pytest.raises(ValueError, match="vocabulary line 2"):
            _parse_vocabulary(f"0.1 ok\n{bad}\n")


@pytest.mark.parametrize(
    ("better", "worse"),
    [
        (("http://h/cgi-bin/mapserv?map=r&SERVICE=WMS&REQUEST=GetCapabilities", "Regions"), ("http://h/about", "About us")),
        (("http://h/files/trails.kml", "Hiking trails"), ("http://h/trails.html", "Hiking trails")),
        (("http://h/page", "Web Map Service"), ("http://h/page", "web service map")),  # a phrase is in order
        (("http://h/arcgis/rest/services", "Services"), ("http://h/rest/arcgis", "Services")),
        (("http://h/data.html", "Open data catalogue"), ("http://h/news.html", "News")),
        (("http://h/news.html", "News"), ("http://h/calendar?m=1", "Events calendar")),
        (("http://h/x", "x"), ("http://h/login", "Log in")),
    ],
)  # fmt: skip
def test_geospatial_links_score_above_others(better, worse):
    assert SCORER.score(*better, 1) > SCORER.score(*worse, 1)


def test_scores_are_bounded_and_repeats_add_nothing():
    once = SCORER.score("http://h/wms", "WMS", 1)
    assert SCORER.score("http://h/wms/wms/wms", "WMS " * 500, 1) == once
    assert SCORER.score("http://h/x", "", 1) == -DEPTH_WEIGHT
    everything = " ".join(SCORER.words)
    assert (
        -1.0 - 5 * DEPTH_WEIGHT
        <= SCORER.score("http://h/" + everything.replace(" ", "/"), everything, 5)
        <= 1.0
    )
    # the depth term: the same link one hop deeper scores DEPTH_WEIGHT less
    assert SCORER.score("http://h/a.kml", "KML", 3) == pytest.approx(
        SCORER.score("http://h/a.kml", "KML", 2) - 0.05
    )


def test_relevance_combines_terms_as_independent_evidence():
    scorer = LinkScorer({"wms": 0.9, "map": 0.5, "login": -0.8})
    assert scorer.relevance("WMS map") == pytest.approx(1 - 0.1 * 0.5)
    assert scorer.relevance("map login") == pytest.approx(0.5 - 0.8)
    assert scorer.relevance("nothing here") == 0.0


def test_the_budget_keeps_the_top_fraction_and_the_minimum_score():
    links = [Link(f"http://h/{i}", "http://h/", score) for i, score in enumerate([0.1, 0.9, -0.4, 0.5, 0.3])]
    kept, dropped = apply_budget(links, 0.5, -math.inf)  # ceil(2.5) = 3
    assert [link.score for link in kept] == [0.9, 0.5, 0.3]
    assert sorted(link.score for link in dropped) == [-0.4, 0.1]
    kept, dropped = apply_budget(links, 1.0, 0.2)
    assert [link.score for link in kept] == [0.9, 0.5, 0.3] and len(dropped) == 2
    assert apply_budget(links, 1.0, -math.inf)[1] == []
    assert [kept_count(n, 0.05) for n in (0, 1, 19, 20, 21)] == [0, 1, 1, 1, 2]
    for fraction in (0.0, -0.5, 1.5, math.nan):
        with pytest.raises(ValueError, match="fraction"):
            kept_count(10, fraction)


def test_equal_scores_keep_a_fixed_order_that_is_not_the_urls():
    links = [Link(f"http://h/{i:03d}", None, 0.0) for i in range(200)]
    first, _ = apply_budget(links, 0.1, -math.inf)
    again, _ = apply_budget(list(reversed(links)), 0.1, -math.inf)
    assert first == again
    assert {link.url for link in first} != {link.url for link in links[:20]}


# A known graph: seed S; level 1: A 0.9, B 0.5, C 0.1, D -0.5 (all from S); level 2: E 0.8 (from A), G 0.7
# (from D), F 0.2 (from C), H 0.0 (from B). Resources were found on S, A, E, F and G.
GRAPH = [
    RecordedLink("S", 0, None, 0.0),
    RecordedLink("A", 1, "S", 0.9), RecordedLink("B", 1, "S", 0.5), RecordedLink("C", 1, "S", 0.1),
    RecordedLink("D", 1, "S", -0.5),
    RecordedLink("E", 2, "A", 0.8), RecordedLink("G", 2, "D", 0.7), RecordedLink("F", 2, "C", 0.2),
    RecordedLink("H", 2, "B", 0.0),
]  # fmt: skip
FOUND_ON = ["S", "A", "E", "F", "G"]


def test_the_recall_curve_of_a_known_graph():
    curve = recall_curve(GRAPH, FOUND_ON)
    assert curve.percents == PERCENTS and (curve.resources, curve.links) == (5, 9)
    # 25 %: one link per level: A, then E (from A): S, A, E found. 50 %: A, B; E, G but G's source D is cut.
    # 75 %: A, B, C; E, G, F: F's source C is kept now. 80 % and more: every link.
    expected = {5: 0.6, 25: 0.6, 50: 0.6, 55: 0.8, 75: 0.8, 80: 1.0, 100: 1.0}
    assert {p: curve.at(p)[0] for p in expected} == expected
    assert curve.scored == (0.6,) * 10 + (0.8,) * 5 + (1.0,) * 5
    assert curve.at(100)[1] == 1.0
    summary = curve.summary()
    assert summary["percent"][:3] == [5, 10, 15] and summary["scored"][-1] == 1.0
    assert "by score" in curve.table() and "0.600" in curve.table()


def test_the_baseline_is_the_curve_of_a_random_order():
    flat = [link._replace(score=0.0) for link in GRAPH]  # equal scores: ties fall to the fixed random order
    assert recall_curve(GRAPH, FOUND_ON).baseline == recall_curve(flat, FOUND_ON).scored


def test_recall_curve_edge_cases():
    assert recall_curve([], []).scored == (1.0,) * len(PERCENTS)  # nothing found: nothing lost
    # a resource found on a URL the run did not record (a seed's search result page) is never cut
    assert recall_curve(GRAPH, ["elsewhere", "H"]).at(25)[0] == 0.5
    # a URL recorded twice counts as first recorded: here E at level 2 from A
    assert recall_curve([*GRAPH, RecordedLink("E", 1, "S", -0.9)], FOUND_ON) == recall_curve(GRAPH, FOUND_ON)
    assert recall_curve(GRAPH, FOUND_ON, (25, 100)).scored == (0.6, 1.0)
    for percents in ((), (50, 25), (0, 50), (50, 101), (25, 25)):
        with pytest.raises(ValueError, match="budgets of a recall curve"):
            recall_curve(GRAPH, FOUND_ON, percents)


def test_the_report_plots_the_curve_as_a_third_panel(tmp_path):
    report = CrawlReport(levels=[LevelStats(0, 1, 1), LevelStats(1, 4, 2), LevelStats(2, 4, 2)])
    report.plot(tmp_path / "two.png")
    report.recall = recall_curve(GRAPH, FOUND_ON)
    report.plot(tmp_path / "three.png")
    from PIL import Image

    assert Image.open(tmp_path / "three.png").width == Image.open(tmp_path / "two.png").width * 3 // 2


# --- the engine over a real loopback site ---

ANCHORS = {  # path -> anchor text, best first by the vocabulary
    "/ows": "Regions WMS layers",
    "/files/trails.kml": "Hiking trails (KML)",
    "/catalogue.html": "Data catalogue",
    "/maps.html": "Maps",
    "/about.html": "About us",
    "/calendar.html": "Events calendar",
}


def make_site(order: list[str]) -> web.Application:
    async def handle(request: web.Request) -> web.Response:
        order.append(request.path)  # probes of the WMS endpoint repeat its path
        if request.path == "/":
            links = "".join(
                f'<li><a href="{href}">{text}</a></li>' for href, text in reversed(ANCHORS.items())
            )
            return web.Response(text=f"<html><body><ul>{links}</ul></body></html>", content_type="text/html")
        return web.Response(text="<html><body>nothing</body></html>", content_type="text/html")

    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", handle)
    return app


def crawl_site(tmp_path, **settings) -> tuple[list[str], CrawlReport]:
    order: list[str] = []

    async def go():
        runner = web.AppRunner(make_site(order))
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        s = Settings(max_level=1, per_host_concurrency=1, obey_robots=False, **settings)
        s = s.with_(allowed_hosts=frozenset({f"127.0.0.1:{port}"}))
        try:
            with (tmp_path / "out.jsonl").open("w") as out:
                return await crawl_to_jsonl([f"http://127.0.0.1:{port}/"], s, ["WMS"], out)
        finally:
            await runner.cleanup()

    report = asyncio.run(go())
    return [path for path in dict.fromkeys(order) if path != "/"], report


def test_a_level_is_fetched_best_score_first(tmp_path):
    fetched, report = crawl_site(tmp_path)
    assert fetched == list(ANCHORS)  # the page lists them worst first
    assert report.stats["budget/dropped"] == 0


def test_the_budget_drops_the_low_scores_and_counts_them(tmp_path):
    fetched, report = crawl_site(tmp_path, link_budget=0.5)
    assert fetched == list(ANCHORS)[:3]
    assert report.stats["budget/dropped"] == 3
    fetched, report = crawl_site(tmp_path, link_min_score=0.1)
    assert fetched == list(ANCHORS)[:4] and report.stats["budget/dropped"] == 2
    assert report.recall.links == 7  # the curve counts every link the run saw, followed or not
