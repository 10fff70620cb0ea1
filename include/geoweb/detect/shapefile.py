"""Zipped ESRI shapefiles: a .shp with its .shx and .dbf (same stem, any case, any folder) inside a ZIP.

A ZIP up to ``settings.shapefile_download_cap`` is read from the body the crawl already fetched, from the
shapefile's headers alone: the .shp header's shape type and bounds, the .shx length's feature count, the
.prj's CRS (pyproj), the bounds reprojected to WGS84, the title and abstract of its metadata member
(``<stem>.shp.xml`` or ``<stem>.xml``, as ArcGIS writes it: ESRI, FGDC or ISO 19139/19115-3), read within
``METADATA_MAX_BYTES`` with the hardened XML parser. Each member is still decompressed and checked whole (its
CRC, the bomb limits) a chunk at a time, but nothing of it is held beyond its header. A larger ZIP is
identified from its central directory alone, read with at most two HTTP Range requests (and one more for a
metadata member): the archive itself is never held. From a server that ignores Range, the archive is streamed once to its end (at most
``tail_stream_max_bytes``) keeping only its last 64 KiB, where the directory lies.
"""

from __future__ import annotations

import asyncio
import logging
import posixpath
import struct
from dataclasses import dataclass

from lxml import etree
from pyproj import CRS
from pyproj.exceptions import CRSError

from geoweb.detect.base import DetectContext, Detector
from geoweb.detect.crs import reprojected_bbox
from geoweb.detect.rangezip import read_member, remote_directory
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
from geoweb.values import ABSTRACT_CHARS, one_line, stripped
from geoweb.xmlsafe import parse_xml
from geoweb.ziputil import (
    ZIP_MAGIC,
    ZipEntry,
    ZipReader,
)

log = logging.getLogger("geoweb.detect")

ZIP_MEDIA_TYPES = ("application/zip", "application/x-zip-compressed")
REQUIRED = (".shp", ".shx", ".dbf")
SIDECARS = (".prj", ".cpg")  # read when present: the CRS and the .dbf encoding
METADATA = (".shp.xml", ".xml")  # the metadata ArcGIS keeps beside a shapefile, the first found read
METADATA_MAX_BYTES = 1024 * 1024  # a metadata record; a larger member is not read


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

    @property
    def metadata(self) -> ZipEntry | None:
        """The metadata member, when there is one small enough to read."""
        entry = next((self.members[ext] for ext in METADATA if ext in self.members), None)
        return entry if entry is not None and entry.size <= METADATA_MAX_BYTES else None


def find_shapefiles(entries: list[ZipEntry]) -> list[Shapefile]:
    """The complete shapefiles among ``entries``, in archive order; macOS resource forks are ignored."""
    by_stem: dict[str, dict[str, ZipEntry]] = {}
    for entry in entries:
        if entry.name.startswith("__MACOSX/"):
            continue
        stem, ext = posixpath.splitext(entry.name)
        if entry.name.lower().endswith(".shp.xml"):
            stem, ext = entry.name[: -len(".shp.xml")], ".shp.xml"
        if ext.lower() in REQUIRED + SIDECARS + METADATA:
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
                # members are decompressed in a worker thread: the crawl's other requests go on meanwhile
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
    datasets = []
    for shapefile in shapefiles:
        title, abstract = await _metadata_by_range(ctx, response.final_url, shapefile)
        datasets.append(
            Dataset(name=shapefile.stem, title=title, extra={"path": shapefile.path} | _abstract(abstract))
        )
    return _resource(response, archive_bytes, shapefiles, datasets, "range")


async def _metadata_by_range(
    ctx: DetectContext, url: str, shapefile: Shapefile
) -> tuple[str | None, str | None]:
    """The title and abstract of a shapefile's metadata member read with one Range request; a member that
    cannot be read is logged and left out."""
    entry = shapefile.metadata
    if entry is None:
        return None, None
    settings = ctx.settings
    try:
        chunks = await read_member(
            ctx,
            url,
            entry,
            max_ratio=settings.zip_max_ratio,
            max_bytes=METADATA_MAX_BYTES,
            counter="shapefile",
        )
        return metadata_texts(b"".join(chunks), url, entry.name)
    except GeowebError as exc:
        log.info("shapefile: %s: metadata %s not read (%s): %s", url, entry.name, exc.reason, exc)
        return None, None


def _require_shapefiles(shapefiles: list[Shapefile]) -> list[Shapefile]:
    if not shapefiles:
        raise NoShapefile("no .shp with its .shx and .dbf in the archive")
    return shapefiles


def _resource(
    response: Response, archive_bytes: int, shapefiles: list[Shapefile], datasets: list[Dataset], how: str
) -> Resource:
    """The archive's resource, titled by its first shapefile's metadata that has a title."""
    described = next((d for d in datasets if d.title), None)
    return Resource(
        url=normalize_url(response.final_url) or response.final_url,
        type="SHAPEFILE",
        title=described.title if described else None,
        abstract=described.extra.get("abstract") if described else None,
        datasets=datasets,
        bbox=union_bbox(d.bbox for d in datasets),
        extra={"archive_bytes": archive_bytes, "files": [s.path for s in shapefiles], "inspected": how},
        content_sha256=sha256(response.body) if response.complete else None,
    )


SHP_HEADER = struct.Struct("<32xi4d")  # after the big-endian file code and length: shape type, bounds
FILE_CODE = 9994
PRJ_MAX_BYTES = 64 * 1024  # a .prj is one WKT string; a longer one is not a CRS
# shape type -> geometry type as GDAL names it (the M and Z variants keep their letter)
SHAPE_TYPES = {
    0: None, 1: "Point", 3: "LineString", 5: "Polygon", 8: "MultiPoint",
    11: "Point Z", 13: "LineString Z", 15: "Polygon Z", 18: "MultiPoint Z",
    21: "Point M", 23: "LineString M", 25: "Polygon M", 28: "MultiPoint M", 31: "MultiPatch",
}  # fmt: skip


def _describe(reader: ZipReader, shapefile: Shapefile, url: str) -> Dataset | None:
    """The dataset of one shapefile from its headers, or None (logged) when they cannot be read; a zip
    bomb raises."""
    try:
        shape_type, bounds = _shp_header(reader.head(shapefile.members[".shp"], 100))
        index = shapefile.members[".shx"]
        if reader.head(index, 4) != struct.pack(">i", FILE_CODE):
            raise MalformedContent(".shx has no shapefile header")
        reader.head(shapefile.members[".dbf"], 32)  # checked whole (CRC, size), its header not needed
        crs = _crs(reader, shapefile.members.get(".prj"))
        metadata = shapefile.metadata
        texts = metadata_texts(reader.read(metadata), url, metadata.name) if metadata else (None, None)
    except UnsafeContent:
        raise  # a bomb condemns the whole archive
    except MalformedContent as exc:
        log.info("shapefile: %s: %s is unreadable: %s", url, shapefile.path, exc)
        return None
    features = max(0, (index.size - 100) // 8)  # one 8-byte record per feature after the 100-byte header
    extra = {
        "path": shapefile.path,
        "features": features,
        "geometry_type": SHAPE_TYPES[shape_type],
        "crs": crs,
    }
    return Dataset(
        name=shapefile.stem,
        title=texts[0],
        bbox=reprojected_bbox(bounds, crs) if features > 0 else None,
        extra=extra | _abstract(texts[1]),
    )


def _abstract(abstract: str | None) -> dict:
    """The dataset's extra member for its metadata's abstract, when it has one."""
    return {"abstract": abstract} if abstract else {}


def _shp_header(header: bytes) -> tuple[int, tuple[float, float, float, float]]:
    if len(header) < 100 or struct.unpack_from(">i", header)[0] != FILE_CODE:
        raise MalformedContent(".shp has no shapefile header")
    shape_type, *bounds = SHP_HEADER.unpack_from(header)
    if shape_type not in SHAPE_TYPES:
        raise MalformedContent(f".shp of unknown shape type {shape_type}")
    return shape_type, tuple(bounds)


def _crs(reader: ZipReader, prj: ZipEntry | None) -> str | None:
    """``EPSG:<code>`` of the .prj when pyproj identifies one, else its WKT; None without a usable .prj."""
    if prj is None or prj.size > PRJ_MAX_BYTES:
        return None
    wkt = reader.read(prj).decode("latin-1").strip()
    try:
        crs = CRS.from_wkt(wkt)
    except CRSError:
        return None
    code = crs.to_epsg()
    return f"EPSG:{code}" if code else crs.to_wkt()


# Where each metadata format a shapefile's .xml holds keeps its title and abstract: root, then paths of
# local names below it ("*" any element). ArcGIS writes its own format, often beside an FGDC section.
_METADATA_PATHS = {
    "metadata": (  # ESRI (ArcGIS), then FGDC CSDGM
        (("dataIdInfo", "idCitation", "resTitle"), ("dataIdInfo", "idAbs")),
        (("idinfo", "citation", "citeinfo", "title"), ("idinfo", "descript", "abstract")),
    ),
    "MD_Metadata": (  # ISO 19139 (gmd) and ISO 19115-3 (mdb)
        (("identificationInfo", "*", "citation", "CI_Citation", "title", "CharacterString"),
         ("identificationInfo", "*", "abstract", "CharacterString")),
    ),
}  # fmt: skip
_METADATA_PATHS["MI_Metadata"] = _METADATA_PATHS["MD_Metadata"]  # ISO 19115-2 (gmi)


def metadata_texts(data: bytes, url: str, name: str) -> tuple[str | None, str | None]:
    """(title, abstract) of a shapefile's metadata record; (None, None), logged, for a document that is not
    one or cannot be parsed safely."""
    try:
        root = parse_xml(data, max_bytes=METADATA_MAX_BYTES)
    except GeowebError as exc:
        log.info("shapefile: %s: metadata %s not read (%s): %s", url, name, exc.reason, exc)
        return None, None
    for title_path, abstract_path in _METADATA_PATHS.get(etree.QName(root).localname, ()):
        title = one_line(_text_at(root, title_path))
        if title:
            return title, stripped(_text_at(root, abstract_path), ABSTRACT_CHARS)
    return None, None


def _text_at(root: etree._Element, path: tuple[str, ...]) -> str | None:
    """The text of the first element at ``path`` (local names, any namespace) below ``root``."""
    level = [root]
    for name in path:
        level = [
            child
            for parent in level
            for child in parent
            if isinstance(child.tag, str) and (name == "*" or etree.QName(child).localname == name)
        ]
    return next((element.text for element in level if stripped(element.text)), None)
