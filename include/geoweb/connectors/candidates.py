"""What a data-portal dataset offers the crawl: its links that look like geospatial services or files
(candidates, validated later by the crawl's detectors) and its footprint; ``Portal`` is the base of the
portal connectors (data.gov, CKAN), which build their Records with ``dataset_record``.

A link is a candidate by what the portal says about it (its format, media type or protocol: ``WMS``,
``OGC:WFS``, ``application/vnd.google-earth.kml+xml``, ``Zipped Shapefile``...) or, when that says nothing,
by its URL (``service=WMS``, ``.../MapServer/WMSServer``, ``parks.kmz``, ``roads_shp.zip``). CSV, JSON, PDF
and other documents are never candidates, whatever their URL.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import shapely.geometry
from shapely.errors import ShapelyError

from geoweb.connectors.api import APIConnector
from geoweb.detect.ogc.common import checked_bbox, points_to_endpoint
from geoweb.models import OGC_TYPES, BBox, OnlineResource, Record

log = logging.getLogger("geoweb.connectors")

OGC = "OGC"  # an OGC endpoint whose service type the crawl's probing will tell

_SERVICE = re.compile(r"(?<![a-z])(wmts|wms|wfs|wcs|wps|sos|csw)(?![a-z])", re.I)
_SERVICE_NAMES = (
    (re.compile(r"web map tile service", re.I), "WMTS"),
    (re.compile(r"web map service", re.I), "WMS"),
    (re.compile(r"web feature service", re.I), "WFS"),
    (re.compile(r"web coverage service", re.I), "WCS"),
    (re.compile(r"web processing service", re.I), "WPS"),
    (re.compile(r"sensor observation service", re.I), "SOS"),
    (re.compile(r"catalog(?:ue)? service", re.I), "CSW"),
)
_KML = re.compile(r"(?<![a-z])km[lz](?![a-z])|google-earth", re.I)
_SHAPEFILE = re.compile(r"shape\s?file|(?<![a-z])shp(?![a-z])|esri-shape", re.I)
_ZIP = re.compile(r"(?<![a-z])zip(?![a-z])", re.I)
# a service named in the path: a segment (…/wms, /wfs/…, wms.cgi) or ArcGIS's …/MapServer/WMSServer
_PATH_SERVICE = re.compile(r"(?:^|/)(wmts|wms|wfs|wcs|wps|sos|csw)(?:[/._]|$)|(wmts|wms|wfs|wcs)server", re.I)
# formats that say "a document or a table": never a service or a file of ours, whatever the URL holds
_DOCUMENT = re.compile(r"(?<![a-z])(csv|tsv|json|pdf|xlsx?|docx?|rdf|txt|text/plain)(?![a-z])", re.I)
_DOCUMENT_EXTENSION = re.compile(r"\.(csv|tsv|json|pdf|xlsx?|docx?|rdf|txt)$", re.I)


def candidate_type(link: OnlineResource) -> str | None:
    """The kind of resource a link points to: an OGC service type, ``KML``, ``SHAPEFILE``, ``OGC`` (an OGC
    endpoint of a type yet unknown), or None when it is not a candidate."""
    if link.protocol:
        kind = _by_protocol(link.protocol, link)
        if kind or _DOCUMENT.search(link.protocol):
            return kind
    return _by_url(link.url, link.name or "")


def candidates(links: Iterable[OnlineResource]) -> dict[str, str]:
    """The candidate links' URLs with their kind (see ``candidate_type``), in order, each URL once."""
    found: dict[str, str] = {}
    for link in links:
        kind = candidate_type(link)
        if kind and link.url not in found:
            found[link.url] = kind
    return found


def _by_protocol(said: str, link: OnlineResource) -> str | None:
    for pattern, kind in _SERVICE_NAMES:
        if pattern.search(said):
            return kind
    if m := _SERVICE.search(said):
        return m.group(1).upper()
    if _KML.search(said):
        return "KML"
    if _SHAPEFILE.search(said) or (_ZIP.search(said) and _SHAPEFILE.search(f"{link.url} {link.name or ''}")):
        return "SHAPEFILE"
    return None


def _by_url(url: str, name: str) -> str | None:
    parts = urlsplit(url)
    path = parts.path.lower()
    if _DOCUMENT_EXTENSION.search(path):
        return None
    if path.endswith((".kml", ".kmz")):
        return "KML"
    if path.endswith(".zip") and _SHAPEFILE.search(f"{path} {name}"):
        return "SHAPEFILE"
    query = {k.strip().lower(): v.strip().upper() for k, v in parse_qsl(parts.query)}
    if query.get("service") in OGC_TYPES:
        return query["service"]
    if m := _PATH_SERVICE.search(parts.path):
        return (m.group(1) or m.group(2)).upper()
    return OGC if points_to_endpoint(url) else None


def footprint(value: Any) -> BBox | None:
    """The WGS84 box of a dataset's spatial value: a GeoJSON geometry (an object or its text) or
    ``"west,south,east,north"``; None when it is absent or unreadable (a place name, broken GeoJSON)."""
    if isinstance(value, str):
        text = value.strip()
        if not text.startswith("{"):
            numbers = text.replace(",", " ").split()
            try:
                return checked_bbox(*map(float, numbers)) if len(numbers) == 4 else None
            except ValueError:
                return None
        try:
            value = json.loads(text)
        except ValueError:
            return None
    if not isinstance(value, dict):
        return None
    try:
        geometry = shapely.geometry.shape(value)
    except (ShapelyError, AttributeError, IndexError, KeyError, TypeError, ValueError):
        return None
    return None if geometry.is_empty else checked_bbox(*geometry.bounds)


class Portal(APIConnector):
    """A data portal searched by keyword: each dataset is a Record whose candidate links (``extra["candidates"]``,
    URL -> kind) go to the crawl at level 0, with the dataset's page as their source page."""

    def seeds(self, record: Record) -> list[tuple[str, str | None]]:
        """(url, source page) of what a record gives the crawl: its candidate links."""
        return [(url, record.extra.get("landing_page")) for url in record.extra.get("candidates", {})]

    def dataset_record(
        self,
        *,
        identifier: str,
        spatial: Any,
        modified: Any,
        links: list[OnlineResource],
        extra: dict[str, Any],
        **fields: Any,
    ) -> Record:
        """A dataset as a Record: its footprint read from ``spatial``, its date from ``modified`` (ISO 8601; UTC
        when it names no zone), its candidates picked from ``links``."""
        bbox = footprint(spatial)
        if spatial and bbox is None:
            log.warning(
                "%s: dataset %s: spatial value not a readable footprint: %.200r",
                self.source,
                identifier,
                spatial,
            )
        return Record(
            source=self.source,
            identifier=identifier,
            bbox=bbox,
            modified=_when(modified),
            links=links,
            extra={**extra, "candidates": candidates(links)},
            **fields,
        )


def _when(value: Any) -> datetime | None:
    try:
        when = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:  # DCAT allows intervals such as R/P1D, which are no date
        return None
    return when.replace(tzinfo=UTC) if when is not None and when.tzinfo is None else when
