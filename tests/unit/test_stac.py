"""STAC detection on documents captured from the test web's real servers (tests/data/stac/README.md): a static
catalog as lighttpd serves it and stac-fastapi-static's API over it, served again from a loopback server."""

import asyncio
import json
from pathlib import Path

import pytest

from geoweb.detect.geojson import GeoJSONDetector
from geoweb.detect.stac import STACDetector, canonical_url
from geoweb.models import sha256
from geoweb.settings import Settings
from tests.data.files.make_fixtures import LoopbackFetch, context, response
from tests.hostile.servers import PagesServer
from testweb.stac import CAPTURED, captured_file

DATA = Path(__file__).resolve().parents[1] / "data" / "stac"
API_ORIGIN = b"http://127.0.0.1:18042"
COLLECTIONS = {"alpine-elevation", "andes-landcover", "historic-scans"}


def captured(server: str, path: str) -> bytes:
    return (DATA / captured_file(server, path)).read_bytes()


@pytest.fixture(scope="module")
def static():
    """The captured static catalog at its own paths."""
    pages = {path: ("application/json", captured("static", path)) for path in CAPTURED["static"]}
    with PagesServer(pages) as server:
        yield server


@pytest.fixture(scope="module")
def api():
    """The captured API documents, their absolute links moved to the loopback server."""
    with PagesServer({}) as server:
        origin = server.base_url.rstrip("/").encode()
        server.pages.update(
            (path, ("application/json", captured("api", path).replace(API_ORIGIN, origin)))
            for path in CAPTURED["api"]
        )
        yield server


def run(server, path: str, ctx=None):
    """Detect on the document at ``path`` (fetched like the crawl does); returns (resources, ctx.fetch, ctx)
    with the fetch counting only the detector's requests."""
    ctx = ctx or context(LoopbackFetch())
    fetch = ctx.fetch
    page = asyncio.run(fetch(server.url(path)))
    fetch.requests = 0
    return asyncio.run(STACDetector().detect(page, ctx)), fetch, ctx


def test_the_static_root_catalog_lists_every_collection_of_its_tree(static):
    (resource,), fetch, _ = run(static, "/catalog.json")
    assert resource.key == (static.url("/catalog.json"), "STAC")
    assert resource.version == "1.1.0"
    assert resource.title == "Regional Earth Observation Catalogue"
    assert resource.abstract.startswith("Elevation, land cover")
    datasets = {d.name: d for d in resource.datasets}
    assert set(datasets) == COLLECTIONS  # historic-scans sits in a sub-catalog
    for path in CAPTURED["static"]:
        document = json.loads(captured("static", path))
        if document["type"] == "Collection":
            dataset = datasets[document["id"]]
            assert list(dataset.bbox) == document["extent"]["spatial"]["bbox"][0]
            assert dataset.title == document["title"] and dataset.keywords == document["keywords"]
            assert dataset.extra == {"items": sum(link["rel"] == "item" for link in document["links"])}
    assert resource.bbox == (-75.0, -15.0, 33.5, 49.0)
    assert resource.content_sha256 == sha256(captured("static", "/catalog.json"))
    assert fetch.requests == 4  # two collections, the sub-catalog, its collection; no item
    assert all(h == {"Accept": "application/json"} for h in fetch.sent[1:])


@pytest.mark.parametrize(
    "path",
    [
        "/andes-landcover/collection.json",
        "/archive/catalog.json",
        "/alpine-elevation/elevation-north/elevation-north.json",
    ],
)  # fmt: skip
def test_a_collection_sub_catalog_or_item_leads_to_its_root(static, path):
    (resource,), _, _ = run(static, path)
    assert resource.key == (static.url("/catalog.json"), "STAC")
    assert {d.name for d in resource.datasets} == COLLECTIONS


def test_the_root_is_probed_once_per_run(static):
    keys: set[str] = set()
    fetch = LoopbackFetch()
    ctx = context(fetch)
    ctx.first_time = lambda key: key not in keys and not keys.add(key)
    assert len(run(static, "/andes-landcover/collection.json", ctx)[0]) == 1
    found, fetch, _ = run(static, "/alpine-elevation/collection.json", ctx)
    assert found == [] and fetch.requests == 0
    assert ctx.stats["stac/root_probe"] == 1


def test_a_root_crawled_after_a_deep_link_led_to_it_is_not_read_again(static):
    keys: set[str] = set()
    ctx = context(LoopbackFetch())
    ctx.first_time = lambda key: key not in keys and not keys.add(key)
    assert len(run(static, "/archive/catalog.json", ctx)[0]) == 1
    found, fetch, _ = run(static, "/catalog.json", ctx)
    assert found == [] and fetch.requests == 0


def test_a_root_crawled_first_is_not_probed_again_from_a_deep_link(static):
    keys: set[str] = set()
    fetch = LoopbackFetch()
    ctx = context(fetch)
    ctx.first_time = lambda key: key not in keys and not keys.add(key)
    assert len(run(static, "/catalog.json", ctx)[0]) == 1
    found, fetch, _ = run(static, "/archive/historic-scans/collection.json", ctx)
    assert found == [] and fetch.requests == 0


def test_depth_and_count_caps_cut_the_walk_and_say_so(static, caplog):
    shallow = context(LoopbackFetch(), settings=Settings(stac_max_depth=1))
    (resource,), _, _ = run(static, "/catalog.json", shallow)
    assert {d.name for d in resource.datasets} == {"alpine-elevation", "andes-landcover"}
    few = context(LoopbackFetch(), settings=Settings(stac_max_children=1))
    (resource,), fetch, ctx = run(static, "/catalog.json", few)
    assert fetch.requests == 1 and len(resource.datasets) == 1
    assert ctx.stats["stac/children_cut"] == 1 and "walk cut at 1 documents" in caplog.text


def test_the_api_landing_page_is_a_stac_api_with_the_collections_of_its_collections_endpoint(api):
    (resource,), fetch, _ = run(api, "/")
    assert resource.key == (api.url("/"), "STAC-API")
    assert resource.version == "1.0.0"
    assert resource.title == "Regional Earth Observation API"
    assert {d.name for d in resource.datasets} == COLLECTIONS
    scans = next(d for d in resource.datasets if d.name == "historic-scans")
    assert scans.bbox == (32.0, -1.5, 33.5, 0.0) and scans.keywords == ["aerial photography", "historic"]
    assert "https://api.stacspec.org/v1.0.0/item-search" in resource.extra["conformance"]
    assert not any("opengis" in c for c in resource.extra["conformance"])
    assert fetch.requests == 1  # /collections: one page


def test_an_api_collection_leads_to_the_landing_page_not_to_the_static_root_it_names(api):
    """stac-fastapi-static keeps the static catalog's rel=root (/catalog.json, which it also serves)."""
    (resource,), _, ctx = run(api, "/collections/historic-scans")
    assert resource.key == (api.url("/"), "STAC-API")
    assert ctx.stats["stac/root_probe"] == 1


def test_the_api_collections_list_leads_to_its_landing_page(api):
    (resource,), _, _ = run(api, "/collections")
    assert resource.key == (api.url("/"), "STAC-API") and len(resource.datasets) == 3


def test_the_static_catalog_the_api_also_serves_is_a_static_catalog(api):
    (resource,), _, _ = run(api, "/catalog.json")
    assert resource.type == "STAC" and resource.datasets == []  # its children are not served there


def test_only_wanted_types_are_reported(static, api):
    assert run(api, "/", context(LoopbackFetch(), types=("STAC",)))[0] == []
    assert run(static, "/catalog.json", context(LoopbackFetch(), types=("STAC-API",)))[0] == []
    assert run(static, "/catalog.json", context(LoopbackFetch(), types=("WMS",)))[0] == []


def test_stac_0_9_without_type_members():
    catalog = {
        "stac_version": "0.9.0",
        "id": "old",
        "description": "d",
        "links": [{"rel": "root", "href": "./c.json"}],
    }
    collection = catalog | {"id": "coll", "license": "x", "extent": {"spatial": {"bbox": [[1, 2, 3, 4]]}}}
    (found,) = asyncio.run(
        STACDetector().detect(response("http://h/c.json", json.dumps(catalog).encode()), context())
    )
    assert found.type == "STAC" and found.version == "0.9.0" and found.extra["stac_type"] == "Catalog"
    (found,) = asyncio.run(
        STACDetector().detect(response("http://h/c.json", json.dumps(collection).encode()), context())
    )
    assert [(d.name, d.bbox) for d in found.datasets] == [("coll", (1.0, 2.0, 3.0, 4.0))]  # a root collection


def test_accepts_by_content_only():
    detector = STACDetector()
    assert detector.accepts(response("http://h/x", b'  {"stac_version": "1.0.0"}'))
    assert not detector.accepts(response("http://h/catalog.json", b'{"type": "Catalog"}'))
    assert not detector.accepts(response("http://h/a", b'<html>"stac_version"</html>'))


@pytest.mark.parametrize(
    ("url", "canonical"),
    [
        ("http://H:80/stac/?f=json", "http://h/stac"),
        ("http://h/stac?f=html#top", "http://h/stac"),
        ("http://h/", "http://h/"),
        ("http://h/api/v1/?collections=a&F=json", "http://h/api/v1?collections=a"),
        ("http://h/a/./b/../catalog.json", "http://h/a/catalog.json"),
    ],
)
def test_canonical_url(url, canonical):
    assert canonical_url(url) == canonical


# --- items and item pages: a STAC resource or nothing (docs/stac.md) ----------------------------------------


def item_document(name: str) -> bytes:
    return (DATA / "items" / name).read_bytes()


def test_a_lone_item_is_a_stac_resource_of_its_own_and_not_a_geojson_file():
    body = item_document("lone-item.json")
    page = response(
        "http://h/scenes/SC2-20240612_101502_07.json", body, headers={"content-type": "application/json"}
    )
    ctx = context()  # no request: a lone item leads nowhere
    [resource] = asyncio.run(STACDetector().detect(page, ctx))
    assert (resource.url, resource.type, resource.version) == (page.url, "STAC", "1.0.0")
    assert (resource.title, resource.abstract, resource.provider) == (
        "A coastal SC2 scene",
        "Four-band analytic scene over the coast",
        "Coastal Imaging",
    )
    assert resource.extra == {"stac_type": "Item"}
    [dataset] = resource.datasets
    assert (dataset.name, dataset.bbox) == (
        "SC2-20240612_101502_07",
        (14.21750209, 44.48803556, 14.6080486, 44.813537207),
    )
    assert dataset.extra == {
        "assets": 2,
        "media_types": ["image/png", "image/tiff; application=geotiff; profile=cloud-optimized"],
    }
    assert resource.bbox == dataset.bbox
    assert ctx.stats["stac/lone_items"] == 1
    geojson = context()
    assert GeoJSONDetector().accepts(page)
    assert asyncio.run(GeoJSONDetector().detect(page, geojson)) == []
    assert geojson.stats["geojson/miss/not_geojson"] == 1


def test_an_item_with_a_collection_link_leads_to_that_collection_when_it_is_a_root():
    collection = json.loads(captured("static", "/andes-landcover/collection.json"))
    collection["links"] = [link for link in collection["links"] if link["rel"] not in ("root", "parent")]
    with PagesServer({"/landcover.json": ("application/json", json.dumps(collection).encode())}) as server:
        item = json.loads(item_document("lone-item.json"))
        item["links"].append({"rel": "collection", "href": server.url("/landcover.json")})
        page = response("http://h/scenes/x.json", json.dumps(item).encode())
        [resource] = asyncio.run(STACDetector().detect(page, context(LoopbackFetch())))
    assert (resource.url, resource.extra["stac_type"]) == (server.url("/landcover.json"), "Collection")
    assert [d.name for d in resource.datasets] == ["andes-landcover"]


def test_an_item_whose_collection_is_no_root_is_nothing(static):
    item = json.loads(item_document("lone-item.json"))
    item["links"].append({"rel": "collection", "href": static.url("/andes-landcover/collection.json")})
    ctx = context(LoopbackFetch())
    assert (
        asyncio.run(STACDetector().detect(response("http://h/x.json", json.dumps(item).encode()), ctx)) == []
    )
    assert ctx.stats["stac/miss/no_root"] == 1


@pytest.mark.parametrize("name", ["search-empty.json", "items-page-empty.json"])
def test_an_empty_item_page_is_neither_stac_nor_a_geojson_file(name):
    page = response(
        "http://h/pages/p1.json", item_document(name), headers={"content-type": "application/geo+json"}
    )
    for detector in (STACDetector(), GeoJSONDetector()):
        ctx = context()
        assert asyncio.run(detector.detect(page, ctx)) == []
        if detector.accepts(page):
            assert sum(v for k, v in ctx.stats.items() if "/miss/" in k) == 1


def test_an_empty_search_page_at_an_api_path_leads_to_the_landing_page(api):
    page = response(api.url("/search"), item_document("search-empty.json"))
    [resource] = asyncio.run(STACDetector().detect(page, context(LoopbackFetch())))
    assert (resource.url, resource.type) == (api.url("/"), "STAC-API")
