"""GeoJSON detection: files written by GDAL (geopandas), served from a loopback server, confirmed by content."""

import asyncio
import json

import geopandas as gpd
import pytest
from shapely.geometry import LineString, Point, Polygon

from geoweb.detect.geojson import GeoJSONDetector
from tests.data.files.make_fixtures import LoopbackFetch, context, file_handler, response, serve

TYPES = ("GEOJSON",)


def detect(resp, ctx=None):
    return asyncio.run(GeoJSONDetector().detect(resp, ctx or context(types=TYPES)))


def fetched(path, route: str):
    """The response of a real GET of ``path`` served at ``route``."""

    async def run():
        async with serve({route: file_handler(path)}) as base:
            return await LoopbackFetch()(base + route)

    return asyncio.run(run())


def write_geojson(tmp_path, name: str, geometries, crs="EPSG:4326", **options):
    path = tmp_path / f"{name}.geojson"
    frame = gpd.GeoDataFrame({"id": range(len(geometries))}, geometry=geometries, crs=crs)
    frame.to_file(path, driver="GeoJSON", layer=name, **options)
    return path


@pytest.mark.parametrize(
    ("url", "headers", "body"),
    [
        ("http://h/data/parks.GEOJSON", {}, b""),
        ("http://h/data/parks.json", {}, b""),
        ("http://h/get?id=1", {"content-type": "application/geo+json; charset=utf-8"}, b""),
        ("http://h/get?id=1", {"content-disposition": 'attachment; filename="a.geojson"'}, b""),
        ("http://h/get?id=1", {"content-type": "text/plain"}, b' \n{"type": "FeatureCollection", "features": []}'),
        ("http://h/get?id=1", {}, b'{"properties": {}, "type" : "Feature"}'),
    ],
)  # fmt: skip
def test_accepts(url, headers, body):
    assert GeoJSONDetector().accepts(response(url, body, headers=headers))


@pytest.mark.parametrize(
    ("url", "headers", "body"),
    [
        ("http://h/index.html", {"content-type": "text/html"}, b"<html>FeatureCollection</html>"),
        ("http://h/api", {"content-type": "application/json"}, b'{"type": "Service", "features": 3}'),
        ("http://h/parks.kml", {}, b"<kml/>"),
    ],
)
def test_does_not_accept(url, headers, body):
    assert not GeoJSONDetector().accepts(response(url, body, headers=headers))


def test_feature_collection_from_gdal_with_its_bbox_member(tmp_path):
    geometries = [Point(5, 50), LineString([(6, 51), (7, 52)])]
    path = write_geojson(tmp_path, "parks", geometries, WRITE_BBOX="YES")
    assert json.loads(path.read_bytes())["bbox"] == [5, 50, 7, 52]
    ctx = context(types=TYPES)
    [resource] = detect(fetched(path, "/files/parks.geojson"), ctx)
    assert (resource.type, resource.title, resource.bbox) == ("GEOJSON", "parks", (5.0, 50.0, 7.0, 52.0))
    assert resource.url.endswith("/files/parks.geojson")
    assert resource.extra == {
        "type": "FeatureCollection",
        "features": 2,
        "geometry_types": ["LineString", "Point"],
    }
    [dataset] = resource.datasets
    assert (dataset.name, dataset.bbox, dataset.extra["features"]) == ("parks", resource.bbox, 2)
    assert resource.content_sha256 is not None
    assert ctx.stats["geojson/found"] == 1


def test_bbox_computed_when_absent_and_null_geometries_counted(tmp_path):
    square = Polygon([(-10, -5), (20, -5), (20, 30), (-10, 30)])
    path = write_geojson(tmp_path, "zones", [square, None, Point(-170, 80)])
    [resource] = detect(fetched(path, "/zones.json"))
    assert resource.bbox == (-170.0, -5.0, 20.0, 80.0)
    assert resource.extra["features"] == 3
    assert resource.extra["geometry_types"] == ["Point", "Polygon"]


def test_an_invalid_bbox_member_is_replaced_by_the_computed_one():
    doc = {"type": "Feature", "bbox": [0, 0, 500, 1], "geometry": {"type": "Point", "coordinates": [1, 2]}}
    [resource] = detect(response("http://h/p.json", json.dumps(doc).encode()))
    assert resource.bbox == (1.0, 2.0, 1.0, 2.0)
    assert resource.title is None and resource.datasets[0].name == "p"


def test_bare_geometry_and_nested_geometry_collection():
    doc = {
        "type": "GeometryCollection",
        "title": "mixed",
        "geometries": [
            {"type": "MultiPoint", "coordinates": [[1, 1], [2, 3]]},
            {"type": "GeometryCollection", "geometries": [{"type": "Point", "coordinates": [-4, -4, 12.5]}]},
        ],
    }
    [resource] = detect(response("http://h/g.geojson", json.dumps(doc).encode()))
    assert resource.title == "mixed"
    assert resource.bbox == (-4.0, -4.0, 2.0, 3.0)
    assert resource.extra["geometry_types"] == ["MultiPoint", "Point"]


def test_not_wanted_type_is_skipped():
    body = b'{"type": "Feature", "geometry": null}'
    assert detect(response("http://h/a.geojson", body), context(types=("KML",))) == []
