"""Hostile and broken OGC API documents: each ends as a logged, counted miss (or a resource without the broken
part), with a bounded number of requests, and the rest of the crawl loses nothing."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import time

import pytest

from geoweb.crawl.jsonl import crawl_to_jsonl
from geoweb.detect.ogcapi import OGCAPIDetector
from geoweb.errors import ConnectionFailed
from geoweb.models import OGCAPI_TYPES
from geoweb.settings import Settings
from tests.hostile.servers import PagesServer, loopback_settings
from tests.unit.test_ogcapi import PYGEOAPI, SERVED, APIWeb, captured, response

FEATURES = "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core"
LANDING = {"title": "API", "links": [{"rel": "conformance", "href": "http://h/conformance"},
                                     {"rel": "data", "href": "http://h/collections"}]}  # fmt: skip
CONFORMANCE = {"conformsTo": [FEATURES]}
HTML_ERROR = b"<!DOCTYPE html><html><body><h1>Oops</h1><p>Something went wrong.</p></body></html>"


def encode(document) -> bytes:
    return json.dumps(document).encode()


def items(n: int) -> dict:
    link = [{"rel": "items", "href": "i"}]
    return {"collections": [{"id": f"c{i}", "links": link} for i in range(n)]}


def run(resp, web: APIWeb, caplog, settings: Settings | None = None):
    """The detector on ``resp`` within ``web``: (resources, stats, what it logged)."""
    ctx = web.context(settings=settings)
    with caplog.at_level(logging.INFO, logger="geoweb.detect"):
        found = asyncio.run(OGCAPIDetector().detect(resp, ctx))
    return found, ctx.stats, caplog.text


@pytest.mark.parametrize(
    ("name", "body", "pages", "reason", "logged"),
    [
        ("truncated landing page", encode(LANDING)[:-9], {}, "not_ogcapi", "not JSON"),
        ("NaN in the landing page", b'{"links": [], "conformsTo": [], "x": NaN}', {}, "not_ogcapi", "NaN"),
        ("deeply nested", b'{"links": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", {}, "unsafe_content", "deeply"),
        ("a JSON array", b'[{"links": [{"rel": "conformance", "href": "c"}]}]', {}, "not_ogcapi", "neither a landing"),
        ("conformance is a 404 HTML page", encode(LANDING), {}, "not_ogcapi", "HTTP 404"),
        ("conformance is an HTML error page with 200", encode(LANDING),
         {"http://h/conformance": (200, "application/json", HTML_ERROR),
          "http://h/conformance?f=json": (200, "application/json", HTML_ERROR)},
         "not_ogcapi", "conformance?f=json did not answer with JSON"),
        ("conformance cut at the cap", encode(LANDING),
         {"http://h/conformance": (200, "application/json", encode(CONFORMANCE)[:-3])}, "not_ogcapi", "not JSON"),
        ("conformsTo of the wrong type", encode(LANDING),
         {"http://h/conformance": encode({"conformsTo": {"a": FEATURES}})}, "not_ogcapi", "lists no class, and neither its links"),
        ("conformsTo of numbers", encode(LANDING),
         {"http://h/conformance": encode({"conformsTo": [1, None, True]})}, "not_ogcapi", "lists no class"),
        ("only OGC API Common", encode(LANDING),
         {"http://h/conformance": encode({"conformsTo": ["http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/core"]})},
         "not_ogcapi", "names no OGC API class"),
        ("conformance link back to the landing page",
         encode({"links": [{"rel": "conformance", "href": "http://h/api"}]}),
         {"http://h/api": encode({"links": [{"rel": "conformance", "href": "http://h/api"}]})},
         "not_ogcapi", "lists no class"),
        ("conformance unreachable", encode(LANDING),
         {"http://h/conformance": ConnectionFailed("refused")}, "not_ogcapi", "refused"),
    ],
)  # fmt: skip
def test_a_broken_landing_page_is_a_logged_miss(name, body, pages, reason, logged, caplog):
    web = APIWeb(pages)
    found, stats, text = run(response("http://h/api", body), web, caplog)
    assert found == []
    assert stats[f"ogcapi/miss/{reason}"] == 1, text
    assert logged in text and "http://h/api" in text
    # an HTML answer is asked for once more with f=json; an unread conformance costs the collections too
    assert len(web.requested) <= 3


@pytest.mark.parametrize(
    ("name", "url", "body", "pages", "requested"),
    [
        ("a collection whose root is itself", "http://h/collections/x",
         encode({"id": "x", "links": [{"rel": "root", "href": "http://h/collections/x"}]}), {},
         ["http://h/"]),
        ("a root link to another host is not followed", "http://h/collections/x",
         encode({"id": "x", "links": [{"rel": "root", "href": "http://evil.example/"}]}), {}, ["http://h/"]),
        ("an HTML soft 404 with f=html", "http://h/nothing?f=html", HTML_ERROR, {}, ["http://h/nothing"]),
        ("a landing page answering HTML to JSON requests", "http://h/collections?f=html", HTML_ERROR,
         {"http://h/": (200, "application/json", HTML_ERROR)}, ["http://h/", "http://h/?f=json"]),
    ],
)  # fmt: skip
def test_links_leading_nowhere_cost_a_request_or_two(name, url, body, pages, requested, caplog):
    web = APIWeb(pages)
    content_type = "text/html" if body == HTML_ERROR else "application/json"
    found, stats, text = run(response(url, body, content_type), web, caplog)
    assert found == []
    assert web.requested == requested
    assert stats["ogcapi/miss/not_ogcapi"] == 1, text


def test_an_error_status_is_a_miss_without_requests(caplog):
    web = APIWeb({})
    found, stats, _ = run(response("http://h/api", encode(LANDING), status=500), web, caplog)
    assert (found, dict(stats), web.requested) == ([], {"ogcapi/miss/http_status": 1}, [])


def test_a_body_over_the_cap_or_cut_is_a_miss(caplog):
    web = APIWeb({})
    small = Settings(max_body_bytes=100)
    big = encode({**LANDING, "description": "x" * 1000})
    assert run(response("http://h/api", big), web, caplog, small)[1]["ogcapi/miss/unsafe_content"] == 1
    cut = response("http://h/api", big)
    cut.complete = False
    assert run(cut, web, caplog)[1]["ogcapi/miss/malformed"] == 1
    assert web.requested == []


def conformant(collections: bytes | tuple, **more) -> APIWeb:
    return APIWeb({"http://h/conformance": encode(CONFORMANCE), "http://h/collections": collections, **more})


@pytest.mark.parametrize(
    ("name", "collections", "datasets"),
    [
        ("collections not a list", encode({"collections": "lakes"}), []),
        ("collections of the wrong types", encode({"collections": [1, None, "x", [], {"id": 7}]}), []),
        ("a collection with every member wrong", encode({"collections": [
            {"id": "lakes", "title": ["x"], "keywords": {"a": 1}, "itemType": 5, "links": "items",
             "extent": {"spatial": {"bbox": "everywhere"}}}]}),
         [("lakes", None, None, [])]),  # no link tells its API: the one API declared serves it
        ("extents out of range", encode({"collections": [
            {"id": "a", "links": [{"rel": "items", "href": "i"}], "extent": {"spatial": {"bbox": [[-200, 95, 300, 99]]}}},
            {"id": "b", "links": [{"rel": "items", "href": "i"}], "extent": {"spatial": {"bbox": [[1e308, 0, "HUGE", 1]]}}},
            {"id": "c", "links": [{"rel": "items", "href": "i"}], "extent": {"spatial": {"bbox": [[0, 0, 1, 1]]}}},
        ]}).replace(b'"HUGE"', b"1e999"), [("a", None, None, []), ("b", None, None, []), ("c", None, (0.0, 0.0, 1.0, 1.0), [])]),
        ("collections answering 500", (500, "text/html", HTML_ERROR), []),
        ("collections answering an HTML page with 200", (200, "application/json", HTML_ERROR), []),
    ],
)  # fmt: skip
def test_broken_collections_leave_the_api_without_those_datasets(name, collections, datasets, caplog):
    """The conformance declaration proves the API; what cannot be read of its collections is left out."""
    web = conformant(collections)
    [features], stats, text = run(response("http://h/", encode(LANDING)), web, caplog)
    assert features.type == "OGCAPI-FEATURES"
    assert [(d.name, d.title, d.bbox, d.keywords) for d in features.datasets] == datasets
    assert web.requested[:2] == ["http://h/conformance", "http://h/collections"] and len(web.requested) <= 3
    if not datasets and "unread" in str(stats):
        assert "collections of http://h/ not read" in text


def test_a_gigantic_collection_list_is_capped_and_its_next_page_not_followed(caplog):
    listing = {**items(50_000), "links": [{"rel": "next", "href": "http://h/collections?page=2"}]}
    web = conformant(encode(listing))
    started = time.monotonic()
    [features], stats, text = run(response("http://h/", encode(LANDING)), web, caplog)
    assert len(features.datasets) == Settings().ogcapi_max_datasets
    assert stats["ogcapi/capped"] == 1
    assert "next page of collections" in text
    assert web.requested == ["http://h/conformance", "http://h/collections"]
    assert time.monotonic() - started < 5


def test_a_lying_content_type_does_not_matter(caplog):
    """JSON served as image/png is still read as JSON; the media type is never the proof."""
    web = conformant(encode(items(1)))
    [features], _, _ = run(response("http://h/", encode(LANDING), "image/png"), web, caplog)
    assert [d.name for d in features.datasets] == ["c0"]


def pygeoapi_pages(base: str) -> dict[str, tuple[str, bytes]]:
    """The captured pygeoapi documents, served under ``base``."""
    names = {"": "landing.json", "/conformance": "conformance.json", "/collections": "collections.json",
             "/processes": "processes.json", "/openapi": "openapi.json"}  # fmt: skip
    return {
        f"/good{path}": (
            "application/json",
            captured(name).replace(PYGEOAPI.encode(), base.encode() + b"/good"),
        )
        for path, name in names.items()
    }


def test_a_crawl_through_hostile_apis_finds_the_good_one(caplog):
    hostile = {
        "/truncated": encode(LANDING)[:-9],
        "/nan": b'{"links": [], "conformsTo": [], "x": NaN}',
        "/nested": b'{"links": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        "/no-conformance": encode({"links": [{"rel": "conformance", "href": "/no-conformance/conformance"}]}),
        "/loop/collections/x": encode({"links": [{"rel": "root", "href": "/loop/collections/x"}]}),
    }
    links = [*hostile, "/good/collections/lakes?f=html", "/good/conformance"]
    seed = "".join(f'<a href="{link}">x</a>' for link in links).encode()
    pages = {"/": ("text/html", b"<html><body>" + seed + b"</body></html>")}
    pages |= {path: ("application/json", body) for path, body in hostile.items()}
    with PagesServer(pages) as site:
        site.pages |= pygeoapi_pages(site.url(""))
        site.pages["/good/collections/lakes"] = ("text/html", captured("collection_lakes.html"))
        out = io.StringIO()
        with caplog.at_level(logging.INFO):
            report = asyncio.run(
                crawl_to_jsonl([site.url("/")], loopback_settings(site, max_level=1), OGCAPI_TYPES, out)
            )
        requested = list(site.seen)
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    assert {r["type"]: sorted(d["name"] for d in r["dataset_list"]) for r in records} == {
        api: sorted(names) for api, names in SERVED.items()
    }
    assert {r["url"] for r in records} == {site.url("/good")}
    assert report.stats["ogcapi/miss/not_ogcapi"] == 4 and report.stats["ogcapi/miss/unsafe_content"] == 1
    # the good API: its landing page, conformance (crawled, then read), collections, processes and service
    # description, each read once
    good = [
        "/good",
        "/good/collections",
        "/good/conformance",
        "/good/conformance",
        "/good/openapi",
        "/good/processes",
    ]
    assert sorted(p for p in requested if p.startswith("/good") and "lakes" not in p) == good
    assert {r["provider"] for r in records} == {"GeoWeb Test Agency"}


def test_a_landing_page_lying_about_itself_is_reported_where_it_was_fetched(caplog):
    lying = {**LANDING, "links": [*LANDING["links"], {"rel": "self", "href": "http://elsewhere.example/api"}]}
    web = conformant(encode(items(1)))
    [features], _, _ = run(response("http://h/api/?f=json", encode(lying)), web, caplog)
    assert features.url == "http://h/api"
    assert not any("elsewhere" in url for url in web.requested)
