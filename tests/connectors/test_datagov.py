"""data.gov's Catalog API: the stand-in serves the captured answers exactly; the connector reads them as they
are, follows the ``after`` cursor to the empty page, keeps the footprint and picks the service and file
distributions; keys, quotas and broken pages end in clear errors."""

from __future__ import annotations

import json
import logging
import urllib.request

import pytest
from aiohttp import web

from geoweb.connectors import ConnectorError, QuotaExceeded, load_connector
from geoweb.connectors.api import config_from_env
from geoweb.connectors.datagov import DataGov
from tests.standins.datagov import (
    KEY,
    DataGovStandin,
    corpus,
    corpus_results,
    cursor,
    geospatial_dataset,
)

BBOX = (-124.5, 32.5, -114.1, 42.0)
WRONG_KEY = "wrong-datagov-key-never-to-be-shown"


def distributions(n: int) -> list[dict]:
    base = f"https://services.nhd.example.gov/region{n}"
    return [
        {"accessURL": f"{base}/MapServer/WMSServer?request=GetCapabilities&service=WMS", "format": "WMS",
         "mediaType": "application/xml", "title": "Web map service"},
        {"downloadURL": f"{base}/nhd.kmz", "mediaType": "application/vnd.google-earth.kmz", "title": "KMZ"},
        {"downloadURL": f"{base}/nhd_shape.zip", "mediaType": "application/zip", "format": "Zipped Shapefile"},
        {"accessURL": f"{base}/index.html", "mediaType": "text/html", "title": "Landing page"},
        {"downloadURL": f"{base}/wms_layers.csv", "mediaType": "text/csv", "format": "CSV"},
    ]  # fmt: skip


def geospatial(count: int) -> list[dict]:
    return [geospatial_dataset(n, distributions(n), BBOX) for n in range(count)]


@pytest.fixture(scope="module")
def standin():
    with DataGovStandin(corpus_results() + geospatial(7)) as datagov:
        yield datagov


@pytest.fixture(autouse=True)
def fresh(standin):
    standin.reset()


def connector(standin: DataGovStandin, sleeps: list[float] | None = None, **settings: str) -> DataGov:
    return DataGov(standin.config(**settings), sleep=(sleeps if sleeps is not None else []).append)


@pytest.mark.parametrize(
    ("name", "query"), [("search.json", ""), ("search_by_slug.json", "crime-data-from-2020-to-present")]
)
def test_the_standin_answers_as_the_real_api_did(name, query):
    captured = corpus(name)
    with (
        DataGovStandin(captured["results"], key=None) as datagov,
        urllib.request.urlopen(f"{datagov.url}/search?per_page=3&q={query}") as answer,
    ):
        assert json.load(answer) == captured  # cursor included: base64 of the last result's _sort


def test_the_captured_answers_read_as_records():
    captured = corpus("search.json")["results"]
    with DataGovStandin(captured, key=None) as datagov:
        records = list(DataGov(datagov.config()).records(query="", spatial=False))
    assert [r.identifier for r in records] == [r["identifier"] for r in captured]
    first, result = records[0], captured[0]
    assert (
        first.source == "datagov" and first.title == result["title"] and first.keywords == result["keyword"]
    )
    assert (
        first.abstract == result["description"] and first.modified.isoformat() == "2025-07-28T00:00:00+00:00"
    )
    assert [(link.url, link.protocol) for link in first.links] == [
        (d["downloadURL"], d["mediaType"]) for d in result["dcat"]["distribution"]
    ]
    assert first.bbox is None and first.extra["candidates"] == {}  # rows.csv, rows.json...: no candidates
    assert first.extra["landing_page"] == f"https://catalog.data.gov/dataset/{result['slug']}"
    assert len(datagov.requests) == 2  # a short page still has a cursor; the empty page ends it


def test_the_cursor_is_followed_to_the_empty_page_with_the_key_in_a_header(standin):
    records = list(connector(standin, page_size="3").records(query="hydrography"))
    assert [r.identifier for r in records] == [f"USGS-NHD-{n}" for n in range(7)]
    sent = standin.requests
    assert [r.query.get("after") for r in sent] == [None, cursor(geospatial(3)[2]), cursor(geospatial(6)[5]),
                                                    cursor(geospatial(7)[6])]  # fmt: skip
    assert all(r.query["spatial_filter"] == "geospatial" and r.query["q"] == "hydrography" for r in sent)
    assert all(r.headers["x-api-key"] == KEY and KEY not in r.url_text for r in sent)
    assert {r.keyword for r in records} == {"hydrography"}


def test_footprint_and_candidates_of_a_geospatial_dataset(standin):
    record = next(iter(connector(standin).records(query="hydrography", pages=1)))
    assert record.bbox == BBOX
    base = "https://services.nhd.example.gov/region0"
    assert record.extra["candidates"] == {
        f"{base}/MapServer/WMSServer?request=GetCapabilities&service=WMS": "WMS",
        f"{base}/nhd.kmz": "KML",
        f"{base}/nhd_shape.zip": "SHAPEFILE",
    }
    assert len(record.links) == 5  # every distribution is kept; the HTML page and the CSV are no candidates
    assert DataGov.seeds(connector(standin), record)[0] == (
        f"{base}/MapServer/WMSServer?request=GetCapabilities&service=WMS",
        "https://catalog.data.gov/dataset/national-hydrography-dataset-region-0",
    )


def test_spatial_false_reads_every_dataset(standin):
    spatial = list(connector(standin).records(query=""))
    everything = list(connector(standin).records(query="", spatial=False))
    assert len(spatial) == 7 and len(everything) == 7 + len(corpus_results())
    assert "spatial_filter" not in standin.requests[-1].query


def test_no_results(standin):
    assert list(connector(standin).records(query="no such thing anywhere")) == []
    assert len(standin.requests) == 1


def test_rate_limit_is_quota_exceeded_with_the_api_umbrella_message(standin):
    standin.fail(page=2, kind="quota")
    records = []
    with pytest.raises(
        QuotaExceeded, match="page 2: HTTP 429 OVER_RATE_LIMIT: You have exceeded your rate limit"
    ):
        records.extend(connector(standin, page_size="3").records(query="hydrography"))
    assert len(records) == 3


@pytest.mark.parametrize(("key", "code"), [(None, "API_KEY_MISSING"), (WRONG_KEY, "API_KEY_INVALID")])
def test_a_missing_or_refused_key_is_refused_and_never_shown(standin, caplog, key, code):
    caplog.set_level(logging.DEBUG)
    config = {k: v for k, v in standin.config(key=key or "").items() if v}
    with pytest.raises(QuotaExceeded) as refused:
        list(DataGov(config).records(query="hydrography"))
    assert f"page 1: HTTP 403 {code}:" in str(refused.value)
    assert WRONG_KEY not in str(refused.value) and WRONG_KEY not in caplog.text


def test_a_page_failing_half_way_is_named_after_the_earlier_pages(standin):
    standin.fail(page=3, kind="server")
    records = []
    with pytest.raises(ConnectorError, match="datagov: 'hydrography' page 3: HTTP 502 Bad Gateway"):
        records.extend(connector(standin, page_size="2").records(query="hydrography"))
    assert len(records) == 4


def test_malformed_json_is_named(standin):
    standin.fail(page=1, kind="malformed")
    with pytest.raises(ConnectorError, match="page 1: the answer is not JSON"):
        list(connector(standin).records(query="hydrography"))


def test_hostile_results_are_skipped_and_the_rest_kept(caplog):
    good = geospatial(2)
    broken_shape = geospatial_dataset(5, [{"downloadURL": "javascript:alert(1)", "format": "KML"}], BBOX)
    broken_shape["spatial_shape"] = {"type": "Polygon", "coordinates": "nowhere"}
    broken_shape["dcat"]["spatial"] = "Springfield"
    no_identifier = geospatial_dataset(6, [], BBOX) | {"identifier": None, "slug": None}
    no_identifier["dcat"]["identifier"] = None

    class Hostile(DataGovStandin):
        async def answer(self, request):  # one page, with junk where results belong
            results = [good[0], "not a dataset", broken_shape, no_identifier, 42, good[1]]
            return web.json_response({"after": None, "results": results, "sort": "relevance"})

    with Hostile([], key=None) as datagov:
        records = list(DataGov(datagov.config()).records(query="hydrography"))
    assert [r.identifier for r in records] == ["USGS-NHD-0", "USGS-NHD-5", "USGS-NHD-1"]
    assert records[1].bbox is None and records[1].links == []
    assert "dataset USGS-NHD-5: spatial value not a readable footprint" in caplog.text
    assert caplog.text.count("skipped: no identifier") == 3


def test_a_cursor_that_repeats_is_an_error():
    class Looping(DataGovStandin):
        async def answer(self, request):  # always the first page, whatever the cursor
            return await super().answer(request.clone(rel_url=request.path))

    with (
        Looping(geospatial(2), key=None) as datagov,
        pytest.raises(ConnectorError, match="page 2: malformed answer: the after cursor repeats"),
    ):
        list(DataGov(datagov.config()).records(query="", pages=5))


def test_settings_come_from_the_environment(standin):
    environ = {"GEOWEB_DATAGOV_URL": standin.url, "GEOWEB_DATAGOV_KEY": KEY, "GEOWEB_DATAGOV_PAGE_SIZE": "4"}
    datagov = load_connector("datagov", config_from_env("datagov", environ))
    assert len(list(datagov.records(query="hydrography", pages=1))) == 4
