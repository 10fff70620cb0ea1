"""GeoJSON detection: files written by GDAL (geopandas), served from a loopback server, confirmed by content."""

import asyncio
import json

import geopandas as gpd
import pytest
from shapely.geometry import LineString, Point, Polygon

from geoweb.detect.geojson import GeoJSONDetector
from geoweb.settings import Settings
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


# --- over the body cap: identified from its first 64 KiB ----------------------------------------------------


def served_over_the_cap(path, handler=file_handler, max_body_bytes=1024 * 1024):
    """What the crawl and the detector do with ``path`` under a body cap of ``max_body_bytes``."""
    settings = Settings(max_body_bytes=max_body_bytes)

    async def run():
        async with serve({"/big.geojson": handler(path)}) as base:
            first = await LoopbackFetch(settings)(f"{base}/big.geojson")
            fetch = LoopbackFetch(settings)
            ctx = context(fetch, settings=settings, types=TYPES)
            return first, fetch, await GeoJSONDetector().detect(first, ctx), ctx.stats

    return asyncio.run(run())


def test_a_gdal_feature_collection_over_the_body_cap_is_identified_from_its_head(tmp_path):
    lines = [LineString([(14 + i / 10_000, 44), (14 + i / 10_000, 45)]) for i in range(30_000)]
    path = write_geojson(tmp_path, "contours", lines, WRITE_BBOX="YES")
    assert path.stat().st_size > 2 * 1024 * 1024
    first, fetch, [resource], stats = served_over_the_cap(path)
    assert not first.complete
    assert (resource.type, resource.title) == ("GEOJSON", "contours")
    assert resource.bbox == (14.0, 44.0, 14 + 29_999 / 10_000, 45.0)  # GDAL's bbox member, not guessed
    assert resource.extra == {
        "type": "FeatureCollection",
        "features": None,
        "geometry_types": ["LineString"],
        "read": "head",
    }
    assert resource.content_sha256 is None
    assert fetch.sent == [{"Range": "bytes=0-65535"}] and fetch.bytes <= 65536
    assert stats["geojson/large_files"] == 1


def test_over_the_cap_without_a_bbox_member_the_box_is_unknown(tmp_path):
    points = [Point(14 + i / 100_000, 44.5) for i in range(40_000)]
    path = write_geojson(tmp_path, "stations", points)
    _, _, [resource], _ = served_over_the_cap(path)
    assert resource.bbox is None and resource.datasets[0].bbox is None
    assert resource.extra["geometry_types"] == ["Point"]


@pytest.mark.parametrize(
    ("name", "prefix", "reason"),
    [
        ("projected first feature", b'{"type": "FeatureCollection", "features": [{"type": "Feature", "properties": {}, '
         b'"geometry": {"type": "Point", "coordinates": [500000, 5000000]}}', "outside WGS84"),
        ("first feature longer than the head", b'{"type": "FeatureCollection", "features": [{"type": "Feature", '
         b'"geometry": {"type": "LineString", "coordinates": [' + b"[1, 2], " * 20_000, "does not end"),
        ("no FeatureCollection", b'{"type": "Topology", "features": [{"type": "Feature"}', "no FeatureCollection"),
        ("a STAC search page", b'{"type": "FeatureCollection", "stac_version": "1.0.0", "features": [{"type": "Feature", '
         b'"geometry": null, "properties": {}}', "STAC"),
        ("an API page", b'{"type": "FeatureCollection", "numberMatched": 90000, "features": [{"type": "Feature", '
         b'"geometry": null, "properties": {}}', "API's items"),
        ("no features array", b'{"type": "FeatureCollection", "name": "' + b"x" * 70_000, "no features array"),
    ],
)  # fmt: skip
def test_a_head_that_proves_no_geojson_file_is_a_miss(tmp_path, caplog, name, prefix, reason):
    path = tmp_path / "big.geojson"
    path.write_bytes(prefix + b" " * (2 * 1024 * 1024))
    with caplog.at_level("INFO", logger="geoweb.detect"):
        _, fetch, found, stats = served_over_the_cap(path)
    assert found == [] and stats["geojson/miss/not_geojson"] == 1
    assert reason in caplog.records[-1].getMessage()
    assert fetch.bytes <= 65536


def test_ogr2ogr_output_is_titled_by_its_layer_name_bounded(tmp_path):
    # GDAL's GeoJSON driver writes the layer's name member and a CRS84 crs member (tests/data/files/README.md)
    lines = [LineString([(15.1 + i / 500, 45.4), (15.1013 + i / 500, 45.4011), (15.1021 + i / 500, 45.4027)])
             for i in range(7)]  # fmt: skip
    body = write_geojson(tmp_path, "trail_segments", lines).read_bytes()
    assert b'"name": "trail_segments"' in body and b"urn:ogc:def:crs:OGC:1.3:CRS84" in body
    [resource] = detect(response("http://h/data/lines.geojson", body))
    assert (resource.title, resource.extra["features"]) == ("trail_segments", 7)
    long = json.dumps({"type": "FeatureCollection", "name": " a\n" + "b" * 5000, "features": []}).encode()
    [resource] = detect(response("http://h/data/lines.geojson", long))
    assert resource.title.startswith("a bbb") and len(resource.title) == 300
