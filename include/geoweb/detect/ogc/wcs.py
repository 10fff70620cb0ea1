"""Web Coverage Service 1.0-2.0: coverages (CoverageOfferingBrief, CoverageSummary)."""

from __future__ import annotations

from lxml import etree

from geoweb.detect.ogc.common import (
    Description,
    ServiceType,
    corner_bbox,
    envelope_bbox,
    keywords,
    ows_description,
    text,
    wgs84_bbox,
)
from geoweb.models import BBox, Dataset

WCS10_NS = "http://www.opengis.net/wcs"
WCS11_NS = "http://www.opengis.net/wcs/1.1"
WCS111_NS = "http://www.opengis.net/wcs/1.1.1"
WCS20_NS = "http://www.opengis.net/wcs/2.0"


def extract(root: etree._Element) -> Description:
    if etree.QName(root).localname == "WCS_Capabilities":
        return _extract_10(root)
    # 1.1 may nest summaries; a summary is a coverage when it has an identifier (1.1) or id (2.0).
    datasets = [
        Dataset(
            name=text(summary, "{*}Identifier") or text(summary, "{*}CoverageId"),
            title=text(summary, "{*}Title"),
            bbox=_summary_bbox(summary),
            keywords=keywords(summary),
        )
        for summary in root.iterfind("{*}Contents//{*}CoverageSummary")
    ]
    return ows_description(root, datasets)


def _summary_bbox(summary: etree._Element) -> BBox | None:
    # ows:WGS84BoundingBox is lon/lat; an ows:BoundingBox in EPSG:4326 is lat/lon.
    return wgs84_bbox(summary) or next(
        filter(None, (envelope_bbox(b) for b in summary.iterchildren("{*}BoundingBox"))), None
    )


def _extract_10(root: etree._Element) -> Description:
    service = root.find("{*}Service")
    datasets = [
        Dataset(
            name=text(brief, "{*}name"),
            title=text(brief, "{*}label"),
            bbox=_lon_lat_envelope(brief.find("{*}lonLatEnvelope")),
            keywords=keywords(brief),
        )
        for brief in root.iterfind("{*}ContentMetadata/{*}CoverageOfferingBrief")
    ]
    return Description(
        title=text(service, "{*}label"),
        abstract=text(service, "{*}description"),
        keywords=keywords(service),
        provider=text(service, "{*}responsibleParty/{*}organisationName"),
        datasets=datasets,
    )


def _lon_lat_envelope(envelope: etree._Element | None) -> BBox | None:
    """A WCS 1.0 lonLatEnvelope: two gml:pos, lon/lat by definition."""
    if envelope is None:
        return None
    positions = [p.text for p in envelope.iterchildren("{*}pos")]
    return corner_bbox(*positions, lat_first=False) if len(positions) == 2 else None


SERVICE = ServiceType(
    name="WCS",
    roots={
        (WCS10_NS, "WCS_Capabilities"): "1.0.0",
        (WCS11_NS, "Capabilities"): "1.1.0",
        (WCS111_NS, "Capabilities"): "1.1.1",
        (WCS20_NS, "Capabilities"): "2.0",
    },
    extract=extract,
)
