"""GeoTIFF and Cloud Optimized GeoTIFF files, confirmed from the TIFF header alone.

The header (classic or BigTIFF, either byte order) is parsed in pure Python: the size and layout of the first
image, the number of images (overviews), and its GeoKeys and georeferencing tags, which give the extent in
the file's EPSG CRS, reprojected to WGS84. A body the crawl did not read whole is not downloaded: the first
``HEADER_BYTES`` are read with one HTTP Range request, and a server ignoring Range costs only that prefix.
A TIFF without a GeoKeyDirectory is a plain image, not a GeoTIFF.
"""

from __future__ import annotations

import posixpath
import re
import struct
from dataclasses import dataclass
from urllib.parse import urlsplit

from geoweb.detect.base import DetectContext, Detector
from geoweb.detect.crs import reprojected_bbox
from geoweb.errors import GeowebError, HTTPStatusError, MalformedContent, RangeNotHonoured
from geoweb.fetch.response import Response
from geoweb.links.normalize import normalize_url
from geoweb.models import Dataset, Resource, sha256

HEADER_BYTES = 64 * 1024  # COG puts every IFD and tag value before the image data, well inside this
TIFF_MAGICS = (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+")
TIFF_MEDIA_TYPES = ("image/tiff", "image/geotiff")
TIFF_EXTENSIONS = (".tif", ".tiff")
MAX_IFDS = 64  # a COG has one IFD per overview level (and mask); more is a loop or junk
MAX_ENTRIES = 4096  # tags per IFD; real files have a few dozen

# tag ids
WIDTH, HEIGHT, STRIP_OFFSETS, TILE_WIDTH, TILE_LENGTH = 256, 257, 273, 322, 323
PIXEL_SCALE, TIEPOINT, TRANSFORMATION, GEO_KEYS = 33550, 33922, 34264, 34735
# GeoKeys
MODEL_TYPE, GEOGRAPHIC_TYPE, PROJECTED_TYPE = 1024, 2048, 3072
USER_DEFINED = 32767
SHORT = 3
# field type -> struct code (one value); RATIONALs are read as two integers
FIELD_TYPES = {
    1: "B", 2: "B", 3: "H", 4: "I", 5: "II", 6: "b", 7: "B", 8: "h",
    9: "i", 10: "ii", 11: "f", 12: "d", 16: "Q", 17: "q", 18: "Q",
}  # fmt: skip
_CONTENT_RANGE_START = re.compile(r"bytes 0-\d+/(?:\d+|\*)")


class NotGeoTIFF(MalformedContent):
    """Raised when a TIFF-looking response is not a TIFF, or a TIFF without GeoKeys."""

    reason = "not_geotiff"
    user_msg = "The file is not a GeoTIFF"


@dataclass(frozen=True, slots=True)
class Entry:
    """One IFD entry: where its values are, not the values (read only for the tags needed)."""

    type: int
    count: int
    offset: int  # of the values in the data


class TiffHeader:
    """The IFDs of a TIFF prefix. Offsets beyond the prefix, loops and absurd counts raise MalformedContent."""

    def __init__(self, data: bytes):
        magic = data[:4]
        if magic not in TIFF_MAGICS:
            raise NotGeoTIFF("no TIFF or BigTIFF signature")
        self.data = data
        self.order = "<" if magic.startswith(b"II") else ">"
        self.big = magic[2:] in (b"+\x00", b"\x00+")
        if self.big:
            size, _, first = self._unpack("HHQ", 4)
            if size != 8:
                raise MalformedContent(f"BigTIFF offset size {size}, not 8")
        else:
            (first,) = self._unpack("I", 4)
        self.ifds = self._walk(first)

    def _unpack(self, fmt: str, offset: int) -> tuple:
        fmt = self.order + fmt
        if offset < 0 or offset + struct.calcsize(fmt) > len(self.data):
            raise MalformedContent(f"offset {offset} is beyond the {len(self.data)} header bytes read")
        return struct.unpack_from(fmt, self.data, offset)

    def _walk(self, offset: int) -> list[dict[int, Entry]]:
        """Every IFD in the chain; the first must be readable, a later one beyond the prefix ends the walk."""
        ifds: list[dict[int, Entry]] = []
        seen: set[int] = set()
        while offset:
            if offset in seen:
                raise MalformedContent(f"IFD chain loops back to offset {offset}")
            if len(ifds) == MAX_IFDS:
                raise MalformedContent(f"more than {MAX_IFDS} IFDs")
            seen.add(offset)
            try:
                ifd, offset = self._ifd(offset)
            except MalformedContent:
                if not ifds:
                    raise
                break
            ifds.append(ifd)
        if not ifds:
            raise MalformedContent("the TIFF has no image")
        return ifds

    def _ifd(self, offset: int) -> tuple[dict[int, Entry], int]:
        """The entries of the IFD at ``offset`` and the offset of the next IFD."""
        # BigTIFF widens the entry count to 8 bytes and every count and offset to 8 bytes
        count_fmt, pointer, inline = ("Q", "Q", 8) if self.big else ("H", "I", 4)
        (count,) = self._unpack(count_fmt, offset)
        if count > MAX_ENTRIES:
            raise MalformedContent(f"IFD of {count} entries")
        position = offset + struct.calcsize(count_fmt)
        entry_size = 4 + 2 * inline
        entries = {}
        for i in range(count):
            start = position + i * entry_size
            tag, kind, n = self._unpack("HH" + pointer, start)
            if kind in FIELD_TYPES:  # unknown types are skipped, as TIFF readers must
                # values that fit in the entry sit in it; others are at the offset it holds
                value_at = start + 4 + inline
                if n * struct.calcsize(FIELD_TYPES[kind]) > inline:
                    (value_at,) = self._unpack(pointer, value_at)
                entries[tag] = Entry(kind, n, value_at)
        (following,) = self._unpack(pointer, position + count * entry_size)
        return entries, following

    def values(self, ifd: dict[int, Entry], tag: int) -> tuple | None:
        """The values of ``tag`` in ``ifd`` (None when absent); RATIONALs come as flat numerator, denominator."""
        entry = ifd.get(tag)
        if entry is None:
            return None
        code = FIELD_TYPES[entry.type]
        if entry.count * struct.calcsize(code) > len(self.data):
            raise MalformedContent(f"tag {tag} claims {entry.count} values, more than the header holds")
        return self._unpack(f"{entry.count * len(code)}{code[0]}", entry.offset)

    def number(self, ifd: dict[int, Entry], tag: int) -> int | None:
        """The first value of an integer tag (None when absent)."""
        found = self.values(ifd, tag)
        if found and not isinstance(found[0], int):
            raise MalformedContent(f"tag {tag} holds {found[0]!r}, not an integer")
        return found[0] if found else None


def geo_keys(header: TiffHeader, ifd: dict[int, Entry]) -> dict[int, int]:
    """The SHORT-valued GeoKeys of the GeoKeyDirectory (34735); raises NotGeoTIFF when there is none."""
    directory = header.values(ifd, GEO_KEYS)
    if not directory or len(directory) < 4:
        raise NotGeoTIFF("a TIFF without a GeoKeyDirectory is not a GeoTIFF")
    if ifd[GEO_KEYS].type != SHORT:
        raise MalformedContent(f"GeoKeyDirectory of field type {ifd[GEO_KEYS].type}, not SHORT")
    keys = {}
    for i in range(min(directory[3], (len(directory) - 4) // 4)):
        key, location, _, value = directory[4 + 4 * i : 8 + 4 * i]
        if location == 0:  # the value is the SHORT itself; other locations point into other tags
            keys[key] = value
    return keys


def epsg_code(keys: dict[int, int]) -> int | None:
    """The EPSG code of the CRS: projected for a projected model, geographic for a geographic one."""
    order = (
        (GEOGRAPHIC_TYPE, PROJECTED_TYPE) if keys.get(MODEL_TYPE) == 2 else (PROJECTED_TYPE, GEOGRAPHIC_TYPE)
    )
    code = next((keys[k] for k in order if k in keys), None)
    return code if code and code != USER_DEFINED else None


def native_bbox(header: TiffHeader, ifd: dict[int, Entry], width: int, height: int):
    """The image extent in its own CRS from ModelTransformation, or from ModelPixelScale + ModelTiepoint."""
    matrix = header.values(ifd, TRANSFORMATION)
    if matrix and len(matrix) >= 8:
        a, b, _, d, e, f, _, h = matrix[:8]
        corners = [(a * i + b * j + d, e * i + f * j + h) for i in (0, width) for j in (0, height)]
    else:
        scale, tiepoint = header.values(ifd, PIXEL_SCALE), header.values(ifd, TIEPOINT)
        if not (scale and tiepoint and len(scale) >= 2 and len(tiepoint) >= 6):
            return None
        i, j, _, x, y, _ = tiepoint[:6]
        left, top = x - i * scale[0], y + j * scale[1]
        corners = [(left, top), (left + width * scale[0], top - height * scale[1])]
    xs, ys = [c[0] for c in corners], [c[1] for c in corners]
    return (min(xs), min(ys), max(xs), max(ys))


class GeoTIFFDetector(Detector):
    name = "geotiff"
    types = ("GEOTIFF",)

    def accepts(self, response: Response) -> bool:
        return (
            response.names_file(*TIFF_EXTENSIONS)
            or response.content_type in TIFF_MEDIA_TYPES
            or response.body.startswith(TIFF_MAGICS)
        )

    async def detect(self, response: Response, ctx: DetectContext) -> list[Resource]:
        if not ctx.wants("GEOTIFF"):
            return []
        try:
            if not 200 <= response.status < 300:
                raise HTTPStatusError(response.status, url=response.final_url)
            if response.body and not response.body.startswith(TIFF_MAGICS):  # an empty body was not read
                raise NotGeoTIFF("body is not a TIFF file")
            if response.complete:
                resource = geotiff_resource(response, response.body, "download")
            else:
                resource = geotiff_resource(response, await read_header(ctx, response.final_url), "range")
        except GeowebError as exc:
            return ctx.miss(self.name, response.final_url, exc)
        ctx.stats[f"geotiff/found/{resource.extra['inspected']}"] += 1
        return [resource]


async def read_header(ctx: DetectContext, url: str) -> bytes:
    """The first ``HEADER_BYTES`` of the file with one Range request; a 200 answer is capped to as many."""
    ctx.stats["geotiff/range_requests"] += 1
    response = await ctx.fetch(url, headers={"Range": f"bytes=0-{HEADER_BYTES - 1}"}, max_bytes=HEADER_BYTES)
    if response.status == 206:
        content_range = response.headers.get("content-range", "").strip()
        if not _CONTENT_RANGE_START.fullmatch(content_range):
            raise RangeNotHonoured(f"Content-Range {content_range!r} does not start at byte 0")
    elif response.status == 200:
        if not response.body:  # a declared size over the cap: the fetcher read nothing
            raise RangeNotHonoured("HTTP 200 to a Range request, with a body too large to read")
    else:
        raise HTTPStatusError(response.status, url=url)
    return response.body[:HEADER_BYTES]


def geotiff_resource(response: Response, data: bytes, inspected: str) -> Resource:
    """The GeoTIFF resource of a file whose first bytes (or all of it) are ``data``."""
    header = TiffHeader(data)
    first = header.ifds[0]
    width, height = header.number(first, WIDTH), header.number(first, HEIGHT)
    if not width or not height:
        raise MalformedContent("the first image has no width or height")
    keys = geo_keys(header, first)
    code = epsg_code(keys)
    crs = f"EPSG:{code}" if code else None
    native = native_bbox(header, first, width, height)
    # without a known CRS, a box is kept only when it is plainly in degrees
    bbox = reprojected_bbox(native, crs) if native else None
    tiled = TILE_WIDTH in first and TILE_LENGTH in first
    if not tiled and STRIP_OFFSETS not in first:
        raise MalformedContent("the first image has neither tiles nor strips")
    overviews = len(header.ifds) - 1
    extra = {
        "width": width,
        "height": height,
        "crs": crs,
        "layout": "tiled" if tiled else "stripped",
        "tile_size": [header.number(first, TILE_WIDTH), header.number(first, TILE_LENGTH)] if tiled else None,
        "overviews": overviews,
        "cog_like": tiled and overviews > 0,
        "bigtiff": header.big,
        "inspected": inspected,
    }
    stem = posixpath.splitext(posixpath.basename(urlsplit(response.final_url).path))[0] or None
    return Resource(
        url=normalize_url(response.final_url) or response.final_url,
        type="GEOTIFF",
        datasets=[Dataset(name=stem, bbox=bbox, extra={"width": width, "height": height, "crs": crs})],
        bbox=bbox,
        extra=extra,
        content_sha256=sha256(response.body) if response.complete else None,
    )
