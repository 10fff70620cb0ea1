"""Web Feature Service 1.0-2.0: feature types."""

from __future__ import annotations

from lxml import etree

from geoweb.detect.ogc.common import (
    Description,
    ServiceType,
    attribute_bbox,
    keywords,
    ows_description,
    text,
    wgs84_bbox,
)
from geoweb.models import Dataset

WFS_NS = "http://www.opengis.net/wfs"
WFS2_NS = "http://www.opengis.net/wfs/2.0"


def extract(root: etree._Element) -> Description:
    datasets = [
        Dataset(
            name=text(ft, "{*}Name"),
            title=text(ft, "{*}Title"),
            # 1.1 and 2.0 give ows:WGS84BoundingBox, 1.0 a LatLongBoundingBox.
            bbox=wgs84_bbox(ft) or attribute_bbox(ft.find("{*}LatLongBoundingBox")),
            keywords=keywords(ft),
        )
        for ft in root.iterfind("{*}FeatureTypeList/{*}FeatureType")
    ]
    if root.find("{*}ServiceIdentification") is not None:  # 1.1, 2.0
        return ows_description(root, datasets)
    service = root.find("{*}Service")  # 1.0
    return Description(
        title=text(service, "{*}Title"),
        abstract=text(service, "{*}Abstract"),
        keywords=keywords(service),
        datasets=datasets,
    )


SERVICE = ServiceType(
    name="WFS",
    # 1.0.0 and 1.1.0 share a namespace; their version attribute tells them apart.
    roots={(WFS_NS, "WFS_Capabilities"): None, (WFS2_NS, "WFS_Capabilities"): "2.0.0"},
    extract=extract,
)
