"""The OGC API detector on documents captured from pygeoapi 0.21 (tests/data/ogcapi/capture.py), and on
the conformance classes, link relations and URL shapes of the standards and their drafts."""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from pathlib import Path

import pytest

from geoweb.detect import load_detector
from geoweb.detect.base import DetectContext
from geoweb.detect.ogcapi import (
    OGCAPIDetector,
    api_version,
    collection_apis,
    declared_apis,
    landing_by_path,
    landing_url,
)
from geoweb.errors import ConnectionFailed
from geoweb.fetch.response import Response
from geoweb.models import OGCAPI_TYPES
from geoweb.settings import Settings

DATA = Path(__file__).resolve().parents[1] / "data" / "ogcapi"
PYGEOAPI = "http://127.0.0.1:18040"  # where the documents were captured; their links name it
# What the test web's pygeoapi serves (testweb/templates/pygeoapi.yml): API -> datasets with their extents
SERVED = {
    "OGCAPI-FEATURES": {"lakes": (32.0, -2.0, 33.6, -1.2), "provinces": (5.0, 45.0, 8.0, 46.0)},
    "OGCAPI-TILES": {"lakes": (32.0, -2.0, 33.6, -1.2)},
    "OGCAPI-MAPS": {"provinces": (5.0, 45.0, 8.0, 46.0)},
    "OGCAPI-RECORDS": {"records": (-180.0, -90.0, 180.0, 90.0)},
    "OGCAPI-COVERAGES": {"elevation": (6.0, 45.5, 10.0, 47.9)},
    "OGCAPI-EDR": {"landcover": (138.0, -32.0, 144.0, -28.0)},
    "OGCAPI-PROCESSES": {"hello-world": None},
}


def captured(name: str) -> bytes:
    return (DATA / name).read_bytes()


def response(url: str, body: bytes, content_type: str = "application/json", status: int = 200) -> Response:
    return Response(url, url, status, {"content-type": content_type}, body)


class APIWeb:
    """``ctx.fetch`` over URL -> (status, content type, body); other URLs answer 404 with an HTML page, as
    servers do. Records every request and its headers; ``context`` has a run-wide ``first_time``."""

    def __init__(self, pages: dict[str, bytes | tuple[int, str, bytes] | Exception]):
        self.pages = pages
        self.requested: list[str] = []
        self.headers: list[dict] = []

    async def fetch(self, url: str, *, headers=None, max_bytes=None) -> Response:
        self.requested.append(url)
        self.headers.append(headers or {})
        page = self.pages.get(url, (404, "text/html", b"<html><body>Not found</body></html>"))
        if isinstance(page, Exception):
            raise page
        status, content_type, body = page if isinstance(page, tuple) else (200, "application/json", page)
        return response(url, body, content_type, status)

    def context(self, types=OGCAPI_TYPES, settings: Settings | None = None) -> DetectContext:
        seen: set[str] = set()

        def first_time(key: str) -> bool:
            new = key not in seen
            seen.add(key)
            return new

        return DetectContext(self.fetch, settings or Settings(), types, first_time, Counter())


def pygeoapi_web() -> APIWeb:
    """The captured pygeoapi documents at the URLs pygeoapi links them from."""
    return APIWeb(
        {
            f"{PYGEOAPI}/": captured("landing.json"),
            f"{PYGEOAPI}/conformance": captured("conformance.json"),
            f"{PYGEOAPI}/collections": captured("collections.json"),
            f"{PYGEOAPI}/processes": captured("processes.json"),
            f"{PYGEOAPI}/openapi": captured("openapi.json"),
        }
    )


def detect(resp: Response, ctx: DetectContext):
    return asyncio.run(OGCAPIDetector().detect(resp, ctx))


def by_type(resources) -> dict:
    return {r.type: r for r in resources}


def test_registered_under_its_short_name():
    detector = load_detector("ogcapi")
    assert isinstance(detector, OGCAPIDetector)
    assert detector.types == OGCAPI_TYPES


@pytest.mark.parametrize(
    ("resp", "accepted"),
    [
        (response(f"{PYGEOAPI}/", captured("landing.json")), True),
        (response(f"{PYGEOAPI}/conformance", captured("conformance.json")), True),
        (
            response(f"{PYGEOAPI}/collections/lakes?f=html", captured("collection_lakes.html"), "text/html"),
            True,
        ),
        (response("http://h/about/", b"<html>x</html>", "text/html"), False),
        (response("http://h/api", captured("landing.json"), "text/html"), True),  # a lying Content-Type
        (response("http://h/config.json", b'{"debug": true, "theme": "dark"}'), False),
        (response("http://h/a.tif", b"II*\x00" + b"\x00" * 60, "image/tiff"), False),
    ],
)
def test_accepts(resp, accepted):
    assert OGCAPIDetector().accepts(resp) is accepted


def test_pygeoapi_landing_page_is_one_resource_per_api_with_its_collections():
    web = pygeoapi_web()
    found = detect(response(f"{PYGEOAPI}/", captured("landing.json")), web.context())
    assert {r.type: {d.name: d.bbox for d in r.datasets} for r in found} == SERVED
    assert web.requested == [
        f"{PYGEOAPI}/{path}" for path in ("conformance", "collections", "processes", "openapi")
    ]
    assert all(h == {"Accept": "application/json"} for h in web.headers)
    declared = json.loads(captured("conformance.json"))["conformsTo"]
    for resource in found:
        assert resource.url == f"{PYGEOAPI}/"
        assert resource.version == "1.0"
        assert resource.title == "Open geodata API of the test web"
        # provider and keywords come from the service description (OpenAPI info), as the landing page has none
        assert resource.provider == "GeoWeb Test Agency"
        assert resource.keywords == ["lakes", "provinces", "elevation", "land cover"]
        # the API's own classes: e.g. every ogcapi-features-N class for OGCAPI-FEATURES, and nothing else
        family = f"/ogcapi-{resource.type.removeprefix('OGCAPI-').lower()}-"
        assert resource.extra["conformance"] == sorted(c for c in declared if family in c)
    features = by_type(found)["OGCAPI-FEATURES"]
    assert features.bbox == (5.0, -2.0, 33.6, 46.0)
    assert "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core" in features.extra["conformance"]
    lakes = next(d for d in features.datasets if d.name == "lakes")
    assert (lakes.title, lakes.keywords, lakes.extra) == (
        "Great lakes",
        ["hydrography", "lakes"],
        {"item_type": "feature"},
    )
    assert by_type(found)["OGCAPI-PROCESSES"].datasets[0].title == "Hello World"
    # one digest of the documents that proved and described the API: a revisit sees any change in them
    assert len({r.content_sha256 for r in found}) == 1 and len(found[0].content_sha256) == 64


@pytest.mark.parametrize(
    ("url", "document", "content_type"),
    [
        (f"{PYGEOAPI}/collections/lakes", "collection_lakes.json", "application/json"),
        (f"{PYGEOAPI}/collections/lakes?f=html", "collection_lakes.html", "text/html"),
        (f"{PYGEOAPI}/conformance", "conformance.json", "application/json"),
        (f"{PYGEOAPI}/?f=json", "landing.json", "application/json"),
    ],
)
def test_any_document_of_the_api_leads_to_its_one_landing_page(url, document, content_type):
    web = pygeoapi_web()
    found = detect(response(url, captured(document), content_type), web.context())
    assert {r.url for r in found} == {f"{PYGEOAPI}/"}
    assert {r.type for r in found} == set(SERVED)
    assert len(web.requested) <= 5


def test_the_landing_page_is_read_once_per_run():
    web = pygeoapi_web()
    ctx = web.context()
    assert len(detect(response(f"{PYGEOAPI}/collections/lakes", captured("collection_lakes.json")), ctx)) == 7
    requests = len(web.requested)
    assert detect(response(f"{PYGEOAPI}/", captured("landing.json")), ctx) == []
    assert detect(response(f"{PYGEOAPI}/collections?f=html", b"<html></html>", "text/html"), ctx) == []
    assert len(web.requested) == requests


def test_only_the_wanted_apis_are_read():
    web = pygeoapi_web()
    [processes] = detect(
        response(f"{PYGEOAPI}/", captured("landing.json")), web.context(("OGCAPI-PROCESSES",))
    )
    assert processes.type == "OGCAPI-PROCESSES"
    assert f"{PYGEOAPI}/collections" not in web.requested


def test_a_cap_cuts_the_collections_and_is_counted(caplog):
    web = pygeoapi_web()
    ctx = web.context(settings=Settings(ogcapi_max_datasets=2))
    with caplog.at_level(logging.INFO, logger="geoweb.detect.ogcapi"):
        found = by_type(detect(response(f"{PYGEOAPI}/", captured("landing.json")), ctx))
    assert [d.name for d in found["OGCAPI-FEATURES"].datasets] == ["lakes", "provinces"]
    assert found["OGCAPI-COVERAGES"].datasets == []
    assert ctx.stats["ogcapi/capped"] == 1
    assert "the first 2 are kept" in caplog.text


def test_conformance_in_the_landing_page_and_links_relative_to_it():
    """An API under a path, declaring its conformance in the landing page, with relative links."""
    landing = {
        "title": "Hydro API",
        "conformsTo": ["http://www.opengis.net/spec/ogcapi-edr-1/1.1/conf/core"],
        "links": [{"rel": "data", "href": "collections?f=json"}],
    }
    collections = {
        "collections": [
            {
                "id": "gauges",
                "data_queries": {"position": {"link": {"href": "gauges/position", "rel": "data"}}},
                "extent": {"spatial": {"bbox": [[100, 12, 101, 13]]}},
            }
        ]
    }
    web = APIWeb({"http://h/hydro/api/collections?f=json": json.dumps(collections).encode()})
    [edr] = detect(response("http://h/hydro/api/", json.dumps(landing).encode()), web.context())
    assert (edr.url, edr.type, edr.version) == ("http://h/hydro/api", "OGCAPI-EDR", "1.1")
    assert [(d.name, d.bbox) for d in edr.datasets] == [("gauges", (100.0, 12.0, 101.0, 13.0))]
    assert web.requested == ["http://h/hydro/api/collections?f=json"]


def test_a_root_link_to_a_static_catalog_falls_back_to_the_path():
    """stac-fastapi-static links a collection's root to its static catalog.json: the URL shape finds the API."""
    collection = {
        "id": "scans",
        "stac_version": "1.1.0",
        "links": [{"rel": "root", "href": "http://h/catalog.json"}],
    }
    landing = {
        "conformsTo": ["http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core"],
        "links": [{"rel": "data", "href": "http://h/collections"}],
    }
    web = APIWeb(
        {
            "http://h/catalog.json": b'{"type": "Catalog", "links": []}',
            "http://h/": json.dumps(landing).encode(),
            "http://h/collections": json.dumps({"collections": [collection]}).encode(),
        }
    )
    [features] = detect(
        response("http://h/collections/scans", json.dumps(collection).encode()), web.context()
    )
    assert (features.url, [d.name for d in features.datasets]) == ("http://h/", ["scans"])
    assert web.requested == ["http://h/catalog.json", "http://h/", "http://h/collections"]


@pytest.mark.parametrize(
    ("uri", "api"),
    [
        ("http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core", "OGCAPI-FEATURES"),
        ("http://www.opengis.net/spec/ogcapi-features-4/1.0/conf/create-replace-delete", "OGCAPI-FEATURES"),
        ("http://www.opengis.net/spec/wfs-1/3.0/req/core", "OGCAPI-FEATURES"),  # the WFS 3.0 draft
        ("http://www.opengis.net/spec/ogcapi-records-1/1.0/conf/record-core", "OGCAPI-RECORDS"),
        ("http://www.opengis.net/spec/ogcapi-maps-1/1.0/conf/core", "OGCAPI-MAPS"),
        ("http://www.opengis.net/spec/ogcapi-tiles-1/1.0/req/core", "OGCAPI-TILES"),
        ("http://www.opengis.net/spec/ogcapi-processes-1/1.0/conf/core", "OGCAPI-PROCESSES"),
        (
            "http://www.opengis.net/spec/ogcapi-processes-2/1.0/conf/deploy-replace-undeploy",
            "OGCAPI-PROCESSES",
        ),
        ("http://www.opengis.net/spec/WPS/2.0/req/service/binding/rest-json/core", "OGCAPI-PROCESSES"),
        ("http://www.opengis.net/spec/ogcapi-coverages-1/1.0/conf/geodata-coverage", "OGCAPI-COVERAGES"),
        ("http://www.opengis.net/spec/ogcapi-edr-1/1.0/conf/core", "OGCAPI-EDR"),
        ("https://www.opengis.net/spec/ogcapi-edr-1/1.1/conf/core", "OGCAPI-EDR"),
        ("http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/core", None),
        ("http://www.opengis.net/spec/ogcapi-common-2/1.0/conf/collections", None),
        ("https://api.stacspec.org/v1.0.0/core", None),
        ("http://www.opengis.net/spec/cql2/1.0/conf/basic-cql2", None),
    ],
)
def test_conformance_classes_of_each_api(uri, api):
    assert list(declared_apis([uri])) == ([api] if api else [])


def test_api_version_is_the_highest_declared():
    classes = [
        "http://www.opengis.net/spec/ogcapi-edr-1/1.0/conf/core",
        "http://www.opengis.net/spec/ogcapi-edr-1/1.1/conf/collections",
        "http://www.opengis.net/spec/ogcapi-edr-1/1.0.1/conf/json",
    ]
    assert api_version(classes) == "1.1"
    assert api_version(["http://www.opengis.net/spec/wfs-1/3.0/req/core"]) == "3.0"
    parts = [
        "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core",
        "http://www.opengis.net/spec/ogcapi-features-4/1.1/conf/x",
    ]
    assert api_version(parts) == "1.0"  # the core part's version, not a later part's
    assert api_version(["http://www.opengis.net/spec/ogcapi-processes-3/0.0/conf/nested-processes"]) == "0.0"
    assert api_version(["urn:x"]) is None


OGC = "http://www.opengis.net/def/rel/ogc/1.0/"


@pytest.mark.parametrize(
    ("collection", "apis"),
    [
        ({"links": [{"rel": "items", "href": "i"}]}, {"OGCAPI-FEATURES"}),
        ({"itemType": "record", "links": [{"rel": "items", "href": "i"}]}, {"OGCAPI-RECORDS"}),
        ({"links": [{"rel": f"{OGC}map", "href": "m"}]}, {"OGCAPI-MAPS"}),
        ({"links": [{"rel": f"{OGC}tilesets-vector", "href": "t"}]}, {"OGCAPI-TILES"}),
        ({"links": [{"rel": f"{OGC}tilesets-map", "href": "t"}]}, {"OGCAPI-TILES"}),
        ({"links": [{"rel": "tiles", "href": "t"}]}, {"OGCAPI-TILES"}),  # the Tiles draft's relation
        ({"links": [{"rel": f"{OGC}coverage", "href": "c"}]}, {"OGCAPI-COVERAGES"}),
        ({"links": [{"rel": "data", "href": "http://h/c/x/position?f=json"}]}, {"OGCAPI-EDR"}),
        ({"data_queries": {"area": {}}, "links": []}, {"OGCAPI-EDR"}),
        ({"links": [{"rel": "items", "href": "i"}, {"rel": f"{OGC}map", "href": "m"}]},
         {"OGCAPI-FEATURES", "OGCAPI-MAPS"}),
        ({"links": [{"rel": "self", "href": "s"}]}, set()),  # a container of collections
        ({"itemType": "feature", "links": []}, {"OGCAPI-FEATURES"}),  # typed, no access link: /items
        ({"stac_version": "1.0.0", "links": [{"rel": "item", "href": "x.json"}]}, {"OGCAPI-FEATURES"}),
    ],
)  # fmt: skip
def test_which_api_serves_a_collection(collection, apis):
    assert collection_apis(collection) == apis


@pytest.mark.parametrize(
    ("url", "landing"),
    [
        ("http://H:80/?f=json", "http://h/"),
        ("http://h?f=html&lang=en", "http://h/"),
        ("http://h/api/v1/", "http://h/api/v1"),
        ("http://h/api/v1?f=json&map=x#top", "http://h/api/v1?map=x"),
    ],
)
def test_landing_url_is_one_spelling(url, landing):
    assert landing_url(url) == landing


@pytest.mark.parametrize(
    ("url", "landing"),
    [
        ("http://h/ogc/collections/lakes/items?f=html", "http://h/ogc"),
        ("http://h/conformance", "http://h/"),
        ("http://h/x/processes/hello-world", "http://h/x"),
        ("http://h/x/TileMatrixSets", "http://h/x"),
        ("http://h/about/team.html", None),
    ],
)
def test_landing_by_path(url, landing):
    assert landing_by_path(url) == landing


def test_a_miss_is_logged_and_counted_with_its_reason(caplog):
    web = APIWeb({})
    ctx = web.context()
    doc = {"links": [{"rel": "conformance", "href": "http://h/api/conformance"}]}
    with caplog.at_level(logging.INFO, logger="geoweb.detect"):
        assert detect(response("http://h/api", json.dumps(doc).encode()), ctx) == []
    # the conformance, then the collections of the fallback: both 404
    assert ctx.stats == Counter(
        {
            "ogcapi/probe": 2,
            "ogcapi/conformance_unread": 1,
            "ogcapi/unread/http_status": 1,
            "ogcapi/miss/not_ogcapi": 1,
        }
    )
    assert "http://h/api/conformance was not read: HTTP 404" in caplog.text


def test_a_server_answering_html_to_accept_is_asked_with_f_json():
    landing = {"links": [{"rel": "conformance", "href": "http://h/conformance?f=json"}]}
    web = APIWeb(
        {
            "http://h/": (200, "text/html", b"<html><body>Welcome</body></html>"),
            "http://h/?f=json": json.dumps(landing).encode(),
            "http://h/conformance?f=json": json.dumps(
                {"conformsTo": ["http://www.opengis.net/spec/ogcapi-maps-1/1.0/conf/core"]}
            ).encode(),
            "http://h/collections": (200, "text/html", b"<html></html>"),
            "http://h/collections?f=json": json.dumps(
                {"collections": [{"id": "m", "links": [{"rel": "map", "href": "m"}]}]}
            ).encode(),
        }
    )
    [maps] = detect(response("http://h/collections?f=html", b"<html></html>", "text/html"), web.context())
    assert (maps.url, maps.type, [d.name for d in maps.datasets]) == ("http://h/", "OGCAPI-MAPS", ["m"])
    assert web.requested == [
        "http://h/",
        "http://h/?f=json",
        "http://h/conformance?f=json",
        "http://h/collections",
        "http://h/collections?f=json",
    ]


# --- lenient reading: conformance missing or broken; collections without links (tests/data/ogcapi/spec) ---

SPEC = "http://data.example.org"


def spec(name: str) -> bytes:
    return (DATA / "spec" / name).read_bytes()


def spec_datasets(resource) -> list[tuple]:
    return [(d.name, d.title, d.bbox) for d in resource.datasets]


SPEC_DATASETS = [
    ("buildings", "Buildings", (14.1, 44.2, 15.3, 45.1)),
    ("roads", "Roads", (14.0, 44.0, 15.9, 45.8)),
    ("harbours", "Harbour Areas", (14.5, 44.5, 14.9, 44.9)),
]


@pytest.mark.parametrize(
    ("name", "conformance"),
    [
        ("missing", None),  # the link answers 404
        ("an HTML error page", (200, "text/html", b"<html><body>Internal error</body></html>")),
        ("cut JSON", spec("conformance.json")[:-20]),
        (
            "conformsTo not a list",
            b'{"conformsTo": {"core": true}}',
        ),
        ("unreachable", ConnectionFailed("connection refused")),
    ],
)
def test_a_broken_conformance_falls_back_to_the_links_of_the_collections(name, conformance, caplog):
    pages = {f"{SPEC}/collections": spec("collections.json")}
    if conformance is not None:
        pages[f"{SPEC}/conformance"] = conformance
    web = APIWeb(pages)
    ctx = web.context()
    with caplog.at_level(logging.INFO, logger="geoweb.detect"):
        [features] = detect(response(f"{SPEC}/", spec("landing.json")), ctx)
    assert (features.url, features.type, features.version) == (f"{SPEC}/", "OGCAPI-FEATURES", None)
    assert features.title == "Buildings in the coastal region"
    assert spec_datasets(features) == SPEC_DATASETS
    assert features.bbox == (14.0, 44.0, 15.9, 45.8)
    assert features.extra["conformance"] == []
    assert features.extra["conformance_unread"].startswith(f"its conformance declaration {SPEC}/conformance")
    assert ctx.stats["ogcapi/conformance_unread"] == 1 and ctx.stats["ogcapi/found/OGCAPI-FEATURES"] == 1
    assert "its APIs are read from its links" in caplog.text


def test_a_broken_conformance_and_collections_without_links_is_no_api(caplog):
    web = APIWeb({f"{SPEC}/collections": spec("collections-without-links.json")})
    ctx = web.context()
    with caplog.at_level(logging.INFO, logger="geoweb.detect"):
        assert detect(response(f"{SPEC}/", spec("landing.json")), ctx) == []
    assert ctx.stats["ogcapi/miss/not_ogcapi"] == 1
    assert "neither its links nor its collections show an OGC API" in caplog.text


def test_collections_without_links_belong_to_the_one_api_declared():
    web = APIWeb(
        {
            f"{SPEC}/conformance": spec("conformance.json"),
            f"{SPEC}/collections": spec("collections-without-links.json"),
        }
    )
    [features] = detect(response(f"{SPEC}/", spec("landing.json")), web.context())
    assert (features.type, features.version) == ("OGCAPI-FEATURES", "1.0")
    assert spec_datasets(features) == SPEC_DATASETS
    assert "conformance_unread" not in features.extra


def test_collections_without_links_under_two_apis_are_no_ones():
    classes = [
        "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core",
        "http://www.opengis.net/spec/ogcapi-maps-1/1.0/conf/core",
    ]
    web = APIWeb(
        {
            f"{SPEC}/conformance": json.dumps({"conformsTo": classes}).encode(),
            f"{SPEC}/collections": spec("collections-without-links.json"),
        }
    )
    found = detect(response(f"{SPEC}/", spec("landing.json")), web.context())
    assert sorted((r.type, r.datasets) for r in found) == [("OGCAPI-FEATURES", []), ("OGCAPI-MAPS", [])]
