"""Builders for the KML, KMZ and shapefile tests: real files made at test time, and a loopback file server.

Shapefiles are written by geopandas (the GDAL Shapefile driver), ZIPs by the standard library, so the detectors
meet the files real tools produce. Nothing here is written outside the caller's ``tmp_path``.
"""

from __future__ import annotations

import io
import os
import warnings
import zipfile
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import geopandas
from aiohttp import web
from shapely.geometry import LineString, Point

from geoweb.detect.base import DetectContext
from geoweb.fetch.response import Response
from geoweb.models import ALL_TYPES
from geoweb.settings import Settings

MB = 1024 * 1024
KML22 = "http://www.opengis.net/kml/2.2"
GX = "http://www.google.com/kml/ext/2.2"

# Three points in UTM zone 33N (EPSG:32633), near 15°E 45°N.
UTM_POINTS = [Point(500000, 5000000), Point(510000, 5010000), Point(520000, 5020000)]


def shapefile_members(tmp_path: Path, stem: str, *, crs: str | None = "EPSG:32633", geometries=None) -> dict:
    """The files of one shapefile written by geopandas, as {file name: bytes}."""
    folder = tmp_path / f"shp-{stem}"
    folder.mkdir()
    geometries = UTM_POINTS if geometries is None else geometries
    frame = geopandas.GeoDataFrame({"id": range(len(geometries))}, geometry=geometries, crs=crs)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "'crs' was not provided")  # a shapefile without .prj is wanted
        frame.to_file(folder / f"{stem}.shp", driver="ESRI Shapefile")
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def wgs84_lines(tmp_path: Path, stem: str = "roads") -> dict:
    """A WGS84 line shapefile without .prj (lon/lat values), as {file name: bytes}."""
    members = shapefile_members(
        tmp_path,
        stem,
        crs=None,
        geometries=[LineString([(5.0, 50.0), (6.5, 51.25)]), LineString([(7, 52)] * 2)],
    )
    return {name: data for name, data in members.items() if not name.endswith(".prj")}


def zip_bytes(members: dict, *, compression: int = zipfile.ZIP_DEFLATED, comment: bytes = b"") -> bytes:
    """An archive of ``members`` ({name: bytes}) as the standard library writes it."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
        archive.comment = comment
    return buffer.getvalue()


def zip64_bytes(members: dict, monkeypatch, **kwargs) -> bytes:
    """A ZIP64 archive of small members: the standard library's writer with its ZIP64 thresholds at zero."""
    with monkeypatch.context() as patch:
        patch.setattr(zipfile, "ZIP64_LIMIT", 0)
        patch.setattr(zipfile, "ZIP_FILECOUNT_LIMIT", 0)
        return zip_bytes(members, **kwargs)


def kml_bytes(body: str, *, ns: str = KML22) -> bytes:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<kml xmlns="{ns}" xmlns:gx="{GX}">{body}</kml>'
    ).encode()


# A document with two top-level folders and every geometry type the bbox reads.
PARKS_KML = kml_bytes(
    """
<Document>
  <name>City parks</name>
  <description>Parks and trails of the city</description>
  <Folder>
    <name>Parks</name>
    <Placemark><name>North</name><Point><coordinates>10.5,45.25,0</coordinates></Point></Placemark>
    <Placemark><name>Lake</name><Polygon><outerBoundaryIs><LinearRing><coordinates>
        11,46 11.5,46 11.5,46.5 11,46
    </coordinates></LinearRing></outerBoundaryIs></Polygon></Placemark>
  </Folder>
  <Folder>
    <name>Trails</name>
    <Placemark><LineString><coordinates>9.0,44.0,10 9.5,44.5,12</coordinates></LineString></Placemark>
    <Folder><name>Tracks</name>
      <Placemark><gx:Track><when>2024-01-01T00:00:00Z</when><gx:coord>12.75 47.5 300</gx:coord></gx:Track>
      </Placemark>
    </Folder>
  </Folder>
</Document>"""
)


def legacy_kml(placemarks: int = 1119) -> bytes:
    """A KML whose ``kml`` root has no namespace, as older exporters write it (README.md in this folder):
    a named Document with a placemark at its root and the rest in two folders, one a subfolder."""
    points = [
        f"<Placemark><name>P{i}</name><Point><coordinates>{14 + (i % 200) / 100},{44 + (i % 150) / 75},0"
        "</coordinates></Point></Placemark>"
        for i in range(1, placemarks)
    ]
    half = len(points) // 2
    return (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<kml>\n  <Document>\n'
        "    <name>TopLevel</name>\n"
        "    <Placemark><name></name><LineString><altitudeMode>clampToGround</altitudeMode>"
        "<coordinates>13,43 13.5,43.5</coordinates></LineString></Placemark>\n"
        f"    <Folder><name>SubFolder1</name>{''.join(points[:half])}</Folder>\n"
        f"    <Folder><name>SubFolder2</name><Folder><name>Nested</name>{''.join(points[half:])}</Folder></Folder>\n"
        "  </Document>\n</kml>\n"
    ).encode()


def response(
    url: str, body: bytes = b"", *, headers: dict | None = None, complete: bool = True, status: int = 200
) -> Response:
    return Response(
        url=url, final_url=url, status=status, headers=headers or {}, body=body, complete=complete
    )


def context(fetch=None, *, settings: Settings | None = None, types=ALL_TYPES) -> DetectContext:
    return DetectContext(
        fetch=fetch or _no_fetch, settings=settings or Settings(), types=types, first_time=lambda key: True
    )


async def _no_fetch(url, **kwargs):
    raise AssertionError(f"unexpected request to {url}")


class LoopbackFetch:
    """``ctx.fetch`` for tests, with the fetcher's size contract; counts requests and body bytes received."""

    def __init__(self, settings: Settings | None = None):
        self.max_body_bytes = (settings or Settings()).max_body_bytes
        self.requests = 0
        self.bytes = 0  # kept
        self.streamed = 0  # read and dropped by tail reads and sinks
        self.sent: list[dict] = []

    async def __call__(
        self,
        url: str,
        *,
        headers: dict | None = None,
        max_bytes: int | None = None,
        tail: bool = False,
        sink=None,
    ) -> Response:
        cap = self.max_body_bytes if max_bytes is None else max_bytes
        self.requests += 1
        self.sent.append(dict(headers or {}) | ({"tail": True} if tail else {}))
        async with (
            aiohttp.ClientSession(auto_decompress=False) as session,
            session.get(url, headers=headers) as answer,
        ):
            complete, body, offset = True, bytearray(), 0
            if tail:  # streamed to its end, only the last ``cap`` bytes kept (tail_stream_max_bytes untested)
                async for chunk in answer.content.iter_chunked(64 * 1024):
                    self.streamed += len(chunk)
                    offset += len(chunk)
                    body = (body + chunk)[-cap:]
                offset -= len(body)
            elif (answer.content_length or 0) > cap:  # the fetcher does not read such a body
                complete = False
            elif sink is not None and 200 <= answer.status < 300:  # given to the sink as it comes, not kept
                sink.reset()
                given = 0
                async for chunk in answer.content.iter_chunked(64 * 1024):
                    given += len(chunk)
                    self.streamed += len(chunk)
                    if given > cap or sink.feed(chunk):
                        complete = False
                        break
            else:
                async for chunk in answer.content.iter_chunked(64 * 1024):
                    body += chunk
                    if len(body) > cap:
                        complete, body = False, body[:cap]
                        break
            self.bytes += len(body)
            names = {name.lower(): value for name, value in answer.headers.items()}
            return Response(
                url, str(answer.url), answer.status, names, bytes(body), complete, body_offset=offset
            )


@asynccontextmanager
async def serve(routes: dict):
    """A loopback HTTP server for {path: handler}; yields its base URL."""
    app = web.Application()
    for path, handler in routes.items():
        app.router.add_get(path, handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


def file_handler(path: Path):
    """Serves ``path`` with Range support (aiohttp's FileResponse)."""

    async def handle(request):
        return web.FileResponse(path)

    return handle


def range_ignoring_handler(path: Path):
    """Serves the whole of ``path`` with 200 whatever the Range header asks."""

    async def handle(request):
        return web.Response(body=path.read_bytes(), content_type="application/zip")

    return handle


def wrong_range_handler(path: Path):
    """Answers any Range with 206 and the FIRST bytes of ``path`` labelled as such; a plain GET gets it all."""

    async def handle(request):
        data = path.read_bytes()
        if "Range" not in request.headers:
            return web.Response(body=data, content_type="application/zip")
        headers = {"Content-Range": f"bytes 0-65535/{len(data)}"}
        return web.Response(status=206, body=data[:65536], headers=headers, content_type="application/zip")

    return handle


def padded_shapefile_members(tmp_path: Path, *, padding: int = 12 * MB) -> dict:
    """A shapefile in a subfolder plus an incompressible member of ``padding`` bytes, as {name: bytes}."""
    members = {f"data/{name}": data for name, data in shapefile_members(tmp_path, "parcels").items()}
    members["padding.bin"] = os.urandom(padding)
    return members


# --- GeoTIFFs of the shapes the header reader once misread (README.md in this folder) -------------------------

# A Transverse Mercator that is no EPSG CRS: GDAL writes it as user-defined GeoKeys (32767) with parameters.
USER_TMERC = "+proj=tmerc +lat_0=0 +lon_0=15.5 +k=0.9999 +x_0=500000 +y_0=0 +ellps=GRS80 +units=m +no_defs"
# Degrees from the Paris meridian: a user-defined geographic CRS with its prime meridian.
PARIS_DEGREES = (
    'GEOGCS["NTF (Paris) in degrees",DATUM["Nouvelle_Triangulation_Francaise_Paris",'
    'SPHEROID["Clarke 1880 (IGN)",6378249.2,293.4660212936269]],PRIMEM["Paris",2.33722917],'
    'UNIT["degree",0.0174532925199433],AXIS["Longitude",EAST],AXIS["Latitude",NORTH]]'
)


def write_geotiff(
    path: Path, crs, transform, *, width: int = 200, height: int = 200, tags=None, **options
) -> Path:
    """A one-band GeoTIFF written by GDAL (rasterio's bindings)."""
    import numpy
    import rasterio

    with rasterio.open(
        path, "w", driver="GTiff", width=width, height=height, count=1, dtype="uint8", crs=crs,
        transform=transform, **options,
    ) as dataset:  # fmt: skip
        dataset.write(numpy.zeros((1, height, width), "uint8"))
        if tags:
            dataset.update_tags(**tags)
    return path


def geotiff_cases(folder: Path) -> dict[str, tuple[Path, str | None, tuple]]:
    """name -> (file, its CRS as pyproj reads it, its extent in that CRS): one file per shape."""
    from rasterio.transform import from_origin

    cases = {}

    def case(name, crs, west, north, step, **options):
        path = write_geotiff(folder / f"{name}.tif", crs, from_origin(west, north, step, step), **options)
        cases[name] = (path, crs, (west, north - 200 * step, west + 200 * step, north))

    case("user_defined", USER_TMERC, 480_000, 5_000_000, 10)
    case("prime_meridian", PARIS_DEGREES, 12.0, 45.5, 0.005)
    case("grads", "EPSG:4807", 13.5, 50.5, 0.01)  # NTF (Paris) in grads: both at once
    case("pixel_is_point", "EPSG:4326", 14.0, 46.0, 0.01, tags={"AREA_OR_POINT": "Point"})
    case("esri_wkt", USER_TMERC, 480_000, 5_000_000, 10, GEOTIFF_KEYS_FLAVOR="ESRI_PE")
    case("long_keys", "EPSG:32633", 500_000, 5_000_000, 10)
    path = cases["long_keys"][0]
    path.write_bytes(with_long_geokeys(path.read_bytes()))
    # a projected CRS declared user-defined with no parameter at all, over numbers that look like degrees
    case("unknown_crs", "EPSG:4326", 14.0, 46.0, 0.01)
    path = cases["unknown_crs"][0]
    path.write_bytes(with_geokeys(path.read_bytes(), [1, 1, 0, 2, 1024, 0, 1, 1, 3072, 0, 1, 32767]))
    cases["unknown_crs"] = (path, None, cases["unknown_crs"][2])
    # the directory written after the image data: GDAL rewrites it at the end when georeferencing grows
    path = write_geotiff(folder / "directory_far.tif", None, None, width=400, height=400)
    import rasterio

    with rasterio.open(path, "r+") as dataset:
        dataset.crs, dataset.transform = "EPSG:32633", from_origin(500_000, 5_000_000, 10, 10)
    cases["directory_far"] = (path, "EPSG:32633", (500_000, 4_996_000, 504_000, 5_000_000))
    return cases


def _geokey_entry(data: bytes) -> tuple[int, int, int]:
    """(entry offset, value count, value offset) of the SHORT GeoKeyDirectory of a classic little-endian TIFF."""
    import struct

    (ifd,) = struct.unpack_from("<I", data, 4)
    (count,) = struct.unpack_from("<H", data, ifd)
    for entry in range(ifd + 2, ifd + 2 + 12 * count, 12):
        tag, kind, n, offset = struct.unpack_from("<HHII", data, entry)
        if tag == 34735 and kind == 3:
            return entry, n, offset
    raise ValueError("no SHORT GeoKeyDirectory")


def with_long_geokeys(data: bytes) -> bytes:
    """The TIFF with its GeoKeyDirectory rewritten as LONG values at the end."""
    import struct

    entry, n, offset = _geokey_entry(data)
    values = struct.unpack_from(f"<{n}H", data, offset)
    out = bytearray(data) + b"\x00" * (len(data) % 2)
    struct.pack_into("<HHII", out, entry, 34735, 4, n, len(out))
    return bytes(out + struct.pack(f"<{n}I", *values))


def with_geokeys(data: bytes, keys: list[int]) -> bytes:
    """The TIFF with its GeoKeyDirectory overwritten by ``keys`` (no longer than it), zeros after them."""
    import struct

    _, n, offset = _geokey_entry(data)
    out = bytearray(data)
    struct.pack_into(f"<{n}H", out, offset, *keys, *[0] * (n - len(keys)))
    return bytes(out)
