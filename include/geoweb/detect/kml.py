"""KML and KMZ files, confirmed by content: a ``kml`` root in a KML namespace, plain or zipped (KMZ).

A URL ending in .kml proves nothing (a soft-404 HTML page is not a KML file), and a KML file may come from a
URL without the extension (``download?id=5`` with ``Content-Disposition: filename="parks.kmz"``).

A KMZ too large to download (photos and overlays make them large) is read in parts with HTTP Range
requests: its central directory, then its main KML alone.

Datasets: one per top-level Folder of the document, or the document itself when it has no Folder. The bbox is
the WGS84 extent of every coordinate in Point, LineString, LinearRing and gx:Track geometries.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator

from lxml import etree

from geoweb.detect.base import DetectContext, Detector
from geoweb.detect.rangezip import read_member, remote_directory
from geoweb.errors import GeowebError, HTTPStatusError, MalformedContent
from geoweb.fetch.response import Response
from geoweb.links.normalize import normalize_url
from geoweb.models import BBox, Dataset, Resource, sha256
from geoweb.settings import Settings
from geoweb.xmlsafe import parse_xml
from geoweb.ziputil import TAIL_BYTES, ZIP_MAGIC, ZipEntry, ZipReader

log = logging.getLogger("geoweb.detect")

# namespace -> KML version
KML_NAMESPACES = {
    "http://www.opengis.net/kml/2.2": "2.2",
    "http://earth.google.com/kml/2.0": "2.0",
    "http://earth.google.com/kml/2.1": "2.1",
    "http://earth.google.com/kml/2.2": "2.2",
}
GX = "http://www.google.com/kml/ext/2.2"
KMZ_MEDIA_TYPE = "application/vnd.google-earth.kmz"
KML_MEDIA_TYPES = ("application/vnd.google-earth.kml+xml", KMZ_MEDIA_TYPE)
KML_EXTENSIONS = (".kml", ".kmz")
_KML_ROOT = re.compile(rb"<(?:[\w.-]+:)?kml[\s>/]")
_KML_MEMBER = re.compile(rb"(?i)\.kml")


class NotKML(MalformedContent):
    """Raised when a response at a KML-looking URL is something else (an HTML page, other XML)."""

    reason = "not_kml"
    user_msg = "The document is not a KML file"


class KMLDetector(Detector):
    name = "kml"
    types = ("KML",)

    def accepts(self, response: Response) -> bool:
        return (
            response.names_file(*KML_EXTENSIONS)
            or response.content_type in KML_MEDIA_TYPES
            or _looks_like_kml(response.body)
        )

    async def detect(self, response: Response, ctx: DetectContext) -> list[Resource]:
        if not ctx.wants("KML"):
            return []
        try:
            if not 200 <= response.status < 300:
                raise HTTPStatusError(response.status, url=response.final_url)
            if response.complete:
                fmt, document = kml_document(response.body, ctx.settings)
            elif _names_kmz(response):  # too large to download: only its main KML is read
                fmt, document = "kmz", await kmz_document_by_range(response.final_url, ctx)
            else:
                raise MalformedContent("body incomplete (cut at the size cap)")
            resource = kml_resource(response, fmt, document, ctx.settings)
        except GeowebError as exc:
            return ctx.miss(self.name, response.final_url, exc)
        ctx.stats["kml/found"] += 1
        return [resource]


def _looks_like_kml(body: bytes) -> bool:
    """A KMZ naming a .kml member in its first local header or its central directory, or a ``<kml`` root."""
    if body.startswith(ZIP_MAGIC):
        return bool(
            _KML_MEMBER.search(body, 0, 512) or _KML_MEMBER.search(body, max(0, len(body) - TAIL_BYTES))
        )
    return bool(_KML_ROOT.search(body, 0, 1024))


def _names_kmz(response: Response) -> bool:
    return (
        response.names_file(".kmz")
        or response.content_type == KMZ_MEDIA_TYPE
        or response.body.startswith(ZIP_MAGIC)
    )


def kml_document(body: bytes, settings: Settings) -> tuple[str, bytes]:
    """The format ("kml" or "kmz") of a whole file and its KML document."""
    if body.startswith(ZIP_MAGIC):
        return "kmz", kmz_document(body, settings)
    return "kml", body


def kml_resource(response: Response, fmt: str, document: bytes, settings: Settings) -> Resource:
    """The KML resource ``document`` (the file, or a KMZ's main KML) proves; raises a GeowebError saying why
    not."""
    limit = settings.kml_max_bytes if fmt == "kmz" else settings.max_xml_bytes
    root = parse_xml(document, max_bytes=limit)
    qname = etree.QName(root)
    if qname.localname != "kml":
        raise NotKML(f"root element is {qname.localname!r}, not kml")
    ns = qname.namespace
    if ns not in KML_NAMESPACES:
        raise NotKML(f"kml root in namespace {ns!r}, not a KML namespace")
    container = _container(root, ns)
    parts = container.findall(f"{{{ns}}}Folder") or [container]
    datasets = [
        Dataset(
            name=_text(part, ns, "name"), bbox=_bbox(part, ns), extra={"placemarks": _placemarks(part, ns)}
        )
        for part in parts
    ]
    return Resource(
        url=normalize_url(response.final_url) or response.final_url,
        type="KML",
        version=KML_NAMESPACES[ns],
        title=_text(container, ns, "name"),
        abstract=_text(container, ns, "description"),
        datasets=datasets,
        bbox=_bbox(root, ns),
        extra={"placemarks": _placemarks(root, ns), "format": fmt},
        content_sha256=sha256(response.body),
    )


def kmz_document(body: bytes, settings: Settings) -> bytes:
    """The main KML of a KMZ held whole in ``body``."""
    reader = ZipReader(body, max_ratio=settings.zip_max_ratio, max_bytes=settings.kml_max_bytes)
    return reader.read(_main_kml(reader.entries))


async def kmz_document_by_range(url: str, ctx: DetectContext) -> bytes:
    """The main KML of a KMZ too large to download: its directory, then that member, read by Range."""
    entries, _ = await remote_directory(ctx, url, counter="kml")
    settings = ctx.settings
    return await read_member(
        ctx, url, _main_kml(entries), max_ratio=settings.zip_max_ratio, max_bytes=settings.kml_max_bytes,
        counter="kml",
    )  # fmt: skip


def _main_kml(entries: list[ZipEntry]) -> ZipEntry:
    """doc.kml at the root, else the first .kml member."""
    kmls = [entry for entry in entries if entry.name.lower().endswith(".kml")]
    if not kmls:
        raise NotKML("KMZ archive holds no .kml file")
    return next((entry for entry in kmls if entry.name.lower() == "doc.kml"), kmls[0])


def _container(root: etree._Element, ns: str) -> etree._Element:
    """The element holding the file's name and features: kml/Document, else kml/Folder, else kml itself."""
    for tag in ("Document", "Folder"):
        found = root.find(f"{{{ns}}}{tag}")
        if found is not None:
            return found
    return root


def _text(element: etree._Element, ns: str, tag: str) -> str | None:
    value = element.findtext(f"{{{ns}}}{tag}")
    return (value.strip() or None) if value else None


def _placemarks(element: etree._Element, ns: str) -> int:
    return sum(1 for _ in element.iter(f"{{{ns}}}Placemark"))


def _bbox(element: etree._Element, ns: str) -> BBox | None:
    lons, lats = [], []
    for lon, lat in _positions(element, ns):
        lons.append(lon)
        lats.append(lat)
    return (min(lons), min(lats), max(lons), max(lats)) if lons else None


def _positions(element: etree._Element, ns: str) -> Iterator[tuple[float, float]]:
    """(lon, lat) of every coordinate below ``element``; unparsable or out-of-range tuples are skipped."""
    coordinates = f"{{{ns}}}coordinates"
    for node in element.iter(coordinates, f"{{{GX}}}coord"):
        if not node.text:
            continue
        # <coordinates> holds "lon,lat[,alt]" tuples separated by whitespace; <gx:coord> holds one "lon lat alt"
        tuples = [t.split(",") for t in node.text.split()] if node.tag == coordinates else [node.text.split()]
        for values in tuples:
            try:
                lon, lat = float(values[0]), float(values[1])
            except (ValueError, IndexError):
                continue
            if -180.0 <= lon <= 180.0 and -90.0 <= lat <= 90.0:  # also drops NaN
                yield lon, lat
