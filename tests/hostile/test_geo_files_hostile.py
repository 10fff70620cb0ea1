"""Hostile and broken GeoJSON and GeoTIFF input: each ends as no resource with a logged reason, nothing lost."""

import asyncio
import json
import logging
import struct

import pytest
from aiohttp import web

from geoweb.detect.geojson import GeoJSONDetector
from geoweb.detect.geotiff import HEADER_BYTES, GeoTIFFDetector
from geoweb.settings import Settings
from tests.data.files.make_fixtures import LoopbackFetch, context, response, serve
from tests.unit.test_geotiff import make_cog, make_geotiff

TYPES = ("GEOJSON", "GEOTIFF")
POINT = {"type": "Feature", "geometry": {"type": "Point", "coordinates": [1, 2]}}
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00" + b"\x00" * 200


@pytest.fixture(scope="module")
def cog(tmp_path_factory) -> bytes:
    """A real COG (GDAL), little-endian classic TIFF with two overviews, to break in many ways."""
    folder = tmp_path_factory.mktemp("hostile-tiff")
    return make_cog(folder, "cog.tif", make_geotiff(folder, "strips.tif")).read_bytes()


def miss(detector, resp, caplog, ctx=None):
    """Run ``detector``; assert it found nothing and logged why. Returns (log message, ctx.stats)."""
    ctx = ctx or context(types=TYPES)
    with caplog.at_level(logging.INFO, logger="geoweb.detect"):
        assert asyncio.run(detector.detect(resp, ctx)) == []
    *_, verdict = [r for r in caplog.records if r.name == "geoweb.detect"]
    return verdict.getMessage(), ctx.stats


@pytest.mark.parametrize(
    ("name", "body", "reason"),
    [
        ("deeply nested", b'{"type": "Feature", "geometry": ' + b"[" * 200_000 + b"]" * 200_000 + b"}", "unsafe_content"),
        ("huge float", json.dumps(POINT).replace("[1, 2]", "[1e999, 2]").encode(), "not_geojson"),
        ("huge integer", json.dumps(POINT).replace("[1, 2]", f"[{'9' * 5000}, 2]").encode(), "not_geojson"),
        ("NaN", json.dumps(POINT).replace("[1, 2]", "[NaN, 2]").encode(), "not_geojson"),
        ("Infinity", json.dumps(POINT).replace("[1, 2]", "[1, -Infinity]").encode(), "not_geojson"),
        ("not JSON", b"<html><body>FeatureCollection</body></html>", "not_geojson"),
        ("truncated JSON", json.dumps(POINT).encode()[:-5], "not_geojson"),
        ("binary", b"\xff\xfe\x00garbage\x81", "not_geojson"),
        ("a config file", b'{"debug": true, "features": ["search", "export"]}', "not_geojson"),
        ("a JSON array", b'[{"type": "Feature"}]', "not_geojson"),
        ("projected coordinates", json.dumps(POINT).replace("[1, 2]", "[500000, 5000000]").encode(), "not_geojson"),
        ("string coordinates", json.dumps(POINT).replace("[1, 2]", '["1", "2"]').encode(), "not_geojson"),
        ("flat polygon", json.dumps(POINT).replace('"Point"', '"Polygon"').encode(), "not_geojson"),
        ("boolean coordinates", json.dumps(POINT).replace("[1, 2]", "[true, false]").encode(), "not_geojson"),
        ("features not a list", b'{"type": "FeatureCollection", "features": {"a": 1}}', "not_geojson"),
        ("a feature that is not", b'{"type": "FeatureCollection", "features": [{"type": "Point"}]}', "not_geojson"),
        ("unknown geometry", json.dumps(POINT).replace('"Point"', '"Circle"').encode(), "not_geojson"),
    ],
)  # fmt: skip
def test_hostile_geojson(name, body, reason, caplog):
    message, stats = miss(GeoJSONDetector(), response("http://h/data.json", body), caplog)
    assert stats[f"geojson/miss/{reason}"] == 1, message
    assert "http://h/data.json" in message


def test_geojson_over_the_cap_or_cut_or_404(caplog):
    body = json.dumps(POINT).encode()
    small = context(types=TYPES, settings=Settings(max_body_bytes=10))
    assert miss(GeoJSONDetector(), response("http://h/a.geojson", body), caplog, small)[1] == {
        "geojson/miss/unsafe_content": 1
    }
    cut = response("http://h/a.geojson", body, complete=False)  # a Feature cut: only collections are read so
    assert miss(GeoJSONDetector(), cut, caplog)[1] == {"geojson/miss/not_geojson": 1}
    gone = response("http://h/a.geojson", b"<html>Not found</html>", status=404)
    assert miss(GeoJSONDetector(), gone, caplog)[1] == {"geojson/miss/http_status": 1}


def test_a_hostile_file_costs_nothing_else():
    """One bad document among good ones: the good ones are still found in the same run."""
    ctx = context(types=TYPES)
    detector = GeoJSONDetector()
    bodies = [json.dumps(POINT).encode(), b"[" * 100_000, json.dumps(POINT).encode()]
    found = [
        asyncio.run(detector.detect(response(f"http://h/{i}.geojson", b), ctx)) for i, b in enumerate(bodies)
    ]
    assert [len(f) for f in found] == [1, 0, 1]
    assert ctx.stats["geojson/found"] == 2


def _first_ifd(data: bytes) -> tuple[int, int]:
    """(offset, entry count) of the first IFD of a classic little-endian TIFF."""
    (offset,) = struct.unpack_from("<I", data, 4)
    (count,) = struct.unpack_from("<H", data, offset)
    return offset, count


def _patched(data: bytes, offset: int, fmt: str, *values) -> bytes:
    patched = bytearray(data)
    struct.pack_into(fmt, patched, offset, *values)
    return bytes(patched)


def _entry(data: bytes, tag: int) -> int:
    """The offset of ``tag``'s entry in the first IFD."""
    offset, count = _first_ifd(data)
    for i in range(count):
        if struct.unpack_from("<H", data, offset + 2 + 12 * i)[0] == tag:
            return offset + 2 + 12 * i
    raise AssertionError(f"no tag {tag}")


def _hostile_tiffs(cog: bytes) -> dict[str, tuple[bytes, str]]:
    ifd, count = _first_ifd(cog)
    next_pointer = ifd + 2 + 12 * count
    return {
        "empty": (b"", "not_geotiff"),
        "signature only": (cog[:4], "malformed"),
        "truncated header": (cog[:7], "malformed"),
        "truncated IFD": (cog[: ifd + 20], "malformed"),
        "first IFD out of range": (_patched(cog, 4, "<I", 2**31), "malformed"),
        "first IFD at a negative-looking offset": (_patched(cog, 4, "<I", 0xFFFFFFFF), "malformed"),
        "IFD looping to itself": (_patched(cog, next_pointer, "<I", ifd), "malformed"),
        "absurd entry count": (_patched(cog, ifd, "<H", 60000), "malformed"),
        "absurd GeoKey count": (_patched(cog, _entry(cog, 34735) + 4, "<I", 2**31), "malformed"),
        "GeoKeys out of range": (_patched(cog, _entry(cog, 34735) + 8, "<I", 2**31), "malformed"),
        "GeoKeys typed DOUBLE": (_patched(cog, _entry(cog, 34735) + 2, "<H", 12), "malformed"),
        "width typed DOUBLE": (_patched(cog, _entry(cog, 256), "<HHII", 256, 12, 1, 8), "malformed"),
        "JPEG named .tif": (JPEG, "not_geotiff"),
        "BigTIFF with a bad offset size": (b"II+\x00\x04\x00\x00\x00" + b"\x00" * 64, "malformed"),
    }


def test_hostile_geotiff(cog, caplog):
    for name, (body, reason) in _hostile_tiffs(cog).items():
        caplog.clear()
        message, stats = miss(GeoTIFFDetector(), response("http://h/dem.tif", body), caplog)
        assert stats == {f"geotiff/miss/{reason}": 1}, (name, message)
        assert "http://h/dem.tif" in message


def test_loop_through_a_later_ifd_is_caught(cog, caplog):
    ifd, count = _first_ifd(cog)
    (second,) = struct.unpack_from("<I", cog, ifd + 2 + 12 * count)
    (second_count,) = struct.unpack_from("<H", cog, second)
    looped = _patched(cog, second + 2 + 12 * second_count, "<I", ifd)
    message, stats = miss(GeoTIFFDetector(), response("http://h/dem.tif", looped), caplog)
    assert stats == {"geotiff/miss/malformed": 1} and "loops" in message


def range_ignoring(data: bytes, *, declare_length: bool, padding: int = 64 * 1024 * 1024):
    """A 200 to any request: ``data`` then ``padding`` zero bytes, sized or chunked. Counts bytes sent."""
    sent = {"bytes": 0}

    async def handle(request):
        total = len(data) + padding
        answer = web.StreamResponse(headers={"Content-Type": "image/tiff"})
        if declare_length:
            answer.content_length = total
        await answer.prepare(request)
        chunks = [data] + [b"\x00" * (1024 * 1024)] * (padding // (1024 * 1024))
        try:
            for chunk in chunks:
                await answer.write(chunk)
                sent["bytes"] += len(chunk)
        except (ConnectionResetError, ConnectionError):
            pass  # the client left after its cap, as it should
        return answer

    return handle, sent


def _detect_not_read(handler, fetch: LoopbackFetch, caplog):
    """Detect a file the crawl did not read (over its cap), served by ``handler``."""

    async def run():
        async with serve({"/dem.tif": handler}) as base:
            seen = response(base + "/dem.tif", b"", headers={"content-type": "image/tiff"}, complete=False)
            ctx = context(fetch, types=TYPES)
            with caplog.at_level(logging.INFO, logger="geoweb.detect"):
                return await GeoTIFFDetector().detect(seen, ctx), ctx.stats

    return asyncio.run(run())


def test_server_ignoring_range_with_a_chunked_body_costs_only_the_prefix(cog, caplog):
    handler, _ = range_ignoring(cog, declare_length=False)
    fetch = LoopbackFetch()
    [resource], _ = _detect_not_read(handler, fetch, caplog)
    assert fetch.requests == 1 and fetch.bytes == HEADER_BYTES
    assert resource.extra["inspected"] == "range" and resource.extra["overviews"] == 2


def test_server_ignoring_range_with_a_huge_declared_body_is_left_alone(cog, caplog):
    handler, _ = range_ignoring(cog, declare_length=True)
    fetch = LoopbackFetch()
    found, stats = _detect_not_read(handler, fetch, caplog)
    assert found == [] and stats["geotiff/miss/range_unsupported"] == 1
    assert fetch.bytes == 0


def test_range_answered_from_the_wrong_offset_or_with_an_error(cog, caplog):

    async def wrong_offset(request):
        headers = {"Content-Range": f"bytes 100-{HEADER_BYTES + 99}/{len(cog)}"}
        return web.Response(status=206, body=cog[100 : HEADER_BYTES + 100], headers=headers)

    async def not_found(request):
        return web.Response(status=404, text="gone")

    for handler, reason in ((wrong_offset, "range_unsupported"), (not_found, "http_status")):
        found, stats = _detect_not_read(handler, LoopbackFetch(), caplog)
        assert found == [] and stats == {"geotiff/range_requests": 1, f"geotiff/miss/{reason}": 1}


def test_geotiff_404_and_html_soft_404(caplog):
    gone = response("http://h/dem.tif", b"<html>Not found</html>", status=404)
    assert miss(GeoTIFFDetector(), gone, caplog)[1] == {"geotiff/miss/http_status": 1}
    soft = response("http://h/dem.tif", b"<html>Not found</html>")
    assert miss(GeoTIFFDetector(), soft, caplog)[1] == {"geotiff/miss/not_geotiff": 1}


@pytest.mark.parametrize("paging", ["numberMatched", "numberReturned", "context"])
def test_an_api_items_page_is_not_a_geojson_file(caplog, paging):
    """An OGC API - Features or STAC API items page is valid GeoJSON, but the API is the resource."""
    file = {"type": "FeatureCollection", "features": [POINT]}
    page = file | {
        paging: 1,
        "links": [{"rel": "next", "href": "http://h/collections/lakes/items?offset=10"}],
    }
    url, headers = "http://h/collections/lakes/items?f=json", {"content-type": "application/geo+json"}
    ctx = context(types=TYPES)
    assert asyncio.run(
        GeoJSONDetector().detect(response(url, json.dumps(file).encode(), headers=headers), ctx)
    )
    message, stats = miss(
        GeoJSONDetector(), response(url, json.dumps(page).encode(), headers=headers), caplog
    )
    assert "items" in message and stats == {"geojson/miss/not_geojson": 1}
