"""Revisits within a budget: the change history a URL keeps, the probability that it changed since its last
visit, and which known URLs a run requests (``pagestates.revisits``, ``PageStates.due``)."""

from __future__ import annotations

import gzip
import json
import math
import random
import time

import pytest

from geoweb.crawl import pagestates
from geoweb.crawl.pagestates import STATE_VERSION, PageState, PageStates, revisits
from geoweb.errors import UnreadableState

DAY = 86400.0


def watched(visits: int, changes: int, last_visit: float = 10 * DAY, level: int = 1) -> PageState:
    """A page visited ``visits`` times a day apart after its first read, ``changes`` of them finding it
    changed."""
    return PageState(
        visits=visits, changes=changes, visited_at=last_visit, visit_seconds=visits * DAY, level=level
    )


def test_a_visit_counts_its_interval_and_whether_it_found_a_change():
    page = PageState(visited_at=100.0)
    page.count_visit(100.0 + DAY, changed=True)
    page.count_visit(100.0 + 3 * DAY, changed=False)
    assert (page.visits, page.changes, page.visit_seconds, page.visited_at) == (2, 1, 3 * DAY, 100 + 3 * DAY)


def test_the_change_probability_grows_with_the_time_since_the_last_visit_at_the_estimated_rate():
    page = watched(visits=10, changes=5)
    rate = page.scheduling_rate()
    assert page.change_probability(10 * DAY) == 0
    assert page.change_probability(12 * DAY) == pytest.approx(1 - math.exp(-rate * 2 * DAY))
    assert page.change_probability(11 * DAY) < page.change_probability(12 * DAY) < 1


def test_a_url_read_once_counts_as_changed_and_one_never_seen_changing_still_may_have():
    assert PageState(visited_at=DAY).change_probability(DAY) == 1.0
    never = watched(visits=10, changes=0)
    assert pagestates.change_rate(10, 0, DAY) == 0  # the estimator itself says never
    assert 0 < never.change_probability(20 * DAY) < 0.5 < never.change_probability(40 * DAY) < 1
    assert never.change_probability(20 * DAY) < watched(visits=10, changes=1).change_probability(20 * DAY)


def test_new_urls_are_never_counted_and_a_budget_of_k_revisits_k_known_urls():
    states = PageStates()
    states.pages = {f"https://example.org/{i}": watched(visits=3, changes=i % 3) for i in range(10)}
    for page in states.pages.values():
        page.read_at = time.time()  # read whole lately: the budget alone decides
    states.known, states.revisit_budget = frozenset(states.pages), 4
    assert sum(states.due(url) for url in states.pages) == 4
    assert states.due("https://example.org/new") is False  # never asked: the crawl fetches it as new
    not_chosen = next(url for url in states.pages if not states.due(url))
    states.pages[not_chosen].read_at = time.time() - pagestates.FULL_READ_SECONDS
    assert states.due(not_chosen)  # not read whole for a week: due whatever the budget
    assert sum(states.due(url) for url in states.pages) == 5
    assert len(revisits(states.pages, 11 * DAY, 0)) == 0
    assert len(revisits(states.pages, 11 * DAY, 100)) == 10


def test_without_a_budget_every_known_url_is_revisited():
    states = PageStates()
    states.pages = {"https://example.org/": watched(visits=3, changes=0)}
    states.known = frozenset(states.pages)
    assert states.due("https://example.org/")


def test_the_likeliest_to_have_changed_go_first_urls_read_once_before_all():
    pages = {
        "read-once": PageState(visited_at=10 * DAY),
        "changes-half-the-time": watched(visits=10, changes=5),
        "changed-once": watched(visits=10, changes=1),
        "never-changed": watched(visits=10, changes=0),
    }
    now = 12 * DAY
    assert revisits(pages, now, 1) == {"read-once"}
    assert revisits(pages, now, 2) == {"read-once", "changes-half-the-time"}
    assert revisits(pages, now, 3) == {"read-once", "changes-half-the-time", "changed-once"}
    same_history = {
        "visited-last-week": watched(10, 1, 5 * DAY),
        "visited-yesterday": watched(10, 1, 11 * DAY),
    }
    assert revisits(same_history, now, 1) == {"visited-last-week"}


def test_ties_go_to_the_lower_level():
    pages = {f"level-{level}": PageState(visited_at=DAY, level=level) for level in (3, 1, 2, 0)}
    assert revisits(pages, 2 * DAY, 2) == {"level-0", "level-1"}
    same = {f"level-{level}": watched(visits=4, changes=2, level=level) for level in (2, 0, 1)}
    assert revisits(same, 12 * DAY, 1) == {"level-0"}


def test_a_page_changing_faster_than_any_revisit_keeps_it_fresh_yields_to_one_a_revisit_keeps_fresh_longer():
    every_visit = watched(visits=10, changes=10, last_visit=11 * DAY)  # changed at each daily visit
    sometimes = watched(visits=10, changes=3, last_visit=9 * DAY)
    now = 12 * DAY
    assert every_visit.change_probability(now) > sometimes.change_probability(now)
    assert revisits({"every-visit": every_visit, "sometimes": sometimes}, now, 1) == {"sometimes"}


def test_a_state_file_without_visit_times_loads_its_history_restarting(tmp_path):
    path = tmp_path / "crawl.state"
    kept = {"signature": "abc", "read_at": 5 * DAY, "visits": 4, "changes": 2, "links": [["u", "a"]]}
    with gzip.open(path, "wt", encoding="utf-8") as file:
        json.dump({"version": 1, "pages": {"https://example.org/": kept}}, file)  # links as pairs of strings
    page = PageStates(path).get("https://example.org/")
    assert (page.visits, page.changes, page.visited_at, page.visit_seconds) == (0, 0, 5 * DAY, 0.0)
    assert page.links == [("u", "a")]


def test_a_state_file_holds_each_link_url_once_and_gives_back_every_page_s_links(tmp_path):
    path = tmp_path / "crawl.state"
    states = PageStates(path)
    nav = [("https://example.org/", "Home"), ("https://example.org/data", "Data")]
    for n in range(3):
        states.pages[f"https://example.org/{n}"] = PageState(signature=str(n), links=[*nav, (f"u{n}", "")])
    states.pages["https://example.org/empty"] = PageState(signature="e")
    states.save()
    with gzip.open(path, "rt", encoding="utf-8") as file:
        saved = json.load(file)
    assert saved["version"] == STATE_VERSION == 2
    assert sorted(saved["urls"]) == sorted(
        ["https://example.org/", "https://example.org/data", "u0", "u1", "u2"]
    )
    assert saved["pages"]["https://example.org/2"]["links"][1::2] == ["Home", "Data", ""]
    loaded = PageStates(path)
    assert {url: state.links for url, state in loaded.pages.items()} == {
        url: state.links for url, state in states.pages.items()
    }
    first, second = (
        loaded.get("https://example.org/0").links[0][0],
        loaded.get("https://example.org/1").links[0][0],
    )
    assert first is second  # one string for all the pages that link it


def test_a_state_file_of_an_unknown_version_is_refused_and_kept(tmp_path):
    """A newer geoweb may have written it: nothing replaces it (the command's refusal: test_crawl_state)."""
    path = tmp_path / "crawl.state"
    with gzip.open(path, "wt", encoding="utf-8") as file:
        json.dump({"version": 99, "pages": {"https://example.org/": {"links": "anything"}}}, file)
    written = path.read_bytes()
    with pytest.raises(UnreadableState, match="state file version 99, this geoweb reads 1 and 2"):
        PageStates(path)
    assert path.read_bytes() == written


def test_a_url_leaves_the_schedule_after_two_runs_gone_or_four_weeks_unreached():
    """One 404 is no proof: the state keeps the URL, asks it again whatever the budget, and carries nothing
    over from it; a second run in a row answering 404 or 410 forgets it. A URL no run reached for
    UNREACHED_SECONDS leaves too; one reached lately stays."""
    now = time.time()
    kml = {"url": "https://example.org/lakes.kml", "type": "KML", "title": "Lakes"}

    def run(states: PageStates, status: int | None) -> list:
        if status is not None:
            assert states.failed("https://example.org/gone", status)
        return states.not_found_again(set())

    states = PageStates(revisit_budget=0)
    states.pages = {
        "https://example.org/gone": PageState(resources=[kml], read_at=now, visited_at=now, etag='"1"'),
        "https://example.org/unreached": PageState(visited_at=now - pagestates.UNREACHED_SECONDS - 1),
        "https://example.org/kept": PageState(read_at=now, visited_at=now - pagestates.FULL_READ_SECONDS),
    }
    states.known = frozenset(states.pages)
    assert run(states, 404) == [(kml, "gone")]  # its page answered 404: its resources are gone this run
    kept = states.pages["https://example.org/gone"]
    assert (kept.gone_runs, kept.resources, kept.links, kept.etag) == (1, [], [], None)
    assert set(states.pages) == {"https://example.org/gone", "https://example.org/kept"}

    again = PageStates(revisit_budget=0)
    again.pages, again.known = dict(states.pages), frozenset(states.pages)
    assert again.due("https://example.org/gone")  # to confirm, though the budget asks nothing
    assert not again.due("https://example.org/kept")
    assert run(again, 410) == []
    assert set(again.pages) == {"https://example.org/kept"}


def test_a_page_back_after_one_404_starts_afresh():
    states = PageStates()
    states.pages = {"https://example.org/p": PageState(visited_at=time.time())}
    states.failed("https://example.org/p", 404)
    assert states.pages["https://example.org/p"].gone_runs == 1
    states.remember("https://example.org/p", _response(b"back"), [], [])
    assert states.pages["https://example.org/p"].gone_runs == 0
    assert "https://example.org/p" not in states.gone_pages


def _response(body: bytes):
    from geoweb.fetch import Response

    return Response(
        "https://example.org/p", "https://example.org/p", 200, {"content-type": "text/html"}, body
    )


def test_a_resource_carried_over_is_the_one_its_page_gave():
    """What a page's state keeps of a resource gives back the same resource, the sha256 of its document
    included (a revisit compares it), so a carried-over resource is stored as a fresh read stores it."""
    from geoweb.crawl.pagestates import held_record
    from geoweb.models import Dataset, Resource, resource_from_record

    read = Resource(
        url="https://example.org/wmts", type="WMTS", version="1.0.0", title="Tiles", keywords=["a"],
        datasets=[Dataset("layer", "Layer", (1.0, 2.0, 3.0, 4.0), ["k"], {"formats": ["image/png"]}, ["c"])],
        bbox=(1.0, 2.0, 3.0, 4.0), extra={"get_tile_encoding": "KVP"}, content_sha256="ab" * 32,
        conformance="conformant", level=2, source_page="https://example.org/", discovered_at="2026-12-04T00:00:00",
    )  # fmt: skip
    held = json.loads(json.dumps(held_record(read)))  # as the state file or table gives it back
    assert resource_from_record(held) == read


def test_a_page_another_version_of_the_readers_read_is_read_again():
    """A state kept by other detector code (or before states named it) is asked without validators and read
    whole, never carried over, whatever the budget: its resources are what that code made of the page."""
    from geoweb.crawl.pagestates import page_state
    from geoweb.models import sha256

    now = time.time()
    kept = {"etag": '"1"', "read_at": now, "visited_at": now, "signature": sha256(b"<html/>")}
    current = page_state(kept | {"readers": pagestates.READERS})
    assert current.conditions(now) == {"If-None-Match": '"1"'}
    for other in (page_state(kept), page_state(kept | {"readers": "an older one"})):
        states = PageStates(revisit_budget=0)
        states.pages, states.known = {"https://example.org/p": other}, frozenset({"https://example.org/p"})
        assert other.conditions(now) == {} and states.due("https://example.org/p")
        assert states.unchanged("https://example.org/p", _response(b"<html/>"), {}) is None


def test_a_resource_another_page_gave_first_is_tagged_only_when_a_later_run_keeps_it():
    """Concept tagging is done once per resource a run keeps: a page whose resource another page gave first
    keeps it untagged in its state, and a later run that carries the page over tags it if it keeps it."""
    import asyncio

    from geoweb.crawl.engine import Crawler
    from geoweb.fetch import Response
    from geoweb.models import Dataset, Resource, resource_from_record
    from geoweb.settings import Settings

    class Seen(set):
        def add(self, key) -> bool:
            new = key not in self
            super().add(key)
            return new

    def rivers() -> Resource:
        return Resource("https://example.org/wms", "WMS", datasets=[Dataset("rivers", "Rivers and canals")])

    class Detector:
        name, types = "wms", frozenset({"WMS"})

        def accepts(self, response) -> bool:
            return True

        async def detect(self, response, ctx) -> list[Resource]:
            return [rivers()]

    async def fetch(url, **kwargs):
        links = b'<a href="/b">b</a>' if url.endswith("/a") else b""
        return Response(
            url, url, 200, {"content-type": "text/html"}, b"<html><body>" + links + b"</body></html>"
        )

    states = PageStates()
    crawler = Crawler(fetch, [Detector()], settings=Settings(max_level=1), seen=Seen(), pages=states)
    report = asyncio.run(crawler.crawl(["https://example.org/a"]))
    assert report.resources == 1
    first, second = (states.pages[f"https://example.org/{p}"].resources[0] for p in "ab")
    assert "tagged" not in first and first["dataset_list"][0]["concepts"]  # tagged where the run kept it
    assert second["tagged"] is False and second["dataset_list"][0]["concepts"] == []

    later = Crawler(fetch, [Detector()], settings=Settings(max_level=1), seen=Seen(), pages=PageStates())
    held = ("https://example.org/wms", "WMS")
    kept, _ = asyncio.run(later.record([resource_from_record(second)], 0, None, untagged={held}))
    assert kept and kept[0].datasets[0].concepts == first["dataset_list"][0]["concepts"]


def test_a_budget_in_bytes_takes_the_urls_in_order_while_their_last_reads_fit():
    now = 11 * DAY
    pages = {f"https://example.org/{i}": watched(visits=3, changes=i) for i in range(4)}  # worth most: /3
    for i, page in enumerate(pages.values()):
        page.read_at, page.size = now, 100 * (i + 1)
    order = sorted(pages, key=lambda url: pagestates.revisit_key(url, pages[url], now))
    assert order == [f"https://example.org/{i}" for i in (3, 2, 1, 0)]

    def due(budget: int | None, budget_bytes: int | None) -> list[str]:
        cutoff = pagestates.revisit_cutoff(pages.items(), now, budget, budget_bytes)
        return [u for u in order if cutoff is None or pagestates.revisit_key(u, pages[u], now) <= cutoff]

    assert due(None, 400) == order[:1] and due(None, 699) == order[:1] and due(None, 700) == order[:2]
    assert due(None, 1000) == due(None, 10**9) == order and due(None, 399) == due(None, 0) == []
    assert due(1, 10**9) == order[:1] and due(3, 700) == order[:2]  # both bounds hold
    assert due(2, None) == order[:2] and due(0, None) == []


def test_the_cutoff_drawn_in_one_pass_is_the_sorted_prefix_that_fits():
    rng = random.Random(7)
    now = 40 * DAY
    for _ in range(50):
        pages = [
            (
                f"https://example.org/{i}",
                watched(rng.randint(0, 5), 0, rng.uniform(DAY, 39 * DAY), rng.randint(0, 3)),
            )
            for i in range(rng.randint(0, 60))
        ]
        for _, page in pages:
            page.changes, page.read_at, page.size = rng.randint(0, page.visits), now, rng.randint(0, 5000)
        budget = rng.choice([None, rng.randint(0, 70)])
        budget_bytes = (
            rng.choice([None, rng.randint(0, 200_000)]) if budget is not None else rng.randint(0, 200_000)
        )
        ranked = sorted((pagestates.revisit_key(url, page, now), page.size) for url, page in pages)
        taken, spent = 0, 0
        while taken < len(ranked) and (budget is None or taken < budget):
            if budget_bytes is not None and spent + ranked[taken][1] > budget_bytes:
                break
            spent += ranked[taken][1]
            taken += 1
        expected = None if taken == len(ranked) else ranked[taken - 1][0] if taken else pagestates.NONE_DUE
        assert pagestates.revisit_cutoff(pages, now, budget, budget_bytes) == expected
