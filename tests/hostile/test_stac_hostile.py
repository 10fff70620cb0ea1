"""Hostile and broken STAC input: each ends as no resource with a logged, counted reason, or as a resource
that keeps only what could be trusted; a bounded number of requests either way, and nothing else lost."""

import asyncio
import io
import json
import logging
from pathlib import Path

import pytest

from geoweb.crawl.jsonl import crawl_to_jsonl
from geoweb.detect.stac import STACDetector
from geoweb.settings import Settings
from tests.data.files.make_fixtures import LoopbackFetch, context, response
from tests.hostile.servers import PagesServer, loopback_settings

TYPES = ("STAC", "STAC-API")
DATA = Path(__file__).resolve().parents[1] / "data" / "stac" / "static"
ALL = ("STAC", "STAC-API", "GEOJSON")
DEEP = b'{"stac_version": "1.0.0", "x": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
CATALOG = {"type": "Catalog", "stac_version": "1.0.0", "id": "c", "description": "d", "links": []}


def doc(**members) -> bytes:
    return json.dumps(CATALOG | members).encode()


def catalog(*children: str, root: str = "/catalog.json") -> tuple[str, bytes]:
    """A catalog linking ``children``, as served JSON."""
    links = [{"rel": "root", "href": root}] + [{"rel": "child", "href": c} for c in children]
    return "application/json", doc(links=links)


def collection(name: str, **members) -> tuple[str, bytes]:
    extent = {"spatial": {"bbox": [[1, 2, 3, 4]]}}
    base = {
        "type": "Collection",
        "id": name,
        "extent": extent,
        "links": [{"rel": "root", "href": "/catalog.json"}],
    }
    return "application/json", doc(**(base | members))


def miss(body: bytes, caplog, *, ctx=None, **kwargs) -> tuple[str, dict]:
    """Detect on ``body``; assert nothing was found and the reason was logged. Returns (message, stats)."""
    ctx = ctx or context(types=TYPES)
    with caplog.at_level(logging.INFO, logger="geoweb.detect"):
        assert (
            asyncio.run(STACDetector().detect(response("http://h/catalog.json", body, **kwargs), ctx)) == []
        )
    *_, verdict = [r for r in caplog.records if r.name == "geoweb.detect"]
    return verdict.getMessage(), ctx.stats


@pytest.mark.parametrize(
    ("name", "body", "reason"),
    [
        ("truncated JSON", doc()[:-7], "not_stac"),
        ("not JSON at all", b'{"stac_version": "1.0.0", id: c}', "not_stac"),
        ("NaN", doc(extent=None).replace(b"null", b"NaN"), "not_stac"),
        ("Infinity", doc(extent=None).replace(b"null", b"-Infinity"), "not_stac"),
        ("deeply nested", DEEP, "unsafe_content"),
        ("a JSON array", b'[{"stac_version": "1.0.0"}]', "not_stac"),
        ("a JSON string", b'"stac_version"', "not_stac"),
        ("stac_version a number", doc(stac_version=1.0), "not_stac"),
        ("stac_version empty", doc(stac_version="  "), "not_stac"),
        ("id a number", doc(id=17), "not_stac"),
        ("id missing", doc(id=None), "not_stac"),
        ("links a string", doc(links="see the portal"), "not_stac"),
        ("links missing", doc(links=None), "not_stac"),
        ("unknown type", doc(type="Catalogue"), "not_stac"),
        ("type an object", doc(type={"nested": ["x" * 1000]}), "not_stac"),
        ("an HTML error page", b'<html><body>500: "stac_version" unknown</body></html>', "not_stac"),
        ("binary", b"\xff\xd8\xff\xe0 stac_version \x00\x81", "not_stac"),
        ("no root: href a number", doc(type="Collection", links=[{"rel": "root", "href": 5}]), "no_root"),
        ("no root: javascript", doc(links=[{"rel": "root", "href": "javascript:alert(1)"}]), "no_root"),
        ("no root: file URL", doc(links=[{"rel": "root", "href": "file:///etc/passwd"}]), "no_root"),
        ("item: root a file URL", doc(type="Feature", links=[{"rel": "root", "href": "file:///x.json"}]), "no_root"),
        ("item: collection unfollowable", doc(type="Feature", links=[{"rel": "collection", "href": 7}]), "no_root"),
    ],
)  # fmt: skip
def test_hostile_documents(name, body, reason, caplog):
    message, stats = miss(body, caplog)
    assert stats[f"stac/miss/{reason}"] == 1, message
    assert "http://h/catalog.json" in message


def test_over_the_cap_cut_or_an_error_status(caplog):
    small = context(types=TYPES, settings=Settings(max_body_bytes=10))
    assert miss(doc(), caplog, ctx=small)[1] == {"stac/miss/unsafe_content": 1}
    assert miss(doc(), caplog, complete=False)[1] == {"stac/miss/malformed": 1}
    assert miss(doc(), caplog, status=404)[1] == {"stac/miss/http_status": 1}


def run(server, path: str, settings: Settings | None = None):
    """Detect on the page at ``path``; returns (resources, detector requests, ctx, log text)."""
    fetch = LoopbackFetch()
    ctx = context(fetch, settings=settings, types=TYPES)
    page = asyncio.run(fetch(server.url(path)))
    fetch.requests = 0
    return asyncio.run(STACDetector().detect(page, ctx)), fetch.requests, ctx


@pytest.mark.parametrize(
    ("root", "why"),
    [
        (None, "http_status"),
        (("text/html", b"<html><body>Catalog moved</body></html>"), "not_stac"),
        (collection("other", links=[{"rel": "root", "href": "/elsewhere.json"}]), "another root"),
    ],
)
def test_a_child_whose_root_is_broken_is_no_resource(root, why, caplog):
    """The child names a root that fails, answers HTML, or names yet another root: one probe, then a miss."""
    pages = {"/child.json": collection("child")} | ({"/catalog.json": root} if root else {})
    with PagesServer(pages) as server, caplog.at_level(logging.INFO, logger="geoweb.detect"):
        found, requests, ctx = run(server, "/child.json")
    assert found == [] and requests == 1
    assert ctx.stats["stac/miss/no_root"] == 1
    assert why in caplog.text and "/child.json" in caplog.text


def test_child_links_looping_back_are_fetched_once():
    pages = {
        "/catalog.json": catalog("/catalog.json", "/a.json", "/a.json?f=json", "/a.json#x"),
        "/a.json": catalog("/catalog.json", "/a.json", "/b.json"),
        "/b.json": collection(
            "b", links=[{"rel": "child", "href": "/a.json"}, {"rel": "child", "href": "/b.json"}]
        ),
    }
    with PagesServer(pages) as server:
        (resource,), requests, _ = run(server, "/catalog.json")
        assert server.seen.count("/a.json") == 1 and server.seen.count("/catalog.json") == 1
    assert [d.name for d in resource.datasets] == ["b"] and requests == 2


def test_endless_chains_and_floods_of_children_are_cut(caplog):
    chain = {f"/c{i}.json": catalog(f"/c{i + 1}.json") for i in range(50)}
    flood = {"/flood.json": catalog(*(f"/f{i}.json" for i in range(10_000)), root="/flood.json")}
    flood |= {f"/f{i}.json": collection(f"f{i}") for i in range(10_000)}
    with PagesServer({"/catalog.json": catalog("/c0.json"), **chain, **flood}) as server:
        (resource,), requests, _ = run(server, "/catalog.json", Settings(stac_max_depth=3))
        assert requests == 3 and resource.datasets == []
        with caplog.at_level(logging.WARNING):
            (resource,), requests, ctx = run(server, "/flood.json", Settings(stac_max_children=20))
    assert requests == 20 and len(resource.datasets) == 20
    assert ctx.stats["stac/children_cut"] == 1 and "walk cut at 20 documents" in caplog.text


@pytest.mark.parametrize(
    "extent",
    [
        {"spatial": {"bbox": [[-200, 2, 3, 4]]}},
        {"spatial": {"bbox": [[1, 95, 3, 99]]}},
        {"spatial": {"bbox": [[1e308, 2, 3, 4]]}},
        {"spatial": {"bbox": [[1, 2, 3, 10**400]]}},
        {"spatial": {"bbox": [["1", "2", "3", "4"]]}},
        {"spatial": {"bbox": [[True, 2, 3, 4]]}},
        {"spatial": {"bbox": [[1, 2, 3]]}},
        {"spatial": {"bbox": []}},
        {"spatial": {"bbox": "1,2,3,4"}},
        {"spatial": {"bbox": [[1, 2, 3, 4]], "crs": "EPSG:3857"}},
        {"spatial": None},
        [],
    ],
)  # fmt: skip
def test_an_extent_that_cannot_be_trusted_leaves_the_collection_without_a_box(extent):
    body = doc(type="Collection", extent=extent, links=[{"rel": "root", "href": "./catalog.json"}])
    (found,) = asyncio.run(
        STACDetector().detect(response("http://h/catalog.json", body), context(types=TYPES))
    )
    assert [(d.name, d.bbox) for d in found.datasets] == [("c", None)] and found.bbox is None


def test_children_that_are_not_stac_are_skipped_and_counted(caplog):
    pages = {
        "/catalog.json": catalog(
            "/html.json", "/nan.json", "/gone.json", "/noid.json", "/item.json", "/ok.json"
        ),
        "/html.json": ("text/html", b"<html>Not found</html>"),
        "/nan.json": ("application/json", doc().replace(b'"d"', b"NaN")),
        "/noid.json": collection("x", id=12),
        "/item.json": ("application/json", doc(type="Feature")),
        "/ok.json": collection("ok"),
    }
    with PagesServer(pages) as server, caplog.at_level(logging.INFO):
        (resource,), requests, ctx = run(server, "/catalog.json")
    assert [d.name for d in resource.datasets] == ["ok"] and requests == 6
    assert ctx.stats["stac/child_miss/not_stac"] == 3 and ctx.stats["stac/child_miss/http_status"] == 1
    assert "/gone.json" in caplog.text


API = {
    "type": "Catalog",
    "stac_version": "1.0.0",
    "id": "api",
    "description": "d",
    "conformsTo": ["https://api.stacspec.org/v1.0.0/core"],
    "links": [{"rel": "data", "href": "/collections"}],
}


def api_pages(collections) -> dict:
    return {"/": ("application/json", json.dumps(API).encode()), **collections}


def page(names, next_href=None, method="GET") -> tuple[str, bytes]:
    links = [{"rel": "next", "href": next_href, "method": method}] if next_href else []
    return "application/json", json.dumps(
        {"collections": [{"id": n} for n in names], "links": links}
    ).encode()


@pytest.mark.parametrize(
    ("collections", "names", "requests"),
    [
        ({"/collections": ("text/html", b"<html>error</html>")}, [], 1),
        ({"/collections": ("application/json", b'{"collections": {"a": 1}}')}, [], 1),
        (
            {"/collections": ("application/json", b'{"collections": [{"id": 5}, "x", {"id": "ok"}]}')},
            ["ok"],
            1,
        ),
        ({}, [], 1),
        ({"/collections": page(["a"], "/p2"), "/p2": page(["b"], "/collections")}, ["a", "b"], 2),
        ({"/collections": page(["a"], "/collections")}, ["a"], 1),
        ({"/collections": page(["a"], "/p2", method="POST"), "/p2": page(["b"])}, ["a"], 1),
        ({"/collections": page(["a"], "javascript:void(0)")}, ["a"], 1),
    ],
)
def test_a_broken_collections_endpoint_keeps_the_api_with_what_could_be_read(collections, names, requests):
    with PagesServer(api_pages(collections)) as server:
        (resource,), sent, _ = run(server, "/")
    assert resource.type == "STAC-API" and [d.name for d in resource.datasets] == names and sent == requests


def test_endless_paging_is_cut(caplog):
    pages = {"/collections": page(["c0"], "/p1")} | {
        f"/p{i}": page([f"c{i}"], f"/p{i + 1}") for i in range(1, 50)
    }
    with PagesServer(api_pages(pages)) as server, caplog.at_level(logging.WARNING):
        (resource,), sent, ctx = run(server, "/", Settings(stac_max_pages=4))
    assert sent == 4 and len(resource.datasets) == 4
    assert ctx.stats["stac/pages_cut"] == 1 and "cut at 4 pages" in caplog.text


def test_a_crawl_through_hostile_stac_keeps_the_good_catalog(caplog):
    """Broken STAC documents, lying types and a root loop beside a real catalog: the crawl finds the catalog
    and loses nothing else (the GeoJSON next to them)."""
    good = {
        f"/good/{p.relative_to(DATA)}": ("application/json", p.read_bytes()) for p in DATA.rglob("*.json")
    }
    point = b'{"type": "Feature", "geometry": {"type": "Point", "coordinates": [5, 45]}, "properties": {}}'
    hostile = {
        "/broken.json": ("application/json", b'{"stac_version": "1.0.0", "id": 17, "links": "x"}'),
        "/loop-a.json": collection("a", links=[{"rel": "root", "href": "/loop-b.json"}]),
        "/loop-b.json": collection("b", links=[{"rel": "root", "href": "/loop-a.json"}]),
        "/nested.json": (
            "application/json",
            b'{"stac_version": "1.0.0", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        ),
        "/lying": ("image/png", doc(type="Collection", links=[{"rel": "root", "href": "/nowhere.json"}])),
        "/point.geojson": ("application/geo+json", point),
    }
    targets = ["/good/andes-landcover/collection.json", *hostile]
    seed = "".join(f'<a href="{t}">x</a>' for t in targets).encode()
    pages = {"/": ("text/html", b"<html><body>" + seed + b"</body></html>"), **good, **hostile}
    with PagesServer(pages) as site, caplog.at_level(logging.INFO):
        out = io.StringIO()
        report = asyncio.run(crawl_to_jsonl([site.url("/")], loopback_settings(site, max_level=1), ALL, out))
    found = {(r["url"].split("/", 3)[3], r["type"]) for r in map(json.loads, out.getvalue().splitlines())}
    assert found == {("good/catalog.json", "STAC"), ("point.geojson", "GEOJSON")}
    stats = report.stats
    assert stats["stac/miss/not_stac"] == 1 and stats["stac/miss/unsafe_content"] == 1
    assert stats["stac/miss/no_root"] == 3  # both loop members, the collection served as a PNG
    assert "loop-a.json" in caplog.text and "nowhere.json" in caplog.text
