"""GeoTIFF and Cloud Optimized GeoTIFF files, confirmed from the TIFF header alone.

The header (classic or BigTIFF, either byte order) is walked in pure Python, bounds-checked: the size and
layout of the first image, the number of images (overviews), and the presence of a GeoKeyDirectory (a TIFF
without one is a plain image, not a GeoTIFF). The CRS and the footprint are GDAL's (rasterio), read from the
bytes fetched: every CRS GDAL knows is placed right (user-defined ones with their parameters, other prime
meridians and angular units, PixelIsPoint rasters, ESRI WKT citations), and a footprint GDAL cannot place is
null, never guessed from raw numbers. The title and abstract are the file's own metadata as GDAL reads it
(``file_texts``): a title item of its GDAL metadata, its TIFF DocumentName or a one-line ImageDescription,
never a path or a file name.

A body the crawl did not read whole is not downloaded: the first ``HEADER_BYTES`` are read with one HTTP
Range request, and a server ignoring Range costs only that prefix. When the first image's directory, or the
georeferencing values it points to, lie beyond the bytes read, one more Range request of ``HEADER_BYTES``
reads them there (at most ``MAX_RANGE_READS`` in all); GDAL reads the file as those regions in place
(``/vsisparse/``), zeros elsewhere.
"""

from __future__ import annotations

import asyncio
import math
import posixpath
import re
import struct
import warnings
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from urllib.parse import urlsplit

from geoweb.detect.base import DetectContext, Detector
from geoweb.errors import GeowebError, HTTPStatusError, MalformedContent, RangeNotHonoured
from geoweb.fetch.response import Response
from geoweb.links.normalize import normalize_url
from geoweb.models import BBox, Dataset, Resource, sha256
from geoweb.values import ABSTRACT_CHARS, TITLE_CHARS, one_line, stripped

HEADER_BYTES = 64 * 1024  # COG puts every IFD and tag value before the image data, well inside this
TIFF_MAGICS = (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+")
TIFF_MEDIA_TYPES = ("image/tiff", "image/geotiff")
TIFF_EXTENSIONS = (".tif", ".tiff")
MAX_IFDS = 64  # a COG has one IFD per overview level (and mask); more is a loop or junk
MAX_ENTRIES = 4096  # tags per IFD; real files have a few dozen
MAX_RANGE_READS = 3  # the head, the first directory further in, the georeferencing values further still

# tag ids
WIDTH, HEIGHT, STRIP_OFFSETS, TILE_WIDTH, TILE_LENGTH = 256, 257, 273, 322, 323
PIXEL_SCALE, TIEPOINT, TRANSFORMATION, GEO_KEYS = 33550, 33922, 34264, 34735
GEO_DOUBLES, GEO_ASCII = 34736, 34737
GEOREFERENCING = (PIXEL_SCALE, TIEPOINT, TRANSFORMATION, GEO_KEYS, GEO_DOUBLES, GEO_ASCII)
SHORT, LONG = 3, 4
# field type -> struct code (one value); RATIONALs are read as two integers
FIELD_TYPES = {
    1: "B", 2: "B", 3: "H", 4: "I", 5: "II", 6: "b", 7: "B", 8: "h",
    9: "i", 10: "ii", 11: "f", 12: "d", 16: "Q", 17: "q", 18: "Q",
}  # fmt: skip
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")


class NotGeoTIFF(MalformedContent):
    """Raised when a TIFF-looking response is not a TIFF, or a TIFF without GeoKeys."""

    reason = "not_geotiff"
    user_msg = "The file is not a GeoTIFF"


class Beyond(MalformedContent):
    """Raised when the header needs bytes at ``offset`` that were not fetched."""

    def __init__(self, offset: int, message: str):
        super().__init__(message)
        self.offset = offset


class Fetched:
    """The parts of a file read so far: regions (offset, bytes) and the file's size when known."""

    def __init__(self, regions: list[tuple[int, bytes]], size: int | None):
        self.regions = regions
        self.size = size if size is not None else max(offset + len(data) for offset, data in regions)

    def read(self, offset: int, length: int) -> bytes:
        for start, data in self.regions:
            if start <= offset and offset + length <= start + len(data):
                return data[offset - start : offset - start + length]
        if 0 <= offset < self.size:
            raise Beyond(offset, f"offset {offset} is beyond the bytes read")
        raise MalformedContent(f"offset {offset} is beyond the {self.size}-byte file")

    @property
    def whole(self) -> bool:
        return len(self.regions) == 1 and self.regions[0][0] == 0 and len(self.regions[0][1]) == self.size


@dataclass(frozen=True, slots=True)
class Entry:
    """One IFD entry: where its values are, not the values (read only for the tags needed)."""

    type: int
    count: int
    offset: int  # of the values in the data


class TiffHeader:
    """The IFDs of the parts of a TIFF read. Loops and absurd counts raise MalformedContent; bytes that were
    not read raise Beyond, saying where they are."""

    def __init__(self, data: Fetched):
        magic = data.read(0, 4) if data.size >= 4 else b""
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
        return struct.unpack(fmt, self.data.read(offset, struct.calcsize(fmt)))

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
                break  # an overview beyond the bytes read: the images counted are those read
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
        if entry.count * struct.calcsize(code) > self.data.size:
            raise MalformedContent(f"tag {tag} claims {entry.count} values, more than the file holds")
        return self._unpack(f"{entry.count * len(code)}{code[0]}", entry.offset)

    def number(self, ifd: dict[int, Entry], tag: int) -> int | None:
        """The first value of an integer tag (None when absent)."""
        found = self.values(ifd, tag)
        if found and not isinstance(found[0], int):
            raise MalformedContent(f"tag {tag} holds {found[0]!r}, not an integer")
        return found[0] if found else None


def check_georeferencing(header: TiffHeader, ifd: dict[int, Entry]) -> None:
    """Reads the georeferencing tags' values, so that GDAL gets them whole; raises NotGeoTIFF without a
    GeoKeyDirectory, MalformedContent for one that is not SHORT or LONG (LONG-typed keys are real: some
    writers use them), Beyond for values not read yet."""
    directory = header.values(ifd, GEO_KEYS)
    if not directory or len(directory) < 4:
        raise NotGeoTIFF("a TIFF without a GeoKeyDirectory is not a GeoTIFF")
    if ifd[GEO_KEYS].type not in (SHORT, LONG):
        raise MalformedContent(f"GeoKeyDirectory of field type {ifd[GEO_KEYS].type}, not SHORT or LONG")
    for tag in GEOREFERENCING:
        header.values(ifd, tag)


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
                fetched = Fetched([(0, response.body)], len(response.body))
                header = read_tiff(fetched)
            else:
                fetched, header = await fetch_header(ctx, response.final_url)
            # GDAL reads in a worker thread: the crawl's other requests go on meanwhile
            resource = await asyncio.to_thread(geotiff_resource, response, fetched, header)
        except GeowebError as exc:
            return ctx.miss(self.name, response.final_url, exc)
        ctx.stats[f"geotiff/found/{resource.extra['inspected']}"] += 1
        return [resource]


def read_tiff(fetched: Fetched) -> TiffHeader:
    """The header of the parts read, its georeferencing values checked (Beyond when some are not read)."""
    header = TiffHeader(fetched)
    check_georeferencing(header, header.ifds[0])
    return header


async def fetch_header(ctx: DetectContext, url: str) -> tuple[Fetched, TiffHeader]:
    """The first ``HEADER_BYTES`` of the file, and the regions further in that its first directory and its
    georeferencing values need, each with one Range request (``MAX_RANGE_READS`` in all)."""
    head, size = await read_range(ctx, url, 0)
    fetched = Fetched([(0, head)], size)
    for _ in range(MAX_RANGE_READS - 1):
        try:
            return fetched, read_tiff(fetched)
        except Beyond as exc:
            if size is None:  # a server ignoring Range sent the prefix only: nothing further can be read
                raise MalformedContent(f"{exc}, and the server does not answer Range requests") from None
            data, _ = await read_range(ctx, url, exc.offset)
            fetched.regions.append((exc.offset, data))
            ctx.stats["geotiff/directory_further_in"] += 1
    return fetched, read_tiff(fetched)


async def read_range(ctx: DetectContext, url: str, start: int) -> tuple[bytes, int | None]:
    """``HEADER_BYTES`` from ``start`` with one Range request, and the file's size (None when the server
    answers 200: then only a prefix, capped, is usable)."""
    ctx.stats["geotiff/range_requests"] += 1
    spec = f"bytes={start}-{start + HEADER_BYTES - 1}"
    response = await ctx.fetch(url, headers={"Range": spec}, max_bytes=HEADER_BYTES)
    if response.status == 206:
        match = _CONTENT_RANGE.fullmatch(response.headers.get("content-range", "").strip())
        if match is None or int(match[1]) != start:
            raise RangeNotHonoured(
                f"Content-Range {response.headers.get('content-range')!r} does not answer {spec!r}"
            )
        return response.body[:HEADER_BYTES], int(match[3]) if match[3] != "*" else None
    if response.status == 200 and start == 0:
        if not response.body:  # a declared size over the cap: the fetcher read nothing
            raise RangeNotHonoured("HTTP 200 to a Range request, with a body too large to read")
        return response.body[:HEADER_BYTES], None
    if response.status == 200:
        raise RangeNotHonoured(f"HTTP 200 to {spec!r}")
    raise HTTPStatusError(response.status, url=url)


def geotiff_resource(response: Response, fetched: Fetched, header: TiffHeader) -> Resource:
    """The GeoTIFF resource of a file whose header is ``header``, placed by GDAL from the bytes fetched."""
    first = header.ifds[0]
    width, height = header.number(first, WIDTH), header.number(first, HEIGHT)
    if not width or not height:
        raise MalformedContent("the first image has no width or height")
    tiled = TILE_WIDTH in first and TILE_LENGTH in first
    if not tiled and STRIP_OFFSETS not in first:
        raise MalformedContent("the first image has neither tiles nor strips")
    crs, bbox, tags = read_with_gdal(fetched)
    title, abstract = file_texts(tags)
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
        "inspected": "download" if response.complete else "range",
    }
    stem = posixpath.splitext(posixpath.basename(urlsplit(response.final_url).path))[0] or None
    return Resource(
        url=normalize_url(response.final_url) or response.final_url,
        type="GEOTIFF",
        title=title,
        abstract=abstract,
        datasets=[
            Dataset(name=stem, title=title, bbox=bbox, extra={"width": width, "height": height, "crs": crs})
        ],
        bbox=bbox,
        extra=extra,
        content_sha256=sha256(response.body) if response.complete else None,
    )


# GDAL touches nothing but the bytes given: no sidecar files, no directory listing, one thread.
_GDAL_OPTIONS = {"GDAL_DISABLE_READDIR_ON_OPEN": "EMPTY_DIR", "GDAL_NUM_THREADS": "1", "CPL_DEBUG": "OFF"}


def read_with_gdal(fetched: Fetched) -> tuple[str | None, BBox | None, dict[str, str]]:
    """The CRS (``EPSG:n`` when it is one, else its WKT), the WGS84 footprint GDAL gives the image and the
    file's metadata (GDAL's default domain: TIFF tags and GDAL_METADATA items); no CRS or no footprint when
    GDAL finds no CRS or no geotransform, a None footprint when it cannot place it."""
    import rasterio  # imported here: GDAL loads in a second, and only GeoTIFFs need it
    from rasterio.errors import NotGeoreferencedWarning
    from rasterio.warp import transform_bounds

    try:
        with warnings.catch_warnings(), rasterio.Env(**_GDAL_OPTIONS), _opened(fetched) as dataset:
            warnings.simplefilter("ignore", NotGeoreferencedWarning)  # a transform-less image is no footprint
            tags = dataset.tags()
            source = dataset.crs
            if source is None or dataset.transform.is_identity:
                return None, None, tags
            code = source.to_epsg()
            crs = f"EPSG:{code}" if code else source.to_wkt()
            corners = [
                dataset.transform @ (col, row) for col in (0, dataset.width) for row in (0, dataset.height)
            ]
            xs, ys = [x for x, _ in corners], [y for _, y in corners]
            try:  # GDAL raises its own errors (CPLE_*) too: any failure to place the box leaves it null
                box = transform_bounds(
                    source, "EPSG:4326", min(xs), min(ys), max(xs), max(ys), densify_pts=21
                )
            except Exception:
                return crs, None, tags
    except Exception as exc:  # GDAL failing in any way on bytes nobody vetted
        raise MalformedContent(f"GDAL cannot read the header: {exc}") from None
    if not all(math.isfinite(v) for v in box) or not (
        -180.5 <= box[0] <= box[2] <= 180.5 and -90.5 <= box[1] <= box[3] <= 90.5
    ):
        return crs, None, tags
    return crs, (max(box[0], -180.0), max(box[1], -90.0), min(box[2], 180.0), min(box[3], 90.0)), tags


# GDAL_METADATA items that name a dataset, upper-cased (a netCDF's NC_GLOBAL#title arrives as TITLE)
TITLE_ITEMS = ("TITLE", "DATASETNAME", "DATASET_NAME")
ABSTRACT_ITEMS = ("ABSTRACT", "DESCRIPTION", "SUMMARY")
_FILE_NAME = re.compile(r"[\\/]|\.[A-Za-z][A-Za-z0-9]{1,4}$")  # a path, or a name ending in an extension
_STRUCTURED = ("{", "[", "<")  # JSON or XML in an ImageDescription (cameras, tifffile, satellite pipelines)


def file_texts(tags: dict[str, str]) -> tuple[str | None, str | None]:
    """(title, abstract) of a GeoTIFF from its metadata: a title item of its GDAL metadata, else its TIFF
    DocumentName, else its ImageDescription when that is one line; the abstract an abstract or description
    item, else an ImageDescription of prose that is not the title. A path or a file name (libtiff tools
    write the source path as DocumentName) and structured text are no title."""
    items = {key.rpartition("#")[2].upper(): value for key, value in tags.items()}
    description = stripped(items.get("TIFFTAG_IMAGEDESCRIPTION"))
    candidates = [items.get(key) for key in TITLE_ITEMS] + [items.get("TIFFTAG_DOCUMENTNAME"), description]
    title = next(filter(None, map(_title, candidates)), None)
    abstract = next(filter(None, (stripped(items.get(key), ABSTRACT_CHARS) for key in ABSTRACT_ITEMS)), None)
    if abstract is None and description and description != title and not description.startswith(_STRUCTURED):
        abstract = stripped(description, ABSTRACT_CHARS)
    return title, abstract


def _title(value: str | None) -> str | None:
    """``value`` as a title: one line of words, not a path, a file name or structured text."""
    text = stripped(value)
    if text is None or "\n" in text or len(text) > TITLE_CHARS or text.startswith(_STRUCTURED):
        return None
    if _FILE_NAME.search(text) or not any(c.isalpha() for c in text):
        return None
    return one_line(text)


@contextmanager
def _opened(fetched: Fetched):
    """The fetched regions opened by rasterio: the file itself when whole, else a /vsisparse/ file of the
    regions in place (GDAL reads zeros between them); every /vsimem/ file is freed on exit."""
    import rasterio
    from rasterio.io import MemoryFile

    with ExitStack() as files:
        if fetched.whole:
            with files.enter_context(MemoryFile(fetched.regions[0][1])).open() as dataset:
                yield dataset
            return
        parts = []
        for offset, data in fetched.regions:
            region = files.enter_context(MemoryFile(data))
            parts.append(
                f'<SubfileRegion><Filename relative="0">{region.name}</Filename>'
                f"<DestinationOffset>{offset}</DestinationOffset><SourceOffset>0</SourceOffset>"
                f"<RegionLength>{len(data)}</RegionLength></SubfileRegion>"
            )
        xml = f"<VSISparseFile><Length>{fetched.size}</Length>{''.join(parts)}</VSISparseFile>"
        index = files.enter_context(MemoryFile(xml.encode(), ext=".xml"))
        with rasterio.open("/vsisparse/" + index.name) as dataset:
            yield dataset
