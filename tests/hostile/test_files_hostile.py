"""Hostile and broken KML, KMZ and ZIP input: each ends as no resource with a logged reason, nothing else lost."""

import asyncio
import logging
import os
import struct
import zipfile

import pytest
from aiohttp import web

from geoweb.detect.kml import KMLDetector
from geoweb.detect.shapefile import ShapefileDetector
from geoweb.errors import ConnectionFailed
from geoweb.fetch import Fetcher
from geoweb.settings import Settings
from geoweb.ziputil import TAIL_BYTES
from tests.data.files.make_fixtures import (
    MB,
    PARKS_KML,
    LoopbackFetch,
    context,
    file_handler,
    kml_bytes,
    padded_shapefile_members,
    range_ignoring_handler,
    response,
    serve,
    shapefile_members,
    wrong_range_handler,
    zip_bytes,
)

KML_BOMB = b"""<?xml version="1.0"?>
<!DOCTYPE kml [
  <!ENTITY a "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa">
  <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
  <!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">
  <!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">
]>
<kml xmlns="http://www.opengis.net/kml/2.2"><Document><name>&d;</name></Document></kml>"""
KML_XXE = b"""<?xml version="1.0"?>
<!DOCTYPE kml [<!ENTITY x SYSTEM "file:///etc/passwd">]>
<kml xmlns="http://www.opengis.net/kml/2.2"><Document><name>&x;</name></Document></kml>"""
SOFT_404 = b"<!DOCTYPE html><html><head><title>Not found</title></head><body>Page not found</body></html>"


def miss(detector, resp, caplog, ctx=None):
    """Run ``detector``; assert it found nothing and logged why. Returns (log message, ctx.stats)."""
    ctx = ctx or context()
    with caplog.at_level(logging.INFO, logger="geoweb.detect"):
        assert asyncio.run(detector.detect(resp, ctx)) == []
    *_, verdict = [r for r in caplog.records if r.name == "geoweb.detect"]
    return verdict.getMessage(), ctx.stats


@pytest.mark.parametrize(
    ("name", "body", "reason"),
    [
        ("entity bomb", KML_BOMB, "unsafe_content"),
        ("external entity", KML_XXE, "unsafe_content"),
        ("soft 404", SOFT_404, "not_kml"),
        (
            "malformed",
            b'<kml xmlns="http://www.opengis.net/kml/2.2"><Document><name>x</Document>',
            "malformed",
        ),
        ("wrong namespace", b'<kml xmlns="http://example.com/kml"><Document/></kml>', "not_kml"),
        ("other root without namespace", b"<kmlx><Document/></kmlx>", "not_kml"),
        ("empty body", b"", "malformed"),
        ("binary garbage", os.urandom(2000), "malformed"),
    ],
)
def test_hostile_kml_is_no_resource(caplog, name, body, reason):
    message, stats = miss(KMLDetector(), response("http://h/parks.kml", body), caplog)
    assert f"({reason})" in message and "http://h/parks.kml" in message
    assert stats[f"kml/miss/{reason}"] == 1


@pytest.mark.parametrize("detector", [KMLDetector(), ShapefileDetector()], ids=["kml", "shapefile"])
def test_error_status_is_no_resource_whatever_the_body(caplog, tmp_path, detector):
    body = zip_bytes({"doc.kml": PARKS_KML, **shapefile_members(tmp_path, "a")})
    message, stats = miss(detector, response("http://h/gone.kmz", body, status=404), caplog)
    assert "(http_status)" in message and "HTTP 404" in message
    assert stats[f"{detector.name}/miss/http_status"] == 1


def test_kml_over_the_kml_cap_is_no_resource(caplog, tmp_path):
    """A plain KML the body cap cut is fetched again, but no further than kml_max_bytes."""
    path = tmp_path / "parks.kml"
    path.write_bytes(PARKS_KML[:-6] + b"<!--" + b" " * (3 * MB) + b"--></kml>")
    settings = Settings(max_body_bytes=1 * MB, kml_max_bytes=2 * MB)

    async def run():
        async with serve({"/parks.kml": file_handler(path)}) as base:
            fetch = LoopbackFetch(settings)
            first = await fetch(f"{base}/parks.kml")
            ctx = context(fetch, settings=settings)
            with caplog.at_level(logging.INFO, logger="geoweb.detect"):
                return await KMLDetector().detect(first, ctx), fetch, ctx.stats

    found, fetch, stats = asyncio.run(run())
    assert found == [] and stats["kml/miss/unsafe_content"] == 1
    assert any(
        "over the 2097152-byte KML cap" in r.getMessage() for r in caplog.records
    )  # beside access logs
    assert fetch.bytes < 2 * MB + 64 * 1024 + 1  # neither read ran past its cap


def test_html_at_a_kml_url_over_the_body_cap_ends_at_its_first_chunk(caplog, tmp_path):
    path = tmp_path / "parks.kml"
    path.write_bytes(SOFT_404 + b" " * (2 * MB))
    settings = Settings(max_body_bytes=1 * MB)

    async def run():
        async with serve({"/parks.kml": range_ignoring_handler(path)}) as base:
            fetch = LoopbackFetch(settings)
            first = await fetch(f"{base}/parks.kml")
            with caplog.at_level(logging.INFO, logger="geoweb.detect"):
                return await KMLDetector().detect(first, context(fetch, settings=settings)), fetch

    found, fetch = asyncio.run(run())
    # the crawl's GET left unread (announced over its cap), then the KML reader's, ended by the html root
    assert found == [] and fetch.requests == 2 and fetch.bytes == 0 and fetch.streamed <= 64 * 1024
    assert any("(not_kml): root element is 'html', not kml" in r.getMessage() for r in caplog.records)


def test_html_cut_at_the_body_cap_is_not_fetched_again(caplog):
    resp = response("http://h/parks.kml", SOFT_404 + b" " * 1000, complete=False)
    message, stats = miss(KMLDetector(), resp, caplog)  # no fetch: the cut body's head tells
    assert "(not_kml)" in message and stats["kml/large_files"] == 0


def test_kmz_bomb_by_ratio(caplog):
    kmz = zip_bytes({"doc.kml": kml_bytes("<Document><name>" + " " * (30 * MB) + "</name></Document>")})
    message, _ = miss(KMLDetector(), response("http://h/a.kmz", kmz), caplog)
    assert "(unsafe_content)" in message and "zip bomb" in message


def test_kmz_over_the_kml_size_cap(caplog):
    # Random coordinates compress about 2:1, far below the ratio cap: only the size cap stops them.
    coordinates = " ".join(f"{b % 180}.{b},{b % 90}.{b}" for b in os.urandom(150_000))
    kmz = zip_bytes(
        {
            "doc.kml": kml_bytes(
                f"<Placemark><LineString><coordinates>{coordinates}</coordinates></LineString></Placemark>"
            )
        }
    )
    settings = Settings(kml_max_bytes=1 * MB)
    message, _ = miss(KMLDetector(), response("http://h/a.kmz", kmz), caplog, context(settings=settings))
    assert "(unsafe_content)" in message and "size cap" in message


@pytest.mark.parametrize(
    ("name", "body", "reason"),
    [
        ("no kml member", zip_bytes({"readme.txt": b"hello", "image.png": b"\x89PNG"}), "not_kml"),
        ("kml member not xml", zip_bytes({"doc.kml": b"\x00\x01 not xml"}), "malformed"),
        ("cut archive", zip_bytes({"doc.kml": PARKS_KML})[:-40], "malformed"),
        ("zip magic then garbage", b"PK\x03\x04" + os.urandom(3000), "malformed"),
    ],
)
def test_broken_kmz_is_no_resource(caplog, name, body, reason):
    message, _ = miss(KMLDetector(), response("http://h/a.kmz", body), caplog)
    assert f"({reason})" in message


@pytest.mark.parametrize(
    ("name", "body", "reason"),
    [
        ("html page at a .zip", SOFT_404, "malformed"),
        (
            "zip without shapefile",
            zip_bytes({"doc.kml": PARKS_KML, "a.shp": b"", "a.dbf": b""}),
            "no_shapefile",
        ),
        ("cut archive", None, "malformed"),
        (
            "too many members",
            zip_bytes({f"f{i}": b"" for i in range(10_001)}, compression=zipfile.ZIP_STORED),
            "unsafe_content",
        ),
    ],
)
def test_broken_zip_is_no_resource(caplog, tmp_path, name, body, reason):
    if body is None:
        body = zip_bytes(shapefile_members(tmp_path, "a"))[:-100]
    message, stats = miss(ShapefileDetector(), response("http://h/data.zip", body), caplog)
    assert f"({reason})" in message
    assert stats[f"shapefile/miss/{reason}"] == 1


def test_dbf_bomb_rejects_the_archive(caplog, tmp_path):
    members = shapefile_members(tmp_path, "a")
    members["a.dbf"] = members["a.dbf"] + bytes(50 * MB)
    message, _ = miss(ShapefileDetector(), response("http://h/data.zip", zip_bytes(members)), caplog)
    assert "(unsafe_content)" in message and "zip bomb" in message


def test_corrupt_shapefile_is_skipped_and_its_neighbour_kept(caplog, tmp_path):
    good = shapefile_members(tmp_path, "good")
    bad = {name.replace("good", "bad"): data for name, data in good.items()}
    bad["bad.shp"] = b"garbage"  # shorter than a shapefile header
    with caplog.at_level(logging.INFO, logger="geoweb.detect"):
        [resource] = asyncio.run(
            ShapefileDetector().detect(response("http://h/data.zip", zip_bytes({**bad, **good})), context())
        )
    assert [d.name for d in resource.datasets] == ["good"]
    assert resource.extra["files"] == ["bad.shp", "good.shp"]
    assert any("bad.shp is unreadable" in r.getMessage() for r in caplog.records)


def test_shapefile_member_with_bad_crc_is_skipped(caplog, tmp_path):
    members = shapefile_members(tmp_path, "a")
    data = bytearray(zip_bytes(members, compression=zipfile.ZIP_STORED))
    dbf = data.index(members["a.dbf"])
    data[dbf + len(members["a.dbf"]) - 2] ^= 0xFF
    message, _ = miss(ShapefileDetector(), response("http://h/data.zip", bytes(data)), caplog)
    assert "no shapefile in the archive could be read" in message


# --- Range reads against misbehaving servers -------------------------------------------------------------------


async def range_miss(handler, caplog):
    async with serve({"/big.zip": handler}) as base:
        first = await LoopbackFetch()(f"{base}/big.zip")
        fetch = LoopbackFetch()
        ctx = context(fetch)
        with caplog.at_level(logging.INFO, logger="geoweb.detect"):
            resources = await ShapefileDetector().detect(first, ctx)
    *_, verdict = [r for r in caplog.records if r.name == "geoweb.detect"]
    return resources, verdict.getMessage(), fetch, ctx.stats


@pytest.fixture(scope="module")
def big_zip(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("big")
    path = tmp_path / "big.zip"
    path.write_bytes(zip_bytes(padded_shapefile_members(tmp_path), compression=zipfile.ZIP_STORED))
    return path


async def range_found(handler, settings=None):
    """The crawl's GET and the detector on a big ZIP served by ``handler``: (resources, fetch, stats)."""
    async with serve({"/big.zip": handler}) as base:
        first = await LoopbackFetch(settings)(f"{base}/big.zip")
        fetch = LoopbackFetch(settings)
        ctx = context(fetch, settings=settings)
        return await ShapefileDetector().detect(first, ctx), fetch, ctx.stats


def test_server_ignoring_range_gives_the_directory_from_the_end_of_a_streamed_get(big_zip):
    [resource], fetch, stats = asyncio.run(range_found(range_ignoring_handler(big_zip)))
    assert [d.name for d in resource.datasets] == ["parcels"]
    assert resource.extra["archive_bytes"] == big_zip.stat().st_size
    # the Range request, left unread (Content-Length over its cap), then the GET streamed to its end
    assert fetch.sent == [{"Range": f"bytes=-{TAIL_BYTES}"}, {"tail": True}]
    assert fetch.bytes == TAIL_BYTES and fetch.streamed == big_zip.stat().st_size
    assert stats["shapefile/tail_streams"] == 1


def test_the_streamed_tail_through_the_project_fetcher_keeps_only_the_tail(caplog, big_zip):
    settings = Settings(allowed_hosts=frozenset({"127.0.0.1"}), obey_robots=False)

    async def run():
        async with serve({"/big.zip": range_ignoring_handler(big_zip)}) as base, Fetcher(settings) as fetcher:
            first = await fetcher.get(f"{base}/big.zip")
            resources = await ShapefileDetector().detect(first, context(fetcher.get, settings=settings))
            return resources, fetcher.stats

    [resource], stats = asyncio.run(run())
    assert resource.extra["files"] == ["data/parcels.shp"]
    assert (stats["fetch/requests"], stats["fetch/bytes"]) == (3, TAIL_BYTES)
    assert stats["fetch/tail_streamed_bytes"] == big_zip.stat().st_size


def test_a_streamed_tail_stops_at_its_cap(caplog, big_zip):
    settings = Settings(
        allowed_hosts=frozenset({"127.0.0.1"}), obey_robots=False, tail_stream_max_bytes=4 * MB
    )

    async def chunked(request):  # no Content-Length: the cap is met while streaming
        answer = web.StreamResponse(headers={"Content-Type": "application/zip"})
        await answer.prepare(request)
        data = big_zip.read_bytes()
        for start in range(0, len(data), MB):
            await answer.write(data[start : start + MB])
        return answer

    async def run():
        async with serve({"/big.zip": chunked}) as base, Fetcher(settings) as fetcher:
            first = await fetcher.get(f"{base}/big.zip")
            with caplog.at_level(logging.INFO, logger="geoweb.detect"):
                resources = await ShapefileDetector().detect(first, context(fetcher.get, settings=settings))
            return resources, fetcher.stats

    resources, stats = asyncio.run(run())
    assert resources == [] and stats["fetch/tail_streamed_bytes"] == 0
    assert any("over 4194304 bytes; not streamed" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    "handler",
    [
        wrong_range_handler,  # 206 with the first bytes labelled as asked
        lambda path: _refusing_range(path),  # 416 to any Range
    ],
    ids=["wrong range", "416"],
)
def test_a_server_answering_range_wrongly_gives_the_directory_from_a_streamed_get(big_zip, handler):
    [resource], fetch, _ = asyncio.run(range_found(handler(big_zip)))
    assert [d.name for d in resource.datasets] == ["parcels"] and fetch.sent[-1] == {"tail": True}


def _refusing_range(path):
    async def refuse_range(request):
        if "Range" in request.headers:
            return web.Response(status=416, headers={"Content-Range": f"bytes */{path.stat().st_size}"})
        return web.Response(body=path.read_bytes())

    return refuse_range


def test_tail_that_is_not_a_zip(caplog, tmp_path):
    path = tmp_path / "big.zip"
    path.write_bytes(os.urandom(11 * MB))
    resources, message, fetch, _ = asyncio.run(range_miss(file_handler(path), caplog))
    assert resources == [] and "(malformed)" in message
    assert fetch.requests == 1


def test_huge_directory_claim_is_refused_without_reading_it(caplog, tmp_path):
    data = bytearray(
        zip_bytes(padded_shapefile_members(tmp_path, padding=11 * MB), compression=zipfile.ZIP_STORED)
    )
    eocd = data.rindex(b"PK\x05\x06")
    struct.pack_into("<LL", data, eocd + 12, 11 * MB, 0)  # a directory of 11 MB from offset 0
    path = tmp_path / "big.zip"
    path.write_bytes(bytes(data))
    resources, message, fetch, _ = asyncio.run(range_miss(file_handler(path), caplog))
    assert resources == [] and "(unsafe_content)" in message
    assert fetch.requests == 1


def test_fetch_failure_is_logged(caplog):
    async def failing_fetch(url, **kwargs):
        raise ConnectionFailed("refused", url=url)

    resp = response("http://h/big.zip", headers={"content-length": str(20 * MB)}, complete=False)
    message, stats = miss(ShapefileDetector(), resp, caplog, context(failing_fetch))
    assert "(connection)" in message
    assert stats["shapefile/miss/connection"] == 1


def test_hostile_input_does_not_stop_the_good_input(caplog, tmp_path):
    """A batch mixing bombs, lies and junk with good files: every good file is still found."""
    good_kml = response("http://h/good.kml", PARKS_KML)
    good_zip = response("http://h/good.zip", zip_bytes(shapefile_members(tmp_path, "good")))
    batch = [
        response("http://h/bomb.kml", KML_BOMB),
        good_kml,
        response("http://h/404.kml", SOFT_404),
        response("http://h/bomb.kmz", zip_bytes({"doc.kml": bytes(20 * MB)})),
        good_zip,
        response("http://h/junk.zip", os.urandom(500)),
    ]
    detectors = [KMLDetector(), ShapefileDetector()]
    ctx = context()

    async def run():
        found = []
        for resp in batch:
            for detector in detectors:
                if detector.accepts(resp):
                    found += await detector.detect(resp, ctx)
        return found

    with caplog.at_level(logging.INFO, logger="geoweb.detect"):
        found = asyncio.run(run())
    assert sorted((r.type, r.url) for r in found) == [
        ("KML", "http://h/good.kml"),
        ("SHAPEFILE", "http://h/good.zip"),
    ]
    assert ctx.stats["kml/miss/unsafe_content"] == 2 and ctx.stats["kml/miss/not_kml"] == 1


# --- a KMZ over the body cap, read by Range: the same limits, no download -----------------------------------


async def kmz_range_miss(handler, caplog, settings=None):
    settings = settings or Settings()
    async with serve({"/big.kmz": handler}) as base:
        first = await LoopbackFetch(settings)(f"{base}/big.kmz")
        fetch = LoopbackFetch(settings)
        ctx = context(fetch, settings=settings)
        with caplog.at_level(logging.INFO, logger="geoweb.detect"):
            resources = await KMLDetector().detect(first, ctx)
    *_, verdict = [r for r in caplog.records if r.name == "geoweb.detect"]
    return resources, verdict.getMessage(), fetch, ctx.stats


def padded_kmz(tmp_path, doc_kml: bytes, *, compression=zipfile.ZIP_DEFLATED, name="doc.kml"):
    path = tmp_path / "big.kmz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(name, doc_kml, compress_type=compression)
        archive.writestr("files/photo.jpg", os.urandom(11 * MB), compress_type=zipfile.ZIP_STORED)
    return path


def test_kmz_by_range_bomb_stops_at_the_ratio_cap(caplog, tmp_path):
    path = padded_kmz(tmp_path, kml_bytes("<Document><name>" + " " * (30 * MB) + "</name></Document>"))
    resources, message, fetch, _ = asyncio.run(kmz_range_miss(file_handler(path), caplog))
    assert resources == [] and "(unsafe_content)" in message and "zip bomb" in message
    assert fetch.bytes < TAIL_BYTES + 200_000  # the compressed member only, never the photos


def test_kmz_by_range_member_over_the_cap_is_not_read(caplog, tmp_path):
    path = padded_kmz(tmp_path, os.urandom(2 * MB), compression=zipfile.ZIP_STORED)
    settings = Settings(kml_max_bytes=1 * MB)
    resources, message, fetch, _ = asyncio.run(kmz_range_miss(file_handler(path), caplog, settings))
    assert resources == [] and "(unsafe_content)" in message and "over the cap" in message
    assert fetch.requests == 1  # the directory's claim alone refuses it


def test_kmz_by_range_without_kml_member(caplog, tmp_path):
    path = padded_kmz(tmp_path, PARKS_KML, name="readme.txt")
    resources, message, _, stats = asyncio.run(kmz_range_miss(file_handler(path), caplog))
    assert resources == [] and "(not_kml)" in message and stats["kml/miss/not_kml"] == 1


def test_kmz_by_range_lying_directory_offset(caplog, tmp_path):
    """A directory pointing doc.kml's header at the photos: no local header there, a clear miss."""
    path = padded_kmz(tmp_path, PARKS_KML)
    data = bytearray(path.read_bytes())
    directory = data.rfind(b"PK\x01\x02", 0, len(data) - 22)
    first_entry = data.find(b"PK\x01\x02")
    assert first_entry < directory  # doc.kml's record comes first
    struct.pack_into("<L", data, first_entry + 42, 5 * MB)
    path.write_bytes(bytes(data))
    resources, message, _, _ = asyncio.run(kmz_range_miss(file_handler(path), caplog))
    assert resources == [] and "(malformed)" in message and "no local header" in message


def test_kmz_by_range_on_a_server_ignoring_range(caplog, tmp_path):
    path = padded_kmz(tmp_path, PARKS_KML)
    resources, message, fetch, _ = asyncio.run(kmz_range_miss(range_ignoring_handler(path), caplog))
    assert resources == [] and "(range_unsupported)" in message
    assert fetch.requests == 1 and fetch.bytes == 0
