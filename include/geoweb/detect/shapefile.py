"""Zipped ESRI shapefiles: a .shp with its .shx and .dbf (same stem, any case, any folder) inside a ZIP.

A ZIP up to ``settings.shapefile_download_cap`` is read from the body the crawl already fetched: pyogrio gives
each shapefile's feature count, geometry type, CRS and bbox, reprojected to WGS84 with pyproj. A larger ZIP is
identified from its central directory alone, read with at most two HTTP Range requests: the archive itself is
never held. From a server that ignores Range, the archive is streamed once to its end (at most
``tail_stream_max_bytes``) keeping only its last 64 KiB, where the directory lies.
"""

from __future__ import annotations

import asyncio
import io
import logging
import posixpath
import zipfile
from dataclasses import dataclass

from geoweb.detect.base import DetectContext, Detector
from geoweb.detect.crs import reprojected_bbox
from geoweb.detect.rangezip import remote_directory
from geoweb.errors import (
    GeowebError,
    HTTPStatusError,
    MalformedContent,
    UnsafeContent,
)
from geoweb.fetch.response import Response
from geoweb.links.normalize import normalize_url
from geoweb.models import Dataset, Resource, sha256, union_bbox
from geoweb.settings import Settings
from geoweb.ziputil import (
    ZIP_MAGIC,
    ZipEntry,
    ZipReader,
)

log = logging.getLogger("geoweb.detect")

ZIP_MEDIA_TYPES = ("application/zip", "application/x-zip-compressed")
REQUIRED = (".shp", ".shx", ".dbf")
SIDECARS = (".prj", ".cpg")  # read when present: the CRS and the .dbf encoding


class NoShapefile(MalformedContent):
    """Raised when a ZIP holds no complete shapefile (.shp with its .shx and .dbf)."""

    reason = "no_shapefile"
    user_msg = "The archive holds no shapefile"


@dataclass(frozen=True, slots=True)
class Shapefile:
    """The members of one shapefile inside an archive, by lower-case extension."""

    members: dict[str, ZipEntry]

    @property
    def path(self) -> str:
        return self.members[".shp"].name

    @property
    def stem(self) -> str:
        return posixpath.splitext(posixpath.basename(self.path.replace("\\", "/")))[0]


def find_shapefiles(entries: list[ZipEntry]) -> list[Shapefile]:
    """The complete shapefiles among ``entries``, in archive order; macOS resource forks are ignored."""
    by_stem: dict[str, dict[str, ZipEntry]] = {}
    for entry in entries:
        if entry.name.startswith("__MACOSX/"):
            continue
        stem, ext = posixpath.splitext(entry.name)
        if ext.lower() in REQUIRED + SIDECARS:
            by_stem.setdefault(stem.lower(), {})[ext.lower()] = entry
    return [Shapefile(members) for members in by_stem.values() if all(ext in members for ext in REQUIRED)]


class ShapefileDetector(Detector):
    name = "shapefile"
    types = ("SHAPEFILE",)

    def accepts(self, response: Response) -> bool:
        return (
            response.names_file(".zip")
            or response.content_type in ZIP_MEDIA_TYPES
            or response.body.startswith(ZIP_MAGIC)
        )

    async def detect(self, response: Response, ctx: DetectContext) -> list[Resource]:
        if not ctx.wants("SHAPEFILE"):
            return []
        try:
            if not 200 <= response.status < 300:
                raise HTTPStatusError(response.status, url=response.final_url)
            if response.body and not response.body.startswith(ZIP_MAGIC):  # an empty body was not read
                raise MalformedContent("body is not a ZIP archive")
            if response.complete and len(response.body) <= ctx.settings.shapefile_download_cap:
                # GDAL reads in a worker thread: the crawl's other requests go on meanwhile
                resource = await asyncio.to_thread(shapefile_resource, response, ctx.settings)
            else:
                resource = await shapefile_resource_by_range(response, ctx)
        except GeowebError as exc:
            return ctx.miss(self.name, response.final_url, exc)
        ctx.stats[f"shapefile/found/{resource.extra['inspected']}"] += 1
        return [resource]


def shapefile_resource(response: Response, settings: Settings) -> Resource:
    """The resource of a ZIP held whole in ``response.body``, with each shapefile's metadata."""
    body = response.body
    reader = ZipReader(body, max_ratio=settings.zip_max_ratio, max_bytes=settings.zip_max_member_bytes)
    shapefiles = _require_shapefiles(find_shapefiles(reader.entries))
    datasets = [d for d in (_describe(reader, s, response.final_url) for s in shapefiles) if d is not None]
    if not datasets:
        raise MalformedContent("no shapefile in the archive could be read")
    return _resource(response, len(body), shapefiles, datasets, "download")


async def shapefile_resource_by_range(response: Response, ctx: DetectContext) -> Resource:
    """The resource of a ZIP too large to download, from its central directory read with Range requests."""
    entries, archive_bytes = await remote_directory(
        ctx, response.final_url, counter="shapefile", stream_tail=True
    )
    shapefiles = _require_shapefiles(find_shapefiles(entries))
    datasets = [Dataset(name=s.stem, extra={"path": s.path}) for s in shapefiles]
    return _resource(response, archive_bytes, shapefiles, datasets, "range")


def _require_shapefiles(shapefiles: list[Shapefile]) -> list[Shapefile]:
    if not shapefiles:
        raise NoShapefile("no .shp with its .shx and .dbf in the archive")
    return shapefiles


def _resource(
    response: Response, archive_bytes: int, shapefiles: list[Shapefile], datasets: list[Dataset], how: str
) -> Resource:
    return Resource(
        url=normalize_url(response.final_url) or response.final_url,
        type="SHAPEFILE",
        datasets=datasets,
        bbox=union_bbox(d.bbox for d in datasets),
        extra={"archive_bytes": archive_bytes, "files": [s.path for s in shapefiles], "inspected": how},
        content_sha256=sha256(response.body) if response.complete else None,
    )


def _describe(reader: ZipReader, shapefile: Shapefile, url: str) -> Dataset | None:
    """The dataset of one shapefile, or None (logged) when it cannot be read; a zip bomb raises."""
    import pyogrio  # imported here: it costs a second (pandas) and only downloaded archives need it

    try:
        info = pyogrio.read_info(_repack(reader, shapefile))
    except UnsafeContent:
        raise  # a bomb condemns the whole archive
    except Exception as exc:  # a broken member, or GDAL failing in any way on bytes nobody vetted
        log.info("shapefile: %s: %s is unreadable: %s", url, shapefile.path, exc)
        return None
    crs, features = info["crs"], int(info["features"])
    return Dataset(
        name=shapefile.stem,
        bbox=reprojected_bbox(info["total_bounds"], crs) if features > 0 else None,
        extra={
            "path": shapefile.path,
            "features": features,
            "geometry_type": info["geometry_type"],
            "crs": crs,
        },
    )


def _repack(reader: ZipReader, shapefile: Shapefile) -> bytes:
    """One shapefile's members as a flat, uncompressed ZIP in memory.

    GDAL opens a ZIP held in memory only when its shapefile sits at the root, and this way it never sees the
    original (possibly hostile) archive: every byte it gets went through the capped reader.
    """
    package = io.BytesIO()
    with zipfile.ZipFile(package, "w", zipfile.ZIP_STORED) as archive:
        for ext, entry in shapefile.members.items():
            archive.writestr("layer" + ext, reader.read(entry))
    return package.getvalue()
