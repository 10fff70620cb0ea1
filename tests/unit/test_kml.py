"""KML and KMZ detection: what is accepted, what is confirmed, and what is extracted."""

import asyncio
import hashlib
import os
import zipfile
from pathlib import Path
from zipfile import ZIP_STORED as STORED

import pytest

from geoweb.detect import load_detector
from geoweb.detect.kml import KMLDetector
from geoweb.models import OGC_TYPES
from geoweb.settings import Settings
from geoweb.ziputil import TAIL_BYTES
from tests.data.files.make_fixtures import (
    MB,
    PARKS_KML,
    LoopbackFetch,
    context,
    file_handler,
    kml_bytes,
    legacy_kml,
    response,
    serve,
    zip_bytes,
)

KMZ_HEADERS = {"content-type": "application/vnd.google-earth.kmz"}


def detect(resp, ctx=None):
    return asyncio.run(KMLDetector().detect(resp, ctx or context()))


def datasets(resource):
    return [(d.name, d.bbox, d.extra) for d in resource.datasets]


@pytest.mark.parametrize(
    ("url", "headers", "body"),
    [
        ("http://h/data/parks.kml", {}, b""),
        ("http://h/data/PARKS.KMZ?x=1", {}, b""),
        ("http://h/get", {"content-type": "application/vnd.google-earth.kml+xml; charset=utf-8"}, b""),
        ("http://h/get", KMZ_HEADERS, b""),
        ("http://h/download?id=5", {"content-disposition": 'attachment; filename="parks.kmz"'}, b""),
        ("http://h/download?id=5", {"content-type": "text/plain"}, PARKS_KML),  # headers lie, content tells
        ("http://h/download?id=6", {"content-type": "application/zip"}, zip_bytes({"doc.kml": PARKS_KML})),
    ],
)
def test_accepts(url, headers, body):
    assert KMLDetector().accepts(response(url, body, headers=headers))


@pytest.mark.parametrize(
    ("url", "headers", "body"),
    [
        ("http://h/index.html", {"content-type": "text/html"}, b"<html><body>KML files</body></html>"),
        ("http://h/data.zip", {"content-type": "application/zip"}, zip_bytes({"a.shp": b"x"})),
        ("http://h/wms?request=GetCapabilities", {}, b'<?xml version="1.0"?><WMS_Capabilities/>'),
    ],
)
def test_does_not_accept(url, headers, body):
    assert not KMLDetector().accepts(response(url, body, headers=headers))


def test_kml_document_extracted():
    ctx = context()
    [resource] = detect(response("http://H.example:80/data/parks.kml#top", PARKS_KML), ctx)
    assert resource.url == "http://h.example/data/parks.kml"
    assert (resource.type, resource.version) == ("KML", "2.2")
    assert resource.title == "City parks"
    assert resource.abstract == "Parks and trails of the city"
    assert resource.extra == {"placemarks": 4, "format": "kml"}
    # Point, LinearRing, LineString and gx:Track coordinates all count.
    assert resource.bbox == (9.0, 44.0, 12.75, 47.5)
    assert datasets(resource) == [
        ("Parks", (10.5, 45.25, 11.5, 46.5), {"placemarks": 2}),
        ("Trails", (9.0, 44.0, 12.75, 47.5), {"placemarks": 2}),
    ]
    assert ctx.stats["kml/found"] == 1


@pytest.mark.parametrize(
    ("namespace", "version"),
    [
        ("http://www.opengis.net/kml/2.2", "2.2"),
        ("http://earth.google.com/kml/2.0", "2.0"),
        ("http://earth.google.com/kml/2.1", "2.1"),
        ("http://earth.google.com/kml/2.2", "2.2"),
    ],
)
def test_version_from_namespace(namespace, version):
    doc = kml_bytes("<Placemark><Point><coordinates>1,2</coordinates></Point></Placemark>", ns=namespace)
    [resource] = detect(response("http://h/a.kml", doc))
    assert resource.version == version
    assert resource.bbox == (1.0, 2.0, 1.0, 2.0)


def test_bad_and_out_of_range_coordinates_are_skipped():
    doc = kml_bytes(
        "<Placemark><LineString><coordinates>"
        "1,2 x,y 500,10 10,95 nan,nan 3 , 4,5,6,7 inf,1\n"
        "</coordinates></LineString></Placemark>"
        "<Placemark><Point><coordinates></coordinates></Point></Placemark>"
    )
    [resource] = detect(response("http://h/a.kml", doc))
    assert resource.bbox == (1.0, 2.0, 4.0, 5.0)
    assert resource.extra["placemarks"] == 2


def test_kml_without_coordinates_has_no_bbox():
    doc = kml_bytes(
        "<Document><name>Links</name><NetworkLink><Link><href>x.kml</href></Link></NetworkLink></Document>"
    )
    [resource] = detect(response("http://h/links.kml", doc))
    assert resource.bbox is None and resource.datasets[0].bbox is None
    assert resource.extra == {"placemarks": 0, "format": "kml"}


def test_kmz_served_from_a_url_without_extension():
    kmz = zip_bytes({"images/icon.png": b"\x89PNG", "other.kml": kml_bytes(""), "doc.kml": PARKS_KML})
    headers = {"content-type": "application/octet-stream", "content-disposition": 'filename="parks.kmz"'}
    resp = response("http://h/download?id=5", kmz, headers=headers)
    assert KMLDetector().accepts(resp)
    [resource] = detect(resp)
    assert resource.url == "http://h/download?id=5"
    assert resource.title == "City parks"  # doc.kml wins over an earlier .kml member
    assert resource.extra == {"placemarks": 4, "format": "kmz"}


def test_kmz_without_doc_kml_uses_the_first_kml_member():
    kmz = zip_bytes({"files/readme.txt": b"hi", "files/b.kml": PARKS_KML, "files/a.kml": kml_bytes("")})
    [resource] = detect(response("http://h/a.kmz", kmz, headers=KMZ_HEADERS))
    assert resource.title == "City parks"


def test_run_without_kml_type_detects_nothing():
    assert detect(response("http://h/parks.kml", PARKS_KML), context(types=OGC_TYPES)) == []


def test_registered_under_its_short_name():
    detector = load_detector("kml")
    assert isinstance(detector, KMLDetector)
    assert (detector.name, detector.types) == ("kml", ("KML",))


# --- over the body cap: the directory, then doc.kml, through HTTP Range ---------------------------------------


def big_kmz(tmp_path, *, padding: int = 12 * MB, comment: bytes = b"", doc: bytes = PARKS_KML):
    """A KMZ whose photos push it over the body cap; doc.kml sits before them, as Google Earth writes it."""
    path = tmp_path / "parks.kmz"
    members = {"doc.kml": doc, "files/photo.jpg": os.urandom(padding)}
    path.write_bytes(zip_bytes(members, compression=STORED, comment=comment))
    return path


async def crawl_and_detect(handler, settings=None):
    """What the crawl does: a capped GET that reads nothing, then the detector's Range reads."""
    settings = settings or Settings()
    async with serve({"/files/parks.kmz": handler}) as base:
        first = await LoopbackFetch(settings)(f"{base}/files/parks.kmz")
        fetch = LoopbackFetch(settings)
        ctx = context(fetch, settings=settings)
        resources = await KMLDetector().detect(first, ctx)
    return first, fetch, resources, ctx.stats


def test_kmz_over_the_cap_read_by_range(tmp_path):
    path = big_kmz(tmp_path)
    first, fetch, [resource], stats = asyncio.run(crawl_and_detect(file_handler(path)))
    assert not first.complete and first.body == b""
    assert resource.url.endswith("/files/parks.kmz")
    assert (resource.title, resource.extra) == ("City parks", {"placemarks": 4, "format": "kmz"})
    assert [d.name for d in resource.datasets] == ["Parks", "Trails"]
    assert resource.content_sha256 is None  # the file was never held whole
    # the tail (with the directory), then doc.kml's header and data: the photos are never read
    assert fetch.requests == stats["kml/range_requests"] == 2
    assert fetch.sent[0] == {"Range": f"bytes=-{TAIL_BYTES}"}
    assert fetch.bytes < TAIL_BYTES + len(PARKS_KML) + 2048


def test_kmz_by_range_with_a_long_member_extra_field(tmp_path, monkeypatch):
    """A local extra field longer than the allowance costs one more request, not a wrong read."""
    monkeypatch.setattr("geoweb.detect.rangezip.EXTRA_FIELD_ALLOWANCE", 0)
    path = big_kmz(tmp_path)
    _, fetch, [resource], _ = asyncio.run(crawl_and_detect(file_handler(path)))
    assert resource.title == "City parks" and fetch.requests == 2  # the name's allowance covers 0 extra
    # a member whose local header carries 600 extra bytes
    with zipfile.ZipFile(path, "w", STORED) as archive:
        info = zipfile.ZipInfo("doc.kml")
        info.extra = b"\x99\x99" + (596).to_bytes(2, "little") + b"x" * 596
        archive.writestr(info, PARKS_KML)
        archive.writestr("files/photo.jpg", os.urandom(12 * MB))
    _, fetch, [resource], _ = asyncio.run(crawl_and_detect(file_handler(path)))
    assert resource.title == "City parks" and fetch.requests == 3


# --- lenient reading: a kml root without namespace; plain KML over the body cap ------------------------------


def test_kml_root_without_namespace_is_kml_of_unknown_version():
    doc = legacy_kml(placemarks=1119)
    resp = response("http://h/export/stations.kml", doc)
    assert KMLDetector().accepts(resp)
    [resource] = detect(resp)
    assert (resource.type, resource.version, resource.title) == ("KML", None, "TopLevel")
    assert resource.extra == {"placemarks": 1119, "format": "kml"}
    assert resource.bbox == (13.0, 43.0, 15.99, 44 + 149 / 75)
    assert [(d.name, d.extra["placemarks"]) for d in resource.datasets] == [
        ("SubFolder1", 559),
        ("SubFolder2", 559),
    ]
    assert resource.datasets[0].bbox == resource.datasets[1].bbox == (14.0, 44.0, 15.99, 44 + 149 / 75)
    # (the line at the document's root counts for the file, not for a folder)


def test_a_namespace_less_kml_inside_a_kmz():
    [resource] = detect(response("http://h/a.kmz", zip_bytes({"doc.kml": legacy_kml(placemarks=3)})))
    assert (resource.version, resource.extra) == (None, {"placemarks": 3, "format": "kmz"})


@pytest.mark.parametrize(
    ("body", "title", "abstract", "expected"),
    [
        (  # a document without folders is one dataset, named after it
            "<Document><name> Stations </name>"
            "<Placemark><Point><coordinates>-120.5,35.25</coordinates></Point></Placemark>"
            "<Placemark><Point><coordinates>-119,36,100</coordinates></Point></Placemark></Document>",
            "Stations",
            None,
            [("Stations", (-120.5, 35.25, -119.0, 36.0), {"placemarks": 2})],
        ),
        (  # kml/Folder as the container: its folders are the datasets; a placemark's name is no title
            "<Folder><name>Outer</name><description>About</description>"
            "<Placemark><name>not a title</name><Point><coordinates>1,2</coordinates></Point></Placemark>"
            "<Folder><name>A</name><Placemark><name>inner</name></Placemark></Folder></Folder>",
            "Outer",
            "About",
            [("A", None, {"placemarks": 1})],
        ),
    ],
)
def test_container_title_and_datasets(body, title, abstract, expected):
    [resource] = detect(response("http://h/stations.kml", kml_bytes(body)))
    assert (resource.title, resource.abstract) == (title, abstract)
    assert datasets(resource) == expected


def big_kml(placemarks: int) -> bytes:
    points = "".join(
        f"<Placemark><name>Station {i:07d}</name><description>{'x' * 40}</description>"
        f"<Point><coordinates>{15 + i / 10**7:.7f},45.5,0</coordinates></Point></Placemark>"
        for i in range(placemarks)
    )
    return kml_bytes(f"<Document><name>Stations</name>{points}</Document>")


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"], ids=["plain", "byte-order mark"])
def test_plain_kml_over_the_body_cap_is_read_as_it_downloads_under_the_kml_cap(tmp_path, bom):
    path = tmp_path / "stations.kml"
    path.write_bytes(bom + big_kml(120_000))
    assert path.stat().st_size > 2 * MB
    settings = Settings(max_body_bytes=1 * MB)

    async def run():
        async with serve({"/stations.kml": file_handler(path)}) as base:
            first = await LoopbackFetch(settings)(f"{base}/stations.kml")
            fetch = LoopbackFetch(settings)
            ctx = context(fetch, settings=settings)
            return first, fetch, await KMLDetector().detect(first, ctx), ctx.stats

    first, fetch, [resource], stats = asyncio.run(run())
    assert not first.complete
    assert resource.extra == {"placemarks": 120_000, "format": "kml"}
    assert resource.bbox == (15.0, 45.5, 15 + 119_999 / 10**7, 45.5)
    assert resource.content_sha256 == hashlib.sha256(path.read_bytes()).hexdigest()  # of the whole file
    # the crawl read nothing (Content-Length over the cap): one GET, given to the reader, nothing kept
    assert fetch.sent == [{}] and fetch.bytes == 0 and fetch.streamed == path.stat().st_size
    assert stats["kml/large_files"] == 1


# --- titles from content: documents in the shapes of GDAL autotest's files (tests/data/files/kml/README.md) ---

SHAPED_KML = Path(__file__).resolve().parents[1] / "data" / "files" / "kml"


@pytest.mark.parametrize(
    ("name", "version", "title", "abstract"),
    [
        ("document_root_placemark_and_folder.kml", "2.2", "Karst survey", None),  # the Document's name
        ("document_without_folder.kml", "2.2", "Harbour", None),
        ("folder_as_container.kml", "2.2", "Vineyards", None),  # kml/Folder as the container
        # no container name: the first named Placemark's, its description not the file's
        ("lone_placemark_kml21.kml", "2.1", "Lighthouse", None),
        ("unnamed_document_with_schemas.kml", "2.2", "Well by the mill", None),
        ("unnamed_folder_gx_track.kml", "2.2", None, None),  # nothing named: no title, never the file name
    ],
)
def test_the_title_comes_from_the_document(name, version, title, abstract):
    body = (SHAPED_KML / name).read_bytes()
    for resp in (
        response(f"http://h/files/{name}", body),
        response("http://h/get?f=7", zip_bytes({"doc.kml": body})),
    ):
        [resource] = detect(resp)
        assert (resource.version, resource.title, resource.abstract) == (version, title, abstract)


def test_a_gdal_export_is_titled_by_its_layer_folder():
    # ogr2ogr writes an unnamed Document with one named Folder per layer
    body = kml_bytes(
        '<Document id="root_doc"><Folder><name>trails</name><Placemark><name>Kungsleden</name>'
        "<LineString><coordinates>15,62 16,62.5</coordinates></LineString></Placemark></Folder></Document>"
    )
    [resource] = detect(response("http://h/data/trails.kml", body))
    assert (resource.title, [d.name for d in resource.datasets]) == ("trails", ["trails"])


def test_snippet_is_the_abstract_without_a_description_and_texts_are_bounded():
    long_name = "Lakes \n\t of the north " + "x" * 10_000
    body = kml_bytes(
        f"<Document><name>{long_name}</name><Snippet maxLines='2'> Lakes, rivers </Snippet>"
        f"<Folder><name>  A\n  folder </name></Folder></Document>"
    )
    [resource] = detect(response("http://h/lakes.kml", body))
    assert resource.title.startswith("Lakes of the north xxx") and len(resource.title) == 300
    assert resource.abstract == "Lakes, rivers"
    assert [d.name for d in resource.datasets] == ["A folder"]
    described = kml_bytes(
        "<Document><description>" + "y" * 9000 + "</description><Snippet>s</Snippet></Document>"
    )
    [resource] = detect(response("http://h/lakes.kml", described))
    assert resource.abstract == "y" * 5000
