"""A CKAN portal's Action API: package_search paged by start until count, resources as links and candidates,
the spatial extra as the footprint; refusals, broken pages and hostile packages end in clear errors or are
skipped with a log line."""

from __future__ import annotations

import json

import pytest
from aiohttp import web

from geoweb.connectors import ConfigError, ConnectorError, QuotaExceeded, load_connector
from geoweb.connectors.ckan import CKAN
from tests.standins.ckan import CKANStandin, package

SPATIAL = json.dumps({"type": "Polygon", "coordinates": [[[5.9, 45.8], [10.5, 45.8], [10.5, 47.8], [5.9, 47.8],
                                                          [5.9, 45.8]]]})  # fmt: skip


def resources(n: int) -> list[dict]:
    base = f"https://geo.portal.example.ch/land-use-{n}"
    return [
        {"url": f"{base}/ows?SERVICE=WFS&REQUEST=GetCapabilities", "format": "WFS"},
        {"url": f"{base}/download?id={n}", "format": "", "mimetype": "application/vnd.google-earth.kml+xml"},
        {"url": f"{base}/land_use_shp.zip", "format": "ZIP"},
        {"url": f"{base}/table.csv", "format": "CSV"},
        {"url": "ftp://old.example.ch/land-use.zip", "format": "ZIP"},
    ]


@pytest.fixture(scope="module")
def standin():
    with CKANStandin([package(n, resources(n), SPATIAL) for n in range(25)]) as ckan:
        yield ckan


@pytest.fixture(autouse=True)
def fresh(standin):
    standin.reset()


def connector(standin: CKANStandin, sleeps: list[float] | None = None, **settings: str) -> CKAN:
    config = standin.config(**{"page_size": "10", **settings})
    return CKAN(config, sleep=(sleeps if sleeps is not None else []).append)


def test_pages_are_read_by_start_until_count(standin):
    records = list(connector(standin).records(query="land use"))
    assert [r.title for r in records] == [f"Land use {n}" for n in range(25)]
    assert [(r.query["start"], r.query["rows"]) for r in standin.requests] == [("0", "10"), ("10", "10"),
                                                                                ("20", "10")]  # fmt: skip


def test_exactly_full_pages_need_no_extra_request(standin):
    assert len(list(connector(standin, page_size="5").records(query="land use", pages=10))) == 25
    assert len(standin.requests) == 5


def test_no_results(standin):
    assert list(connector(standin).records(query="glaciers")) == []
    assert len(standin.requests) == 1


def test_a_dataset_as_a_record(standin):
    record = next(iter(connector(standin).records(query="land use 7")))
    assert record.source == f"ckan:{standin.url}" and record.keyword == "land use 7"
    assert record.keywords == ["land use", "planning"] and record.bbox == (5.9, 45.8, 10.5, 47.8)
    assert record.modified.isoformat() == "2025-04-08T10:30:00.123456+00:00"
    base = "https://geo.portal.example.ch/land-use-7"
    assert record.extra["candidates"] == {
        f"{base}/ows?SERVICE=WFS&REQUEST=GetCapabilities": "WFS",
        f"{base}/download?id=7": "KML",
        f"{base}/land_use_shp.zip": "SHAPEFILE",
    }
    assert len(record.links) == 4  # the ftp resource is no link
    assert record.extra["landing_page"] == f"{standin.url}/dataset/land-use-7"


def test_an_empty_query_reads_every_dataset(standin):
    assert len(list(connector(standin, page_size="100").records())) == 25
    assert "q" not in standin.requests[0].query


def test_a_refusal_is_quota_exceeded_with_ckans_message(standin):
    standin.fail(page=2, kind="quota")
    with pytest.raises(QuotaExceeded, match="page 2: HTTP 403 Authorization Error: Access denied: too many"):
        list(connector(standin).records(query="land use"))


def test_a_page_failing_half_way_is_named(standin):
    standin.fail(page=3, kind="server")
    records = []
    with pytest.raises(ConnectorError, match=r"page 3: HTTP 500 Internal Server Error"):
        records.extend(connector(standin).records(query="land use"))
    assert len(records) == 20


def test_malformed_json_is_named(standin):
    standin.fail(page=2, kind="malformed")
    with pytest.raises(ConnectorError, match="page 2: the answer is not JSON"):
        list(connector(standin).records(query="land use"))


def test_rows_beyond_the_portals_limit_are_refused_before_asking(standin):
    with pytest.raises(ConfigError, match="setting page_size must be 1 to 1000"):
        connector(standin, page_size="5000")
    with pytest.raises(ConfigError, match=r"ckan: missing setting\(s\) url"):
        load_connector("ckan", {})


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ({"success": True, "result": {"count": "many", "results": []}}, "result.count is not a number"),
        ({"success": True, "result": {"count": 3, "results": {"a": 1}}}, "result.results not a list"),
        ({"success": True}, "no result object"),
        ({"success": False, "error": {"__type": "Search Query Error", "message": "Invalid search"}},
         "Search Query Error: Invalid search"),
        (["not", "an", "object"], "no result object"),
    ],
)  # fmt: skip
def test_answers_out_of_shape_are_errors(answer, error):
    class Broken(CKANStandin):
        async def answer(self, request):
            return web.json_response(answer)

    with Broken([]) as ckan, pytest.raises(ConnectorError, match=f"page 1: .*{error}"):
        list(CKAN(ckan.config()).records(query="x"))


def test_hostile_packages_are_skipped_and_the_rest_kept(caplog):
    good = package(1, resources(1), SPATIAL)
    odd = package(2, [{"url": "https://x.example/a.kml", "format": 7}], "Bern")
    odd["resources"][:0] = [{"url": None}, "a string"]
    odd["tags"] = "not a list"

    class Hostile(CKANStandin):
        async def answer(self, request):
            results = [good, "a string", {"name": None}, odd]
            return web.json_response({"success": True, "result": {"count": 4, "results": results}})

    with Hostile([]) as ckan:
        records = list(CKAN(ckan.config()).records(query="x"))
    assert [r.title for r in records] == ["Land use 1", "Land use 2"]
    assert records[1].keywords == [] and records[1].bbox is None
    assert [link.url for link in records[1].links] == ["https://x.example/a.kml"]
    assert records[1].extra["candidates"] == {"https://x.example/a.kml": "KML"}
    assert caplog.text.count("skipped: no id") == 2
