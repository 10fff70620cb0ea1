"""Web Coverage Service 1.0-2.0, read by OWSLib's WebCoverageService: coverages (CoverageOfferingBrief,
CoverageSummary) with their WGS84 boxes."""

from __future__ import annotations

from lxml import etree
from owslib.wcs import WebCoverageService

from geoweb.detect.ogc import adapter
from geoweb.detect.ogc.common import (
    OWSLIB_URL,
    Description,
    Items,
    ServiceType,
    owslib_dataset,
    owslib_description,
)

WCS10_NS = "http://www.opengis.net/wcs"
WCS11_NS = "http://www.opengis.net/wcs/1.1"
WCS111_NS = "http://www.opengis.net/wcs/1.1.1"
WCS20_NS = "http://www.opengis.net/wcs/2.0"

# OWSLib's reader for each root namespace (1.1.2 documents use the 1.1.1 namespace)
_READERS = {WCS10_NS: "1.0.0", WCS11_NS: "1.1.0", WCS111_NS: "1.1.1"}


def read(root: etree._Element, version: str | None) -> Description:
    namespace = etree.QName(root).namespace
    if namespace == WCS20_NS:
        reader = "2.0.1" if (version or "").startswith("2.0.1") else "2.0.0"
    else:
        reader = _READERS[namespace]
    body, reader = adapter.wcs_reading(root, reader)
    wcs = WebCoverageService(OWSLIB_URL, version=reader, xml=body)
    datasets = [owslib_dataset(name, coverage) for name, coverage in wcs.contents.items()]
    if namespace == WCS20_NS:
        for dataset, coverage in zip(datasets, wcs.contents.values(), strict=True):
            dataset.bbox = adapter.wcs20_bbox(coverage)
    return owslib_description(wcs, datasets)


SERVICE = ServiceType(
    name="WCS",
    roots={
        (WCS10_NS, "WCS_Capabilities"): "1.0.0",
        (WCS11_NS, "Capabilities"): "1.1.0",
        (WCS111_NS, "Capabilities"): "1.1.1",
        (WCS20_NS, "Capabilities"): "2.0",
    },
    read=read,
    items=Items(
        paths=(".//{*}CoverageOfferingBrief", ".//{*}CoverageSummary"),  # 1.0; 1.1 and 2.0
        name=("{*}name", "{*}Identifier", "{*}CoverageId"),
        title=("{*}label", "{*}Title"),
    ),
)
