"""Web Processing Service 1.0 and 2.0: processes."""

from __future__ import annotations

from lxml import etree

from geoweb.detect.ogc.common import Description, ServiceType, keywords, ows_description, text
from geoweb.models import Dataset

WPS10_NS = "http://www.opengis.net/wps/1.0.0"
WPS20_NS = "http://www.opengis.net/wps/2.0"


def extract(root: etree._Element) -> Description:
    processes = root.iterfind("{*}ProcessOfferings/{*}Process")  # 1.0
    summaries = root.iterfind("{*}Contents/{*}ProcessSummary")  # 2.0
    datasets = [
        Dataset(name=text(p, "{*}Identifier"), title=text(p, "{*}Title"), keywords=keywords(p))
        for group in (processes, summaries)
        for p in group
    ]
    return ows_description(root, datasets)


SERVICE = ServiceType(
    name="WPS",
    roots={(WPS10_NS, "Capabilities"): "1.0.0", (WPS20_NS, "Capabilities"): "2.0.0"},
    extract=extract,
)
