"""Zipped shapefile detection: downloaded archives read with pyogrio, large ones through HTTP Range reads."""

import asyncio
import os
from pathlib import Path
from zipfile import ZIP_STORED as STORED

import pyogrio
import pytest
from pyproj import Transformer
from shapely.geometry import Polygon

from geoweb.detect import load_detector
from geoweb.detect.crs import reprojected_bbox
from geoweb.detect.shapefile import ShapefileDetector, find_shapefiles
from geoweb.fetch import Fetcher
from geoweb.models import OGC_TYPES
from geoweb.settings import Settings
from geoweb.ziputil import TAIL_BYTES, list_members
from tests.data.corpus import RECORDS as RECORDS_CORPUS
from tests.data.files.make_fixtures import (
    MB,
    LoopbackFetch,
    context,
    file_handler,
    padded_shapefile_members,
    response,
    serve,
    shapefile_members,
    wgs84_lines,
    zip64_bytes,
    zip_bytes,
)

# The UTM fixture points, reprojected by pyproj on their own: the detector must agree.
UTM_BBOX_WGS84 = Transformer.from_crs("EPSG:32633", "EPSG:4326", always_xy=True).transform_bounds(
    500000, 5000000, 520000, 5020000, densify_pts=21
)


def detect(resp, ctx=None):
    return asyncio.run(ShapefileDetector().detect(resp, ctx or context()))


def names(data: bytes) -> list[str]:
    return [entry.name for entry in list_members(data)]


def test_find_shapefiles_groups_members_by_stem_in_any_case_and_folder():
    data = zip_bytes(
        {
            "a/Roads.SHP": b"", "a/roads.shx": b"", "a/ROADS.dbf": b"", "a/roads.prj": b"",
            "rivers.shp": b"", "rivers.shx": b"",  # no .dbf: not a shapefile
            "b/roads.shp": b"", "b/roads.shx": b"", "b/roads.dbf": b"",  # same stem, other folder
            "__MACOSX/a/._Roads.SHP": b"", "__MACOSX/a/._roads.shx": b"", "__MACOSX/a/._ROADS.dbf": b"",
            "notes.txt": b"",
        }
    )  # fmt: skip
    found = find_shapefiles(list_members(data))
    assert [(s.path, s.stem, sorted(s.members)) for s in found] == [
        ("a/Roads.SHP", "Roads", [".dbf", ".prj", ".shp", ".shx"]),
        ("b/roads.shp", "roads", [".dbf", ".shp", ".shx"]),
    ]


@pytest.mark.parametrize(
    ("url", "headers", "body"),
    [
        ("http://h/data/parcels.ZIP", {}, b""),
        ("http://h/get?id=1", {"content-type": "application/zip"}, b""),
        ("http://h/get?id=1", {"content-type": "application/x-zip-compressed"}, b""),
        ("http://h/get?id=1", {"content-type": "application/octet-stream", "content-disposition": "filename=a.zip"}, b""),
        ("http://h/get?id=1", {"content-type": "text/plain"}, b"PK\x03\x04rest"),
    ],
)  # fmt: skip
def test_accepts(url, headers, body):
    assert ShapefileDetector().accepts(response(url, body, headers=headers))


@pytest.mark.parametrize(
    ("url", "headers"),
    [
        ("http://h/index.html", {"content-type": "text/html"}),
        ("http://h/get?id=1", {"content-type": "application/octet-stream"}),
        ("http://h/parks.kmz", {"content-type": "application/vnd.google-earth.kmz"}),
    ],
)
def test_does_not_accept(url, headers):
    assert not ShapefileDetector().accepts(response(url, b"<html></html>", headers=headers))


def test_downloaded_archive_described_with_pyogrio(tmp_path):
    members = {f"GIS/{name}": data for name, data in shapefile_members(tmp_path, "parcels").items()}
    members.update({name.upper(): data for name, data in wgs84_lines(tmp_path).items()})
    data = zip_bytes(members)
    ctx = context()
    [resource] = detect(response("http://H/files/data.zip#x", data), ctx)
    assert (resource.url, resource.type) == ("http://h/files/data.zip", "SHAPEFILE")
    assert resource.extra == {
        "archive_bytes": len(data),
        "files": ["GIS/parcels.shp", "ROADS.SHP"],
        "inspected": "download",
    }
    parcels, roads = resource.datasets
    assert parcels.name == "parcels"
    assert parcels.extra == {
        "path": "GIS/parcels.shp",
        "features": 3,
        "geometry_type": "Point",
        "crs": "EPSG:32633",
    }
    assert parcels.bbox == pytest.approx(UTM_BBOX_WGS84)
    # No .prj: the CRS is unknown, and the bbox is kept because its values are degrees.
    assert roads.name == "ROADS"
    assert roads.extra == {"path": "ROADS.SHP", "features": 2, "geometry_type": "LineString", "crs": None}
    assert roads.bbox == (5.0, 50.0, 7.0, 52.0)
    assert resource.bbox == pytest.approx((5.0, UTM_BBOX_WGS84[1], UTM_BBOX_WGS84[2], 52.0))
    assert ctx.stats["shapefile/found/download"] == 1
    assert pyogrio.vsi_listtree("/vsimem/") == []  # nothing left in GDAL's memory file system


def test_projected_shapefile_without_prj_has_no_bbox(tmp_path):
    members = {n: d for n, d in shapefile_members(tmp_path, "utm").items() if not n.endswith(".prj")}
    [resource] = detect(response("http://h/utm.zip", zip_bytes(members)))
    assert resource.datasets[0].extra["crs"] is None
    assert resource.datasets[0].bbox is None and resource.bbox is None


def test_empty_shapefile_has_no_bbox(tmp_path):
    members = shapefile_members(tmp_path, "empty", geometries=[])
    [resource] = detect(response("http://h/empty.zip", zip_bytes(members)))
    assert resource.datasets[0].extra["features"] == 0
    assert resource.datasets[0].bbox is None


@pytest.mark.parametrize(
    ("bounds", "crs", "expected"),
    [
        ((1.0, 2.0, 3.0, 4.0), None, (1.0, 2.0, 3.0, 4.0)),
        ((1.0, 2.0, 300.0, 4.0), None, None),
        ((1.0, float("nan"), 3.0, 4.0), "EPSG:4326", None),
        (None, "EPSG:4326", None),
        ((1.0, 2.0, 3.0, 4.0), "NOT A CRS", None),
    ],
)
def test_reprojected_bbox_edge_cases(bounds, crs, expected):
    assert reprojected_bbox(bounds, crs) == expected


def test_run_without_shapefile_type_detects_nothing(tmp_path):
    data = zip_bytes(shapefile_members(tmp_path, "a"))
    assert detect(response("http://h/a.zip", data), context(types=OGC_TYPES)) == []


def test_registered_under_its_short_name():
    detector = load_detector("shapefile")
    assert isinstance(detector, ShapefileDetector)
    assert (detector.name, detector.types) == ("shapefile", ("SHAPEFILE",))


# --- over the download cap: the central directory through HTTP Range -----------------------------------------


async def crawl_and_detect(path, ctx_settings=None):
    """What the crawl does: a capped GET (not read: over the cap), then the detector's Range reads."""
    settings = ctx_settings or Settings()
    async with serve({"/files/parcels.zip": file_handler(path)}) as base:
        url = f"{base}/files/parcels.zip"
        first = await LoopbackFetch(settings)(url)
        fetch = LoopbackFetch(settings)
        resources = await ShapefileDetector().detect(first, context(fetch, settings=settings))
    return first, fetch, resources


@pytest.mark.parametrize(
    ("build", "requests"),
    [
        (lambda members, patch: zip_bytes(members, compression=STORED), 1),
        (lambda members, patch: zip64_bytes(members, patch, compression=STORED), 1),
        # The longest comment pushes the directory out of the tail: a second Range request reads it.
        (lambda members, patch: zip_bytes(members, compression=STORED, comment=b"c" * 0xFFFF), 2),
    ],
    ids=["zip", "zip64", "long-comment"],
)
def test_12mb_archive_identified_by_range_without_download(tmp_path, monkeypatch, build, requests):
    path = tmp_path / "parcels.zip"
    path.write_bytes(build(padded_shapefile_members(tmp_path), monkeypatch))
    size = path.stat().st_size
    assert size > 12 * MB

    first, fetch, [resource] = asyncio.run(crawl_and_detect(path))
    assert not first.complete and first.body == b""
    assert resource.url.endswith("/files/parcels.zip")
    assert resource.extra == {"archive_bytes": size, "files": ["data/parcels.shp"], "inspected": "range"}
    assert [(d.name, d.extra) for d in resource.datasets] == [("parcels", {"path": "data/parcels.shp"})]
    assert fetch.sent[0] == {"Range": f"bytes=-{TAIL_BYTES}"}
    assert fetch.requests == requests
    assert fetch.bytes <= TAIL_BYTES + 2000  # the tail, plus a small directory when it lies before it


def test_range_read_through_the_project_fetcher(tmp_path):
    """The crawl's own Fetcher: the capped GET reads nothing, one Range request reads the tail."""
    path = tmp_path / "parcels.zip"
    path.write_bytes(zip_bytes(padded_shapefile_members(tmp_path), compression=STORED))
    settings = Settings(allowed_hosts=frozenset({"127.0.0.1"}), obey_robots=False)

    async def run():
        async with serve({"/parcels.zip": file_handler(path)}) as base, Fetcher(settings) as fetcher:
            first = await fetcher.get(f"{base}/parcels.zip")
            resources = await ShapefileDetector().detect(first, context(fetcher.get, settings=settings))
            return resources, fetcher.stats

    [resource], stats = asyncio.run(run())
    assert resource.extra["files"] == ["data/parcels.shp"]
    assert (stats["fetch/requests"], stats["fetch/status/206"], stats["fetch/bytes"]) == (2, 1, TAIL_BYTES)


def test_complete_body_over_the_download_cap_goes_by_range(tmp_path):
    path = tmp_path / "parcels.zip"
    path.write_bytes(zip_bytes(padded_shapefile_members(tmp_path, padding=300_000)))
    settings = Settings(shapefile_download_cap=100_000)
    first, fetch, [resource] = asyncio.run(crawl_and_detect(path, settings))
    assert first.complete
    assert resource.extra["inspected"] == "range"
    assert fetch.requests == 1


# --- titles from a metadata member (tests/data/files/shapefile/README.md) ------------------------------------

RECORDS = Path(__file__).resolve().parents[1] / "data" / "files" / "shapefile"
ESRI_METADATA = (
    b'<?xml version="1.0"?><metadata xml:lang="en"><Esri><ArcGISFormat>1.0</ArcGISFormat></Esri>'
    b"<dataIdInfo><idCitation><resTitle>Study area box</resTitle></idCitation>"
    b"<idAbs>The box of the 2014 survey.</idAbs></dataIdInfo></metadata>"
)
SINKHOLES_ABSTRACT = "418 Mapped sinkholes: each sinkhole is referenced to a survey sheet, a depth class"


@pytest.fixture(scope="module")
def box(tmp_path_factory):
    """A shapefile of one polygon in WGS 84 / UTM zone 18N, as {file name: bytes}."""
    polygon = Polygon(
        [(430_000, 4_810_000), (436_000, 4_810_000), (436_000, 4_815_000), (430_000, 4_815_000)]
    )
    return shapefile_members(tmp_path_factory.mktemp("box"), "box", crs="EPSG:32618", geometries=[polygon])


@pytest.mark.parametrize(
    ("member", "metadata", "title", "abstract"),
    [
        ("box.shp.xml", (RECORDS / "sinkholes_fgdc.xml").read_bytes(), "SINKHOLES",
         SINKHOLES_ABSTRACT),  # FGDC CSDGM, as ArcMap wrote .shp.xml
        ("box.shp.xml", (RECORDS / "sinkholes_iso19139.xml").read_bytes(), "SINKHOLES",
         SINKHOLES_ABSTRACT),  # ISO 19139
        ("box.xml", (RECORDS / "springs_iso19115-3.xml").read_bytes(), "Sources karstiques protégées - Série",
         "Cette collection de données comprend les zones de protection"),  # ISO 19115-3
        ("box.shp.xml", (RECORDS_CORPUS / "9250AA67-F3AC-6C12-0CB9-0662231AA181_iso.xml").read_bytes(),
         "ALLSPECIES", "272 Categorized Initiatives"),  # a real ISO 19139 record
        ("BOX.SHP.XML", ESRI_METADATA, "Study area box", "The box of the 2014 survey."),  # ArcGIS's own format
        ("box.shp.xml", b"<html><body>metadata</body></html>", None, None),  # no known record
        ("box.shp.xml", b'<!DOCTYPE m [<!ENTITY a "aaaa">]><metadata>&a;</metadata>', None, None),  # refused
    ],
)  # fmt: skip
def test_the_title_comes_from_the_metadata_member(tmp_path, box, member, metadata, title, abstract):
    archive = zip_bytes(box | {member: metadata})
    padded = tmp_path / "box.zip"
    padded.write_bytes(
        zip_bytes(box | {member: metadata, "padding.bin": os.urandom(11 * MB)}, compression=STORED)
    )
    [whole] = detect(response("http://h/box.zip", archive))
    _, fetch, [ranged] = asyncio.run(crawl_and_detect(padded))
    for resource in (whole, ranged):
        [dataset] = resource.datasets
        assert (resource.title, dataset.title, dataset.name) == (title, title, "box")
        assert (resource.abstract or "").startswith(abstract or "")
        assert dataset.extra.get("abstract") == resource.abstract
    assert whole.datasets[0].extra["features"] == 1 and whole.datasets[0].extra["crs"] == "EPSG:32618"
    assert fetch.requests == 2  # the directory, then the metadata member


def test_without_metadata_there_is_no_title(box):
    [resource] = detect(response("http://h/box.zip", zip_bytes(box)))
    assert (resource.title, resource.abstract, resource.datasets[0].title) == (None, None, None)
