"""What every OGC service module shares: the service declaration, forgiving XML readers, WGS84 boxes,
OGC exception reports and endpoint URLs.

Readers match elements as ``{*}Name``: classification already checked the root namespace, and real servers
mix namespace versions inside a document (an OWS 1.0 block in a WCS 1.1 document), so below the root the
local name decides. Every reader returns None or an empty list for missing or broken parts; none raises.
"""

from __future__ import annotations

import math
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote_plus, urlsplit, urlunsplit

from lxml import etree

from geoweb.detect.base import DetectContext
from geoweb.errors import GeowebError
from geoweb.models import BBox, Dataset, Resource, union_bbox

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


@dataclass(slots=True)
class Description:
    """What a capabilities document says about its service, before it becomes a ``Resource``."""

    title: str | None = None
    abstract: str | None = None
    keywords: list[str] = field(default_factory=list)
    provider: str | None = None
    datasets: list[Dataset] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ServiceType:
    """One OGC service type: its capabilities roots, each with the version its namespace implies (None when
    the namespace is shared by several versions), its metadata extractor, and an optional follow-up that
    completes a detected resource with one more request."""

    name: str
    roots: Mapping[Root, str | None]
    extract: Callable[[etree._Element], Description]
    complete: Callable[[Resource, DetectContext], Awaitable[None]] | None = None


# --- element readers -------------------------------------------------------------------------------------


def text(elem: etree._Element | None, path: str) -> str | None:
    """The stripped text at ``path`` under ``elem``; None when missing or blank."""
    if elem is None:
        return None
    node = elem.find(path)
    if node is None or node.text is None:
        return None
    return node.text.strip() or None


def find_first(elem: etree._Element, *paths: str) -> etree._Element | None:
    """The element at the first of ``paths`` that has one."""
    for path in paths:
        node = elem.find(path)
        if node is not None:
            return node
    return None


def keywords(elem: etree._Element | None) -> list[str]:
    """Keywords of a section or dataset, without repeats: ``KeywordList/Keyword`` (WMS),
    ``Keywords/Keyword`` (OWS), ``keywords/keyword`` (WCS 1.0), or a ``Keywords`` text (WMS 1.0, WFS 1.0)."""
    if elem is None:
        return []
    words: dict[str, None] = {}
    for group in elem.iterchildren("{*}KeywordList", "{*}Keywords", "{*}keywords"):
        items = [k.text for k in group.iterchildren("{*}Keyword", "{*}keyword")]
        if not items and group.text:
            items = re.split(r"[,;]" if re.search(r"[,;]", group.text) else r"\s+", group.text)
        words.update((w.strip(), None) for w in items if w and w.strip())
    return list(words)


def ows_description(root: etree._Element, datasets: list[Dataset]) -> Description:
    """Service metadata of an OWS Common document (ServiceIdentification, ServiceProvider)."""
    ident = root.find("{*}ServiceIdentification")
    return Description(
        title=text(ident, "{*}Title"),
        abstract=text(ident, "{*}Abstract"),
        keywords=keywords(ident),
        provider=text(root, "{*}ServiceProvider/{*}ProviderName"),
        datasets=datasets,
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


def listed_bbox(values: Iterable[str | None]) -> BBox | None:
    """A lon/lat box from its four numbers, west, south, east, north, as text."""
    numbers = _numbers(" ".join(v or "" for v in values), 4)
    return checked_bbox(*numbers) if numbers else None


def attribute_bbox(elem: etree._Element | None) -> BBox | None:
    """A box in ``minx miny maxx maxy`` attributes, lon/lat (WMS 1.1 LatLonBoundingBox, WFS 1.0
    LatLongBoundingBox)."""
    if elem is None:
        return None
    return listed_bbox(elem.get(k) for k in ("minx", "miny", "maxx", "maxy"))


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


def wgs84_bbox(elem: etree._Element) -> BBox | None:
    """The union of a dataset's ``ows:WGS84BoundingBox`` children (always lon/lat)."""
    boxes = [
        corner_bbox(text(b, "{*}LowerCorner"), text(b, "{*}UpperCorner"), lat_first=False)
        for b in elem.iterchildren("{*}WGS84BoundingBox")
    ]
    return union_bbox(boxes)


def envelope_bbox(envelope: etree._Element | None) -> BBox | None:
    """A ``gml:Envelope`` or ``ows:BoundingBox`` in a WGS84 CRS (``srsName`` or ``crs``); None in others."""
    if envelope is None:
        return None
    order = lat_first(envelope.get("srsName") or envelope.get("crs"))
    if order is None:
        return None
    return corner_bbox(
        text(envelope, "{*}lowerCorner") or text(envelope, "{*}LowerCorner"),
        text(envelope, "{*}upperCorner") or text(envelope, "{*}UpperCorner"),
        lat_first=order,
    )


# --- exception reports -----------------------------------------------------------------------------------

_EXCEPTION_ROOTS = ("ServiceExceptionReport", "ExceptionReport")


def exception_report(root: etree._Element) -> OGCExceptionReport | None:
    """The error an OGC exception report (WMS ServiceExceptionReport, ows:ExceptionReport) stands for."""
    qname = etree.QName(root)
    ns = qname.namespace or ""
    if qname.localname not in _EXCEPTION_ROOTS or not (ns == "" or ns.startswith("http://www.opengis.net/")):
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
