"""KML and KMZ files, confirmed by content: a ``kml`` root in a KML namespace, plain or zipped (KMZ).

A URL ending in .kml proves nothing (a soft-404 HTML page is not a KML file), and a KML file may come from a
URL without the extension (``download?id=5`` with ``Content-Disposition: filename="parks.kmz"``).

A KMZ too large to download (photos and overlays make them large) is read in parts with HTTP Range
requests: its central directory, then its main KML alone.

Datasets: one per top-level Folder of the document, or the document itself when it has no Folder. The bbox is
the WGS84 extent of every coordinate in Point, LineString, LinearRing and gx:Track geometries.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from lxml import etree

from geoweb.detect.base import DetectContext, Detector
from geoweb.detect.rangezip import HEAD_BYTES, read_member, remote_directory
from geoweb.errors import GeowebError, HTTPStatusError, MalformedContent, UnsafeContent
from geoweb.fetch.response import Response
from geoweb.links.normalize import normalize_url
from geoweb.models import BBox, Dataset, Resource, sha256
from geoweb.settings import Settings
from geoweb.values import ABSTRACT_CHARS, one_line, stripped
from geoweb.xmlsafe import strip_bom
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
FEED_BYTES = 1024 * 1024


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
        cap = ctx.settings.kml_max_bytes
        try:
            if not 200 <= response.status < 300:
                raise HTTPStatusError(response.status, url=response.final_url)
            if response.complete:
                fmt, document = kml_document(response.body, ctx.settings)
                resource = kml_resource(response, fmt, read_kml(document, max_bytes=cap))
            elif _names_kmz(response):  # too large to download: only its main KML is read
                document = await kmz_document_by_range(response.final_url, ctx)
                resource = kml_resource(response, "kmz", read_kml(document, max_bytes=cap))
            else:
                resource = await kml_streamed(response, ctx)
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


def kml_document(body: bytes, settings: Settings) -> tuple[str, Iterable[bytes]]:
    """The format ("kml" or "kmz") of a whole file and its KML document, in chunks."""
    if body.startswith(ZIP_MAGIC):
        return "kmz", kmz_document(body, settings)
    return "kml", [body]


async def kml_streamed(response: Response, ctx: DetectContext) -> Resource:
    """The resource of a plain KML file over the body cap, fetched again up to ``kml_max_bytes`` and read as
    it downloads (the fetch's sink is a ``KMLReader``): the file is never held, and a server ignoring Range
    is no obstacle.

    A cut body whose first bytes open no ``kml`` root is not fetched again; one the crawl did not read (its
    declared length over the cap) ends at its first chunk when its root is no ``kml`` (an HTML page at
    ``x.kml``): the reader refuses it from its start tag.
    """
    if response.body and not _KML_ROOT.search(response.body, 0, HEAD_BYTES):
        raise NotKML(
            f"no kml root in the first {min(len(response.body), HEAD_BYTES)} bytes of a file over the body cap"
        )
    cap = ctx.settings.kml_max_bytes
    ctx.stats["kml/large_files"] += 1
    reader = KMLReader(cap)
    whole = await ctx.fetch(response.final_url, max_bytes=cap, sink=reader)
    if not 200 <= whole.status < 300:
        raise HTTPStatusError(whole.status, url=whole.final_url)
    if not whole.complete:
        raise UnsafeContent(f"KML file over the {cap}-byte KML cap (kml_max_bytes)")
    return kml_resource(whole, "kml", reader.close(), reader.digest)


def kml_resource(response: Response, fmt: str, summary: KMLSummary, digest: str | None = None) -> Resource:
    """The KML resource of ``summary`` (the file read, or a KMZ's main KML); ``digest`` is the file's
    SHA-256 when its body was streamed rather than kept (none for a KMZ read in parts: a hash of the part
    the crawl read would name every such file alike)."""
    return Resource(
        url=normalize_url(response.final_url) or response.final_url,
        type="KML",
        version=summary.version,
        title=summary.title,
        abstract=summary.abstract,
        datasets=[
            Dataset(name=part.name, bbox=part.extent.bbox(), extra={"placemarks": part.placemarks})
            for part in summary.parts
        ],
        bbox=summary.whole.extent.bbox(),
        extra={"placemarks": summary.whole.placemarks, "format": fmt},
        content_sha256=digest or (sha256(response.body) if response.complete else None),
    )


class _Extent:
    """The running WGS84 extent of the coordinates seen: four numbers, whatever the count."""

    __slots__ = ("east", "north", "south", "west")

    def __init__(self):
        self.west = self.south = float("inf")
        self.east = self.north = float("-inf")

    def add(self, lon: float, lat: float) -> None:
        self.west, self.east = min(self.west, lon), max(self.east, lon)
        self.south, self.north = min(self.south, lat), max(self.north, lat)

    def bbox(self) -> BBox | None:
        return (self.west, self.south, self.east, self.north) if self.west <= self.east else None


@dataclass
class _Part:
    """A dataset being read: a top-level Folder, or the whole document."""

    name: str | None = None
    placemarks: int = 0
    extent: _Extent = field(default_factory=_Extent)


@dataclass
class KMLSummary:
    version: str | None
    title: str | None
    abstract: str | None
    whole: _Part
    parts: list[_Part]  # the container's Folders, or [whole] when it has none


def read_kml(document: Iterable[bytes], *, max_bytes: int) -> KMLSummary:
    """The summary of a KML document given in chunks (``KMLReader`` fed each)."""
    reader = KMLReader(max_bytes)
    for chunk in document:
        reader.feed(chunk)
    return reader.close()


class KMLReader:
    """Reads a KML document fed chunk by chunk (``feed``, then ``close``) in one streamed pass of a pull
    parser, dropping each element once it is read.

    Memory stays a chunk and a few counters whatever the document holds (a KMZ's 50 MB doc.kml with a
    million placemarks is decompressed and parsed a megabyte at a time; a plain KML over the body cap is fed
    as it downloads, never kept), and the root is checked at its start tag, before anything else is read. A
    ``kml`` root without a namespace (older exporters write it so) is KML of unknown version. The container
    is kml/Document, else kml/Folder, else kml itself; its Folders are the datasets. Its title is its name,
    else the name of its first Folder or Placemark that has one (GDAL names only its layers' Folders); its
    abstract its description, else its Snippet.

    As a fetch's sink (``Fetcher.get(sink=...)``), ``reset`` starts the document again for each attempt.
    """

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.reset()

    def reset(self) -> None:
        self._parser = etree.XMLPullParser(
            events=("start", "end"), resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False
        )
        self._hash = hashlib.sha256()
        self.fed = 0
        self._depth = -1  # of the element the event is about; the root is 0
        self._version: str | None = None
        self._container = False  # inside kml/Document or kml/Folder
        self._has_container = False
        self._part: _Part | None = None  # the container's Folder being read
        self._whole, self._parts = _Part(), []
        self._texts: dict[tuple[int, str], str] = {}  # (depth, name) of the root's and the container's texts
        self._first_name: str | None = None  # of the container's first named Folder or Placemark

    @property
    def digest(self) -> str:
        """The SHA-256 of the bytes fed, as they came."""
        return self._hash.hexdigest()

    def feed(self, chunk: bytes | memoryview) -> None:
        self._hash.update(chunk)  # the file's own bytes, a byte-order mark included
        if self.fed == 0:
            chunk = strip_bom(bytes(chunk[:4096])) + bytes(chunk[4096:])
        view = memoryview(chunk)
        # fed a megabyte at a time: libxml2's push parser refuses a larger buffer without huge_tree
        for start in range(0, len(view), FEED_BYTES):
            piece = bytes(view[start : start + FEED_BYTES])
            self.fed += len(piece)
            if self.fed > self.max_bytes:
                raise UnsafeContent(f"KML document over the {self.max_bytes}-byte cap")
            self._read(lambda piece=piece: self._parser.feed(piece))

    def close(self) -> KMLSummary:
        """The summary of the whole document; raises a GeowebError saying why it is not KML."""
        if self.fed == 0:
            raise MalformedContent("not well-formed XML: empty document")
        self._read(self._parser.close)
        level = 2 if self._has_container else 1
        title = one_line(self._texts.get((level, "name"))) or self._first_name
        abstract = stripped(self._texts.get((level, "description")) or self._texts.get((level, "Snippet")),
                            ABSTRACT_CHARS)  # fmt: skip
        if not self._parts:
            self._whole.name = title
        return KMLSummary(self._version, title, abstract, self._whole, self._parts or [self._whole])

    def _read(self, step) -> None:
        """Run a parser step and read the events it produced."""
        try:
            step()
            for event, element in self._parser.read_events():
                self._event(event, element)
        except etree.XMLSyntaxError as exc:
            if exc.code == etree.ErrorTypes.ERR_RESOURCE_LIMIT:
                raise UnsafeContent(f"XML document exceeds parser limits: {exc}") from None
            raise MalformedContent(f"not well-formed XML: {exc}") from None

    def _event(self, event: str, element: etree._Element) -> None:
        tag = etree.QName(element).localname
        if event == "start":
            self._depth += 1
            depth = self._depth
            if depth == 0:
                self._version = _root_version(element)
            elif depth == 1 and not self._has_container and tag in ("Document", "Folder"):
                self._container = self._has_container = True
            elif depth == 2 and self._container and tag == "Folder":
                self._part = _Part()
                self._parts.append(self._part)
            return
        depth, part = self._depth, self._part
        if tag == "Placemark":
            self._whole.placemarks += 1
            if part is not None:
                part.placemarks += 1
        elif tag in ("coordinates", "coord") and element.text:
            for lon, lat in _positions(element.text, tag):
                self._whole.extent.add(lon, lat)
                if part is not None:
                    part.extent.add(lon, lat)
        elif tag in ("name", "description", "Snippet"):
            if element.text is not None:
                self._text(depth, tag, element)
        elif depth == 2 and tag == "Folder":
            self._part = None
        elif depth == 1 and self._container:
            self._container = False
        self._depth -= 1
        element.clear()  # read: its text and children are not needed again
        while element.getprevious() is not None:
            del element.getparent()[0]

    def _text(self, depth: int, tag: str, element: etree._Element) -> None:
        """Keep the container's texts, its Folders' names and the name of its first named Folder or
        Placemark."""
        if depth == 1 or (depth == 2 and self._container):
            self._texts[(depth, tag)] = element.text
            return
        top = depth == 3 if self._container else depth == 2 and not self._has_container
        if tag != "name" or not top:
            return
        name = one_line(element.text)
        if self._part is not None:  # the name of the container's Folder being read
            self._part.name = name
        if self._first_name is None and etree.QName(element.getparent()).localname in ("Folder", "Placemark"):
            self._first_name = name


def _root_version(root: etree._Element) -> str | None:
    """The KML version of the root element's namespace; raises NotKML for any other root."""
    docinfo = root.getroottree().docinfo.internalDTD
    if docinfo is not None and any(True for _ in docinfo.iterentities()):
        names = ", ".join(entity.name for entity in docinfo.iterentities())
        raise UnsafeContent(f"DOCTYPE declares entities ({names}); rejected unexpanded")
    qname = etree.QName(root)
    if qname.localname != "kml":
        raise NotKML(f"root element is {qname.localname!r}, not kml")
    if qname.namespace is None:
        return None
    if qname.namespace not in KML_NAMESPACES:
        raise NotKML(f"kml root in namespace {qname.namespace!r}, not a KML namespace")
    return KML_NAMESPACES[qname.namespace]


def kmz_document(body: bytes, settings: Settings) -> Iterable[bytes]:
    """The main KML of a KMZ held whole in ``body``, decompressed as it is read: never held whole."""
    reader = ZipReader(body, max_ratio=settings.zip_max_ratio, max_bytes=settings.kml_max_bytes)
    return reader.stream(_main_kml(reader.entries))


async def kmz_document_by_range(url: str, ctx: DetectContext) -> Iterable[bytes]:
    """The main KML of a KMZ too large to download: its directory, then that member, read by Range and
    decompressed as it is read."""
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


def _positions(text: str, tag: str) -> Iterator[tuple[float, float]]:
    """(lon, lat) of every coordinate in a ``coordinates`` or ``gx:coord`` text; unparsable or out-of-range
    tuples are skipped."""
    # <coordinates> holds "lon,lat[,alt]" tuples separated by whitespace; <gx:coord> holds one "lon lat alt"
    tuples = (t.split(",") for t in text.split()) if tag == "coordinates" else [text.split()]
    for values in tuples:
        try:
            lon, lat = float(values[0]), float(values[1])
        except (ValueError, IndexError):
            continue
        if -180.0 <= lon <= 180.0 and -90.0 <= lat <= 90.0:  # also drops NaN
            yield lon, lat
