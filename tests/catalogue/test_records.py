"""OGC API - Records through GeoHub's /geohub/records, read with OWSLib's client: the same records as CSW
(pygeoapi asks the catalogue's pycsw), by text, box and type, paged by limit and offset, with links that
keep their protocol and lead to the service."""

from __future__ import annotations

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
