"""Link priority under hostile input: gigantic and binary anchors, 100,000 links on a page, broken budgets."""

from __future__ import annotations

import asyncio
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from aiohttp import web

from geoweb.crawl.jsonl import crawl_to_jsonl
from geoweb.harvest.params import HarvestParams, InvalidParams
from geoweb.links.extract import MAX_ANCHOR, extract_links
from geoweb.links.priority import LinkScorer, recall_curve
from geoweb.models import RecordedLink
from geoweb.settings import Settings

SCORER = LinkScorer.default()
GEO_LINKS = 10  # of the 100,000 links on the big page, these few say "WMS"
BIG_PAGE_LINKS = 100_000


def test_a_gigantic_anchor_is_capped_and_cheap():
    started = time.monotonic()
    links = extract_links('<a href="/x">' + "WMS layer " * 100_000 + "</a><a href=/y>KML</a>", "http://h/")
    assert time.monotonic() - started < 1.0
    assert [link.url for link in links] == ["http://h/x", "http://h/y"]
    assert len(links[0].anchor) == MAX_ANCHOR and links[0].anchor.startswith("WMS layer")
    # past libxml2's own limit on one text node the anchor is lost, not the link
    links = extract_links('<a href="/z">' + "x" * 11_000_000 + "</a>", "http://h/")
    assert [link.url for link in links] == ["http://h/z"] and len(links[0].anchor) <= MAX_ANCHOR


def test_an_anchor_with_many_children_costs_linear_time():
    started = time.monotonic()
    links = extract_links('<a href="/x">' + "<b></b>" * 200_000 + "WMS</a>", "http://h/")
    assert time.monotonic() - started < 2.0
    assert [link.url for link in links] == ["http://h/x"]


def test_binary_junk_in_anchors_scores_like_text():
    junk = os.urandom(4096).decode("latin-1")
    links = extract_links(
        f'<a href="/a">{junk}</a><a href="/b" title="\x00\x01">\x00WMS\x7f\udcff</a>', "http://h/"
    )
    assert [link.url for link in links] == ["http://h/a", "http://h/b"]
    scores = [SCORER.score(link.url, link.anchor, 1) for link in links]
    assert all(math.isfinite(s) and -1.1 <= s <= 1.0 for s in scores)
    assert scores[1] > 0  # the readable word still counts
    assert SCORER.score("http://h/\udcff\x00", "\udcff" * 10_000, 1) == SCORER.score("http://h/", "", 1)


def big_site(requests: list[str]) -> web.Application:
    geo = {i * (BIG_PAGE_LINKS // GEO_LINKS) for i in range(GEO_LINKS)}
    items = "".join(
        f'<a href="/p{i}.html">{"Regions WMS" if i in geo else "Next"}</a>\n' for i in range(BIG_PAGE_LINKS)
    )
    big = f"<html><body>{items}</body></html>"

    async def handle(request: web.Request) -> web.Response:
        requests.append(request.path)
        text = big if request.path == "/" else "<html><body>leaf</body></html>"
        return web.Response(text=text, content_type="text/html")

    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", handle)
    return app


def test_a_page_of_100k_links_is_scored_and_budgeted(tmp_path):
    requests: list[str] = []

    async def go():
        runner = web.AppRunner(big_site(requests))
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        settings = Settings(
            max_level=1, obey_robots=False, max_pages_per_host=1_000_000, link_budget=GEO_LINKS / BIG_PAGE_LINKS,
            allowed_hosts=frozenset({f"127.0.0.1:{port}"}),
        )  # fmt: skip
        try:
            with (tmp_path / "out.jsonl").open("w") as out:
                return await crawl_to_jsonl([f"http://127.0.0.1:{port}/"], settings, ["WMS"], out)
        finally:
            await runner.cleanup()

    started = time.monotonic()
    report = asyncio.run(go())
    assert time.monotonic() - started < 30  # about 6 s on an idle 2-core machine
    followed = [path for path in requests if path != "/"]
    assert sorted(followed) == sorted(f"/p{i * (BIG_PAGE_LINKS // GEO_LINKS)}.html" for i in range(GEO_LINKS))
    assert report.stats["budget/dropped"] == BIG_PAGE_LINKS - GEO_LINKS
    assert report.recall.links == BIG_PAGE_LINKS + 1


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        ({"link_budget": 0}, "param link_budget: 0 is less than or equal to the minimum of 0"),
        ({"link_budget": 1.5}, "param link_budget: 1.5 is greater than the maximum of 1"),
        ({"link_budget": "half"}, "param link_budget: 'half' is not of type 'number'"),
        ({"link_budget": math.nan}, "param link_budget: NaN is not a number"),
        ({"link_min_score": "high"}, "param link_min_score: 'high' is not of type 'number'"),
        ({"link_min_score": 5}, "param link_min_score: 5 is greater than the maximum of 1"),
    ],
)
def test_a_broken_budget_param_is_named(conf, message):
    with pytest.raises(InvalidParams) as raised:
        HarvestParams.from_conf({"seeds": ["http://example.org/"], **conf})
    assert str(raised.value) == message


def test_a_broken_budget_option_ends_the_cli_with_a_clear_line():
    geoweb = Path(sys.executable).with_name("geoweb")
    for value in ("0", "1.5", "nan", "half"):
        done = subprocess.run(
            [str(geoweb), "crawl", "--seed", "http://example.org/", "--link-budget", value],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 2
        assert f"argument --link-budget: a fraction in (0, 1] is needed, not '{value}'" in done.stderr
    done = subprocess.run(
        [str(geoweb), "crawl", "--seed", "http://example.org/"], capture_output=True, text=True, timeout=60,
        env={**os.environ, "GEOWEB_LINK_BUDGET": "2"},
    )  # fmt: skip
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        == "geoweb crawl: GEOWEB_LINK_BUDGET: a link budget is a fraction in (0, 1], not 2.0"
    )


def test_a_curve_over_inconsistent_records_ends():
    """Records a broken or tampered frontier could hold: a cycle, a source one level down, a missing source."""
    links = [
        RecordedLink("S", 0, None, 0.0),
        RecordedLink("A", 1, "B", 0.5), RecordedLink("B", 1, "A", 0.4),  # a cycle within a level
        RecordedLink("C", 1, "D", 0.3), RecordedLink("D", 2, "S", 0.2),  # a source deeper than its link
        RecordedLink("E", 1, "gone", 0.1),  # a source never recorded: counts as reached
    ]  # fmt: skip
    curve = recall_curve(links, ["A", "C", "E", "S"])
    assert curve.at(100) == (0.5, 0.5)  # S and E; the cycle and the upside-down path are never reached
