"""What every OGC service module shares: the service declaration, null-safe readings of OWSLib's objects,
WGS84 boxes, OGC exception reports and endpoint URLs.

OWSLib's objects hold None, blanks or other types where a document lacks a part; every helper here returns
None or an empty list for those and never raises.
"""

from __future__ import annotations

import math
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote_plus, urlsplit, urlunsplit

from lxml import etree
from owslib import ows

from geoweb.detect.base import DetectContext
from geoweb.errors import GeowebError
from geoweb.models import BBox, Dataset, Resource
from geoweb.values import stripped, words

# (namespace or None, local name) of a capabilities root element.
Root = tuple[str | None, str]


class NotCapabilities(GeowebError):
    """Raised by ``read_capabilities`` for well-formed XML that is no capabilities document we know."""

    reason = "not_capabilities"
    user_msg = "The document is not an OGC capabilities document"


class OGCExceptionReport(NotCapabilities):
    """Raised for an OGC exception report: no service document, but proof that an OGC endpoint answered."""

    reason = "ogc_exception"
    user_msg = "The server answered with an OGC exception report"


class InvalidCapabilities(GeowebError):
    """Raised for a capabilities document its OWSLib reader cannot read: not a valid service. The message is
    OWSLib's reason."""

    reason = "invalid_capabilities"
    user_msg = "The capabilities document cannot be read as a valid service"


# OWSLib's readers want an endpoint; given the document's bytes, they never request it.
OWSLIB_URL = "http://capabilities.invalid/ows"


@dataclass(slots=True)
class Description:
    """What a capabilities document says about its service, before it becomes a ``Resource``."""

    title: str | None = None
    abstract: str | None = None
    keywords: list[str] = field(default_factory=list)
    provider: str | None = None
    datasets: list[Dataset] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)  # the resource's: what its operations need


@dataclass(frozen=True, slots=True)
class Items:
    """Where a tolerant reading (``lenient``) finds a service's datasets: the paths of their elements, and
    the child paths (or ``@attribute``) of their names and titles, the first that has text winning; in any
    namespace, as sloppy documents have them."""

    paths: tuple[str, ...]
    name: tuple[str, ...] = ("{*}Name",)
    title: tuple[str, ...] = ("{*}Title",)


@dataclass(frozen=True, slots=True)
class ServiceType:
    """One OGC service type: its capabilities roots, each with the version its namespace implies (None when
    the namespace is shared by several versions), the reader that validates a document of a version and
    describes it (OWSLib's, through ``adapter`` where OWSLib errs or has none), where a tolerant reading finds
    its datasets when OWSLib cannot read it, and an optional follow-up that completes a detected resource
    with one more request."""

    name: str
    roots: Mapping[Root, str | None]
    read: Callable[[etree._Element, str | None], Description]
    items: Items = Items(paths=())
    complete: Callable[[Resource, DetectContext], Awaitable[None]] | None = None


# --- OWSLib's objects ------------------------------------------------------------------------------------


def owslib_bytes(root: etree._Element) -> bytes:
    """The hardened tree as bytes for an OWSLib reader: re-serialised, so no DOCTYPE reaches OWSLib's own
    parser, and the byte-order marks and stray whitespace real servers send are gone."""
    return etree.tostring(root, encoding="UTF-8")


def owslib_service(factory: Callable[..., object], version: str, root: etree._Element) -> object:
    """OWSLib's service object (``WebMapService``...) of ``version`` for the hardened tree."""
    return factory(OWSLIB_URL, version=version, xml=owslib_bytes(root))


def owslib_description(service: object, datasets: list[Dataset]) -> Description:
    """Service metadata from an OWSLib service object (``identification`` and ``provider``)."""
    ident = getattr(service, "identification", None)
    provider = getattr(service, "provider", None)
    return Description(
        title=stripped(getattr(ident, "title", None)),
        abstract=stripped(getattr(ident, "abstract", None)),
        keywords=words(getattr(ident, "keywords", None)),
        provider=stripped(getattr(provider, "name", None)),
        datasets=datasets,
    )


def owslib_dataset(name: str, content: object, **extra) -> Dataset:
    """A dataset from one of an OWSLib service's ``contents`` (layer, feature type, coverage), its WGS84 box
    checked."""
    box = getattr(content, "boundingBoxWGS84", None)
    return Dataset(
        name=stripped(name),
        title=stripped(getattr(content, "title", None)),
        bbox=listed_bbox(box[:4]) if box else None,
        keywords=words(getattr(content, "keywords", None)),
        extra=extra,
    )


def unique_by_name(datasets: Iterable[Dataset]) -> list[Dataset]:
    """Named datasets, the first of each name kept in document order (servers repeat layers)."""
    seen: dict[str, Dataset] = {}
    for dataset in datasets:
        if dataset.name and dataset.name not in seen:
            seen[dataset.name] = dataset
    return list(seen.values())


# --- WGS84 boxes -----------------------------------------------------------------------------------------


def checked_bbox(minx: float, miny: float, maxx: float, maxy: float) -> BBox | None:
    """The box if it is a finite, ordered lon/lat box inside the world; None otherwise."""
    box = (minx, miny, maxx, maxy)
    if not all(math.isfinite(v) for v in box):
        return None
    if not (-180 <= minx <= maxx <= 180 and -90 <= miny <= maxy <= 90):
        return None
    return box


def _numbers(value: str | None, count: int) -> list[float] | None:
    try:
        numbers = [float(v) for v in (value or "").split()]
    except ValueError:
        return None
    return numbers if len(numbers) == count else None


def listed_bbox(values: Iterable[object]) -> BBox | None:
    """A lon/lat box from its four numbers (or their texts), west, south, east, north."""
    numbers = _numbers(" ".join("" if v is None else str(v) for v in values), 4)
    return checked_bbox(*numbers) if numbers else None


def wgs84_box(box: ows.BoundingBox | None) -> BBox | None:
    """An OWSLib bounding box (axes already in x/y order) as a WGS84 box; None in a CRS that is not WGS84."""
    if box is None:
        return None
    if not isinstance(box, ows.WGS84BoundingBox) and lat_first(getattr(box.crs, "id", None)) is None:
        return None
    return listed_bbox((box.minx, box.miny, box.maxx, box.maxy))


def corner_bbox(lower: str | None, upper: str | None, *, lat_first: bool) -> BBox | None:
    """A box from two corner positions (``"x y"``); ``lat_first`` when the CRS orders latitude first."""
    low, up = _numbers(lower, 2), _numbers(upper, 2)
    if low is None or up is None:
        return None
    if lat_first:
        return checked_bbox(low[1], low[0], up[1], up[0])
    return checked_bbox(low[0], low[1], up[0], up[1])


# EPSG:4326 in any spelling orders latitude first (OGC 06-135r7 and later); CRS84 is its lon/lat twin.
_EPSG_4326 = re.compile(r"(?:EPSG:+(?:[\d.]*:)?|EPSG/[\d.]+/)4326$", re.I)
_CRS84 = re.compile(r"CRS:?84$", re.I)


def lat_first(crs: str | None) -> bool | None:
    """True for EPSG:4326 (lat/lon), False for CRS84 (lon/lat), None for any other CRS (not WGS84)."""
    crs = (crs or "").strip()
    if _EPSG_4326.search(crs):
        return True
    if _CRS84.search(crs):
        return False
    return None


# --- exception reports -----------------------------------------------------------------------------------

EXCEPTION_ROOTS = ("ServiceExceptionReport", "ExceptionReport")


def exception_report(root: etree._Element) -> OGCExceptionReport | None:
    """The error an OGC exception report (WMS ServiceExceptionReport, ows:ExceptionReport) stands for."""
    qname = etree.QName(root)
    ns = qname.namespace or ""
    if qname.localname not in EXCEPTION_ROOTS or not (ns == "" or ns.startswith("http://www.opengis.net/")):
        return None
    first = next(root.iter("{*}ServiceException", "{*}Exception"), None)
    if first is None:
        return OGCExceptionReport("OGC exception report without an exception")
    # WMS: ServiceException code="..." with the text inside; OWS: Exception exceptionCode="..." around
    # ExceptionText elements.
    code = first.get("code") or first.get("exceptionCode") or "no code"
    message = " ".join(" ".join(first.itertext()).split())[:200] or "no text"
    return OGCExceptionReport(f"OGC exception report ({code}): {message}")


# --- endpoints -------------------------------------------------------------------------------------------

# Query keys that only shape a GetCapabilities request; the endpoint is the URL without them.
CAPABILITIES_KEYS = frozenset(
    ("service", "request", "version", "acceptversions", "sections", "updatesequence", "acceptformats")
)

# Paths of typical OGC endpoints: a segment named after a service (…/wms, /ows/…, wms.cgi), MapServer and
# QGIS Server (mapserv, qgis_mapserv.fcgi), ArcGIS (…/MapServer/WMSServer, …/ImageServer/WCSServer),
# GeoServer, deegree, pycsw, GeoNetwork's CSW and 52°North SOS.
# "mapserv" is MapServer's CGI; ArcGIS REST's ".../MapServer" is no OGC endpoint (its ".../WMSServer" is)
ENDPOINT_PATH = re.compile(
    r"(?:^|/)(?:wms|wfs|wcs|wmts|wps|sos|csw|ows)(?:[/._]|$)"
    r"|mapserv(?![a-z])|(?:wms|wfs|wcs|wmts)server|/geoserver/|/deegree|/pycsw|/52n-sos|/geonetwork/srv/.+/csw",
    re.I,
)


def _query_key(pair: str) -> str:
    return unquote_plus(pair.partition("=")[0]).strip().lower()


def points_to_endpoint(url: str) -> bool:
    """Whether a URL names an OGC endpoint: a ``service=`` or ``request=`` parameter, or a typical path."""
    parts = urlsplit(url)
    if any(_query_key(pair) in ("service", "request") for pair in parts.query.split("&")):
        return True
    return bool(ENDPOINT_PATH.search(parts.path))


def canonical_endpoint(url: str) -> str:
    """The endpoint a request URL addresses: GetCapabilities-only parameters removed (any case), the others
    (such as MapServer's ``map=``) kept as written and in order; no fragment; lower-case scheme and host."""
    parts = urlsplit(url.strip())
    kept = [pair for pair in parts.query.split("&") if pair and _query_key(pair) not in CAPABILITIES_KEYS]
    userinfo, at, host = parts.netloc.rpartition("@")
    return urlunsplit((parts.scheme.lower(), userinfo + at + host.lower(), parts.path, "&".join(kept), ""))


def with_query(endpoint: str, query: str) -> str:
    """``endpoint`` with ``query`` appended to its own parameters."""
    return f"{endpoint}{'&' if urlsplit(endpoint).query else '?'}{query}"


def capabilities_url(endpoint: str, service: str) -> str:
    """The KVP GetCapabilities request for ``service`` at ``endpoint``."""
    return with_query(endpoint, f"service={service}&request=GetCapabilities")
