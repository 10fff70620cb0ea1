"""GeoHub's downloads on the real stack: a search exported in every format and read back with GDAL (pyogrio)
and geopandas, and QGIS connection files parsed back, of one service and of a search's services."""

from __future__ import annotations

import csv
import json
import xml.etree.ElementTree as ET

import geopandas
import pyogrio
import pytest
import shapely

from geoweb.geohub.qgis import Service, connections_xml
from geoweb.harvest.export import FORMATS
from tests.geohub import data

SURVEY = {r.url for r in data.ALPINE}  # what q=survey finds


def exported(get, tmp_path, fmt: str, **params):
    """The export's response, its file written to ``tmp_path``."""
    response = get("/api/export", format=fmt, **params)
    assert response.status_code == 200, response.text
    disposition = response.headers["content-disposition"]
    assert disposition.startswith('attachment; filename="geohub-search-') and disposition.endswith(f'.{fmt}"')
    path = tmp_path / f"export.{fmt}"
    path.write_bytes(response.content)
    return response, path


# --- exports ---


def test_a_geopackage_holds_the_search_s_resources_and_datasets(get, tmp_path):
    response, path = exported(get, tmp_path, "gpkg", q="survey")
    assert response.headers["content-type"] == "application/geopackage+sqlite3"
    assert response.headers["x-export-rows"] == "resources=25, datasets=25"
    assert {name for name, _ in pyogrio.list_layers(path)} == {"resources", "datasets"}
    resources = geopandas.read_file(path, layer="resources")
    assert set(resources["url"]) == SURVEY and resources.crs.to_epsg() == 4326
    assert set(resources.geom_type) == {"MultiPolygon"}
    datasets = geopandas.read_file(path, layer="datasets")
    assert sorted(datasets["name"]) == sorted(f"lake{i}" for i in range(25))
    lake = datasets.set_index("name").loc["lake3"]
    assert lake.resource_url == f"{data.SITE}/alps/3/wms" and lake.title == "Lake 3"
    assert lake.geometry.bounds == pytest.approx((7.15, 46.0, 7.25, 46.1))


@pytest.mark.parametrize("layer", ["resources", "datasets"])
def test_geojson_and_geoparquet_hold_one_layer(get, tmp_path, layer):
    _, geojson = exported(get, tmp_path, "geojson", q="rivers taiwan", layer=layer)
    _, parquet = exported(get, tmp_path, "parquet", q="rivers taiwan", layer=layer)
    frames = [pyogrio.read_dataframe(geojson), geopandas.read_parquet(parquet)]
    expected = {"rivers", "reservoirs"} if layer == "datasets" else {data.RIVERS.title}
    for frame in frames:
        assert set(frame["name" if layer == "datasets" else "title"]) == expected
        assert frame.crs.to_epsg() == 4326 and not frame.geometry.isna().any()


def test_csv_and_json_lines(get, tmp_path):
    response, path = exported(get, tmp_path, "csv", type="WFS")
    assert response.headers["content-type"] == "text/csv; charset=utf-8"
    rows = list(csv.DictReader(path.open(encoding="utf-8")))
    assert {r["url"] for r in rows} == {data.PARCELS.url, data.GAUGES.url}
    assert shapely.from_wkt(rows[0]["WKT"]).geom_type == "MultiPolygon"
    response, path = exported(get, tmp_path, "jsonl", provider=data.AUTHORITY)
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert {(r["url"], r["type"]) for r in records} == {data.GAUGES.key, data.DIKES.key}
    assert {d["name"] for r in records for d in r["dataset_list"]} == {"ms:gauges", "dikes2021"}


def test_the_export_takes_the_search_s_filters(get, tmp_path):
    _, path = exported(get, tmp_path, "gpkg", bbox=",".join(map(str, data.TAIWAN)))
    assert set(pyogrio.read_dataframe(path, layer="resources")["url"]) == {data.RIVERS.url, data.HOSTILE.url}
    _, path = exported(get, tmp_path, "gpkg", footprint="none")
    assert set(pyogrio.read_dataframe(path, layer="resources")["url"]) == {
        data.STATIONS.url,
        data.ARCHIVE.url,
        data.TILES.url,
    }
    _, path = exported(get, tmp_path, "jsonl", conformance=["readable", "identified"])
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert {(r["url"], r["conformance"]) for r in records} == {
        (data.READABLE_SURVEY.url, "readable"),
        (data.TILES.url, "identified"),
    }
    _, path = exported(get, tmp_path, "geojson", q="nothing matches this")
    assert len(pyogrio.read_dataframe(path)) == 0


def test_the_export_of_a_run_holds_what_the_search_of_that_run_finds(get, tmp_path):
    for params in ({"run": data.RUN_2}, {"run": data.RUN_2, "level": 1}, {"q": "survey", "run": data.RUN_1}):
        page = get("/api/search", limit=100, **params).json()
        assert page["next_offset"] is None  # every match on one page, to compare with the whole export
        _, path = exported(get, tmp_path, "gpkg", **params)
        exported_urls = pyogrio.read_dataframe(path, layer="resources")["url"]
        assert sorted(exported_urls) == sorted(hit["url"] for hit in page["results"]), params
    assert len(exported_urls) == 0  # the last: run 1 found no survey


@pytest.mark.parametrize(
    "params",
    [{"format": "shp"}, {}, {"format": "jsonl", "layer": "datasets"}, {"format": "csv", "layer": "parcels"},
     {"format": "gpkg", "type": "WMX"}, {"format": "gpkg", "bbox": "1,2,3"}],
)  # fmt: skip
def test_a_bad_export_is_422(get, params):
    assert get("/api/export", **params).status_code == 422


def test_every_format_is_offered(get):
    spec = get("/openapi.json").json()
    (fmt,) = [p for p in spec["paths"]["/api/export"]["get"]["parameters"] if p["name"] == "format"]
    assert tuple(fmt["schema"]["enum"]) == FORMATS


# --- QGIS connection files ---


def connections(body: bytes, root: str) -> list[dict]:
    assert body.startswith(b'<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE connections>\n')
    document = ET.fromstring(body)
    assert document.tag == root
    return [dict(e.attrib, element=e.tag) for e in document]


@pytest.mark.parametrize(
    ("resource", "root", "element"),
    [(data.RIVERS, "qgsWMSConnections", "wms"), (data.PARCELS, "qgsWFSConnections", "wfs"),
     (data.ARCHIVE, "qgsWCSConnections", "wcs")],
)  # fmt: skip
def test_a_service_s_qgis_connection(get, geohub_dsn, resource, root, element):
    resource_id = data.resource_id(geohub_dsn, resource)
    response = get(f"/api/resources/{resource_id}/qgis-connection.xml")
    assert response.status_code == 200 and response.headers["content-type"] == "application/xml"
    kind = element
    assert response.headers["content-disposition"] == (
        f'attachment; filename="geohub-{resource_id}-{kind}.xml"'
    )
    (connection,) = connections(response.content, root)
    assert connection["element"] == element
    assert connection["name"] == resource.title and connection["url"] == resource.url
    assert connection["username"] == connection["password"] == ""
    if element == "wfs":
        assert connection["version"] == "2.0.0" and connection["pagingenabled"] == "default"
    if element == "wms":
        assert connection["dpiMode"] == "7" and connection["ignoreAxisOrientation"] == "0"


def test_a_file_or_catalogue_has_no_qgis_connection(get, geohub_dsn):
    for resource in (data.HOSTILE, data.STATIONS):
        response = get(f"/api/resources/{data.resource_id(geohub_dsn, resource)}/qgis-connection.xml")
        assert response.status_code == 404 and resource.type in response.json()["detail"]
    assert get("/api/resources/999999999/qgis-connection.xml").status_code == 404


def test_a_search_s_services_in_one_qgis_file(get):
    response = get("/api/qgis-connections.xml", service="WMS", q="survey")
    assert response.headers["content-disposition"] == 'attachment; filename="geohub-search-wms.xml"'
    found = connections(response.content, "qgsWMSConnections")
    assert {c["url"] for c in found} == SURVEY and len({c["name"] for c in found}) == 25
    # the search's types narrow the kind's: none of the WFS is a WMS
    assert (
        connections(get("/api/qgis-connections.xml", service="WMS", type="WFS").content, "qgsWMSConnections")
        == []
    )
    wfs = connections(get("/api/qgis-connections.xml", service="WFS").content, "qgsWFSConnections")
    assert {c["url"] for c in wfs} == {data.PARCELS.url, data.GAUGES.url}
    assert get("/api/qgis-connections.xml", service="CSW").status_code == 422


def test_titles_from_strangers_stay_text_in_a_qgis_file():
    hostile = 'A "quoted" <wms name="x"/> & \x01bell\x0b/nested\\path\n' + "x" * 300
    services = [
        Service("http://a.example/wms?map=a&layers=b", "WMS", "1.3.0", hostile),
        Service(
            "http://a.example/wms?map=a&layers=b", "WMTS", "1.0.0", hostile
        ),  # the same name: made unique
        Service("http://b.example/ows/", "WMS", None, None),
        Service("http://b.example/wfs", "WFS", None, "not in a WMS file"),
    ]
    found = connections(connections_xml("WMS", services), "qgsWMSConnections")
    assert [c["url"] for c in found] == [services[0].url, services[1].url, services[2].url]
    first, second, unnamed = (c["name"] for c in found)
    assert first.startswith('A "quoted" <wms name="x" - > & bell - nested - path x') and len(first) <= 120
    assert second == f"{first} (2)" and unnamed == "b.example - ows"
    assert all("/" not in c["name"] for c in found)
    (wfs,) = connections(connections_xml("WFS", services), "qgsWFSConnections")
    assert wfs["version"] == "auto"
