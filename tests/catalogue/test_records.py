"""OGC API - Records through GeoHub's /geohub/records, read with OWSLib's client: the same records as CSW
(pygeoapi asks the catalogue's pycsw), by text, box and type, paged by limit and offset, with links that
keep their protocol and lead to the service, and the quality a resource's checks measured."""

from __future__ import annotations

from statistics import median

import psycopg2
import pytest
from owslib.csw import CatalogueServiceWeb
from owslib.ogcapi.records import Records
from owslib.wms import WebMapService

from tests.geohub import data

pytestmark = pytest.mark.testweb

COLLECTION = "resources"


@pytest.fixture(scope="module")
def api(catalogue, auth) -> Records:
    return Records(catalogue.records, headers=auth, timeout=60)


def items(api: Records, **query) -> list[dict]:
    """Every record matching the query, page by page (50 at a time), following nothing but offsets."""
    found, offset = [], 0
    while True:
        page = api.collection_items(COLLECTION, limit=50, offset=offset, **query)
        found += page["features"]
        offset += 50
        if offset >= page["numberMatched"]:
            assert len(found) == page["numberMatched"]
            return found


def titles(features: list[dict]) -> set[str]:
    return {f["properties"]["title"] for f in features}


def test_the_landing_page_and_collection_name_the_public_address(api, catalogue):
    assert api.links and all(link["href"].startswith(catalogue.records) for link in api.links)
    assert COLLECTION in [c["id"] for c in api.collections()["collections"]]
    assert api.collection(COLLECTION)["title"] == "Discovered resources"


def test_the_records_are_the_catalogue_records_csw_serves(api, catalogue, auth):
    csw = CatalogueServiceWeb(catalogue.csw, headers=auth, timeout=60)
    csw.getrecords2(esn="brief", maxrecords=1)
    every = items(api)
    assert len(every) == csw.results["matches"] == len({f["id"] for f in every})


def test_text_box_and_type_queries(api):
    water = titles(items(api, q="water"))
    assert {data.GAUGES.title, data.DIKES.title, data.VALAIS.title} <= water
    assert data.PARCELS.title not in water
    bern = titles(items(api, bbox=[7.3, 46.9, 7.5, 47.0]))
    assert data.PARCELS.title in bern and data.RIVERS.title not in bern
    files = items(api, type="dataset")
    assert files and all(f["properties"]["type"] == "dataset" for f in files)
    alpine = items(api, format="WMS", q="alpine")
    assert titles(alpine) == {r.title for r in data.ALPINE}


def test_pages_by_limit_and_offset_cover_the_matches_once(api):
    seen = []
    for offset in range(0, len(data.ALPINE), 10):
        page = api.collection_items(COLLECTION, q="alpine", format="WMS", limit=10, offset=offset)
        assert page["numberMatched"] == len(data.ALPINE)
        assert page["numberReturned"] == min(10, len(data.ALPINE) - offset)
        seen += [f["id"] for f in page["features"]]
    assert len(seen) == len(set(seen)) == len(data.ALPINE)


def test_a_record_carries_its_box_keywords_and_a_service_link_to_follow(api, catalogue):
    [rivers] = [
        f for f in items(api, q="rivers", format="WMS") if f["properties"]["title"] == data.RIVERS.title
    ]
    assert rivers["geometry"]["type"] == "Polygon"
    assert {"hydrology", "river"} <= set(rivers["properties"]["keywords"])
    record = api.collection_item(COLLECTION, rivers["id"])
    assert record["properties"]["title"] == data.RIVERS.title
    links = {link["rel"]: link for link in record["links"] if link.get("type") != "text/html"}
    assert links["service"] == {
        "rel": "service",
        "title": "OGC:WMS",
        "protocol": "OGC:WMS",
        "href": data.RIVERS.url,
    }
    [as_xml] = [link for link in record["links"] if link.get("type") == "application/xml"]
    assert as_xml["href"].startswith(f"{catalogue.csw}?") and "request=GetRecordById" in as_xml["href"]
    served = [f for f in items(api, format="WMS") if f["links"][1]["href"].startswith("http://127.0.0.1:")]
    assert served, "no WMS of the test web in the catalogue"
    for feature in served:
        service = WebMapService(feature["links"][1]["href"], version="1.3.0")
        assert list(service.contents)
    downloads = [
        link for f in items(api, type="dataset") for link in f["links"] if link["rel"] == "enclosure"
    ]
    assert downloads and all(link["protocol"].startswith("WWW:DOWNLOAD-") for link in downloads)


def service_url(feature: dict) -> str:
    return feature["links"][1]["href"]  # after the alternate XML link


def measured(checks: list[tuple]) -> dict:
    """The figures of checks (outcome, operation, total seconds) as the catalogue states them."""
    succeeded = [seconds for outcome, operation, seconds in checks if outcome != "failed"]
    timed = [seconds for outcome, operation, seconds in checks if outcome != "failed" and operation == "GetCapabilities"]  # fmt: skip
    return {
        "availability_30d_percent": round(100 * len(succeeded) / len(checks), 2),
        "checks_30d": len(checks),
        "response_median_seconds": round(median(timed), 3),
    }


def test_a_checked_or_judged_resource_carries_its_quality_and_conformance_level(api, catalogue_dsn):
    """The figures and verdicts of an ISO record's data quality, as properties of the item in a page and on
    its own; a resource never checked nor judged has neither property."""
    with psycopg2.connect(catalogue_dsn) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT DISTINCT inspire_availability_rule, inspire_getmap_rule FROM resource_quality "
            "WHERE type = 'WMS'"
        )
        [(availability_rule, getmap_rule)] = cur.fetchall()
        cur.execute(
            "SELECT 'urn:geoweb:resource:' || id, checks_30d IS NOT NULL, conformance IS NOT NULL FROM resources"
        )
        has = {identifier: (checked, judged) for identifier, checked, judged in cur.fetchall()}
    every = items(api)
    assert {f["id"]: ("quality" in f["properties"], "conformance" in f["properties"]) for f in every} == has
    by_url = {service_url(f): f for f in every}
    steady, flaky = by_url[data.STEADY.url], by_url[data.FLAKY.url]
    assert steady["properties"]["quality"] == {
        **measured(data.STEADY_CHECKS),
        "inspire": [{"rule": availability_rule, "verdict": "met"}, {"rule": getmap_rule, "verdict": "met"}],
    }
    assert measured(data.STEADY_CHECKS) == {
        "availability_30d_percent": 100,
        "checks_30d": 54,
        "response_median_seconds": 0.39,
    }
    assert flaky["properties"]["quality"] == {
        **measured(data.FLAKY_CHECKS),
        "inspire": [
            {"rule": availability_rule, "verdict": "not met"},
            {"rule": getmap_rule, "verdict": "not enough checks"},
        ],
    }
    assert flaky["properties"]["quality"]["availability_30d_percent"] == 66.67
    assert "conformance" not in steady["properties"]
    tiles = api.collection_item(COLLECTION, by_url[data.TILES.url]["id"])
    assert "quality" not in tiles["properties"]
    assert tiles["properties"]["conformance"] == {
        "specification": "OGC WMTS 1.0.0",
        "pass": False,
        "explanation": "Capabilities document identified by its type and version only: no Contents section; "
        "OWSLib's WMTS reader cannot read it: KeyError: 'Contents'",
    }
    assert api.collection_item(COLLECTION, steady["id"])["properties"] == steady["properties"]
    tracks = api.collection_item(COLLECTION, by_url[data.TRACKS.url]["id"])
    assert not {"quality", "conformance"} & tracks["properties"].keys()
