"""Operation checks against hostile answers to a GetMap of a WMS whose capabilities answer well: an exception
report or an HTML page sent as image/png, a PNG bomb, a 2 GB image, an endless slow body. Each is a failed
operation check with its reason, within the fetcher's bounds of size, time and memory; the capabilities
check stays as it was."""

from __future__ import annotations

import asyncio
import resource
import struct
import time
import tracemalloc
import zlib

import pytest
from aiohttp import web

from tests.harvest.test_operation_checks import check_wms, fixed

MB = 1024 * 1024
EXCEPTION_REPORT = b"""<?xml version="1.0" encoding="UTF-8"?>
<ServiceExceptionReport version="1.3.0" xmlns="http://www.opengis.net/ogc">
  <ServiceException code="InvalidFormat">msWMSLoadGetMapParams(): WMS server error. Unsupported format</ServiceException>
</ServiceExceptionReport>"""
HTML = b"<!doctype html><html><head><title>Login</title></head><body>Please sign in</body></html>"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_header(width: int, height: int, bit_depth: int = 8) -> bytes:
    return PNG_SIGNATURE + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, bit_depth, 0, 0, 0, 0))


def png_bomb(side: int = 30_000) -> bytes:
    """A one-colour grey PNG of ``side`` x ``side`` pixels (900 million for 30,000), compressed row by row to
    about 100 kB."""
    compressor = zlib.compressobj(9)
    row = bytes(1 + side // 8)  # filter byte, then 1-bit pixels
    data = b"".join(compressor.compress(row) for _ in range(side)) + compressor.flush()
    return png_header(side, side, bit_depth=1) + chunk(b"IDAT", data) + chunk(b"IEND", b"")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def test_an_exception_report_sent_as_png_fails_with_its_message():
    result, _ = check_wms(fixed("image/png", EXCEPTION_REPORT))
    assert result.outcome == "unchanged"
    operation = result.operation_check
    assert (operation.outcome, operation.error_reason, operation.http_status) == (
        "failed",
        "ogc_exception",
        200,
    )
    assert "InvalidFormat" in operation.error_message and "Unsupported format" in operation.error_message


def test_an_html_page_sent_as_png_fails():
    result, _ = check_wms(fixed("image/png", HTML))
    assert (result.operation_check.outcome, result.operation_check.error_reason) == ("failed", "html")


@pytest.mark.parametrize(
    ("side", "said"),
    [(30_000, "900000000 pixels"), (5_000, "a 5000 x 5000 image")],  # Pillow's bound; then ours, far lower
)
def test_a_png_bomb_fails_unread_in_bounded_memory(side, said):
    bomb = png_bomb(side)
    assert len(bomb) < 1 * MB
    rss_before = peak_rss_mb()
    tracemalloc.start()
    try:
        result, _ = check_wms(fixed("image/png", bomb))
        _, python_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (result.operation_check.outcome, result.operation_check.error_reason) == (
        "failed",
        "image_too_large",
    )
    assert said in result.operation_check.error_message
    # decoded, the bomb is 112 MB at 1 bit a pixel and 900 MB as Pillow holds grey: far above these margins
    assert python_peak < 60 * MB
    assert peak_rss_mb() - rss_before < 100


async def _huge_png(request: web.Request) -> web.StreamResponse:
    """A 2 GB image, declared so."""
    answer = web.StreamResponse(headers={"Content-Type": "image/png", "Content-Length": str(2048 * MB)})
    return await _send_forever(request, answer, pause=0.0)


async def _endless_png(request: web.Request) -> web.StreamResponse:
    """An image whose chunked body never ends."""
    return await _send_forever(request, web.StreamResponse(headers={"Content-Type": "image/png"}), pause=0.0)


async def _slow_png(request: web.Request) -> web.StreamResponse:
    """An image whose body never ends, a few bytes at a time."""
    return await _send_forever(request, web.StreamResponse(headers={"Content-Type": "image/png"}), pause=0.05)


async def _send_forever(
    request: web.Request, answer: web.StreamResponse, *, pause: float
) -> web.StreamResponse:
    await answer.prepare(request)
    piece = bytes(16) if pause else bytes(256 * 1024)
    try:
        await answer.write(png_header(256, 256))
        for _ in range(1_000_000):
            await answer.write(piece)
            await asyncio.sleep(pause)
    except ConnectionError:
        pass  # the client went away, as it should
    return answer


@pytest.mark.parametrize("answer", [_huge_png, _endless_png], ids=["declared-2GB", "endless"])
def test_a_huge_image_fails_at_the_size_cap(answer):
    started = time.monotonic()
    result, _ = check_wms(answer, max_body_bytes=1 * MB, total_timeout=30.0)
    operation = result.operation_check
    assert (operation.outcome, operation.error_reason) == ("failed", "truncated")
    assert operation.bytes is None or operation.bytes < 4 * MB  # what came before the fetcher stopped reading
    assert time.monotonic() - started < 25


def test_an_endless_slow_image_fails_at_the_timeout():
    started = time.monotonic()
    result, _ = check_wms(_slow_png, total_timeout=1.5, read_timeout=1.0)
    assert result.outcome == "unchanged"
    assert (result.operation_check.outcome, result.operation_check.error_reason) == ("failed", "timeout")
    assert result.operation_check.total_seconds is None  # no answer came whole
    assert time.monotonic() - started < 20
