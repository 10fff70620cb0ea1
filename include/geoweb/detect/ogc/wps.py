"""Web Processing Service 1.0 and 2.0: processes. OWSLib's WebProcessingService reads 1.0 (in the final
namespace and the pre-1.0 one real servers still send); OWSLib has no 2.0 reader, ``adapter`` has one."""

from __future__ import annotations

from lxml import etree
from owslib.wps import WebProcessingService

from geoweb.detect.ogc import adapter
from geoweb.detect.ogc.common import (
    OWSLIB_URL,
    Description,
    Items,
    ServiceType,
    owslib_bytes,
    owslib_description,
)
from geoweb.models import Dataset
from geoweb.values import stripped

WPS10_NS = "http://www.opengis.net/wps/1.0.0"
WPS_LEGACY_NS = "http://www.opengeospatial.net/wps"  # drafts before 1.0.0; OWSLib reads them as 1.0.0
WPS20_NS = "http://www.opengis.net/wps/2.0"


def read(root: etree._Element, version: str | None) -> Description:
    if etree.QName(root).namespace == WPS20_NS:
        return adapter.wps20_description(root)
    wps = WebProcessingService(OWSLIB_URL, version="1.0.0", skip_caps=True)
    wps.getcapabilities(xml=owslib_bytes(root))
    processes = [Dataset(name=stripped(p.identifier), title=stripped(p.title)) for p in wps.processes]
    return owslib_description(wps, processes)


SERVICE = ServiceType(
    name="WPS",
    roots={
        (WPS10_NS, "Capabilities"): "1.0.0",
        (WPS_LEGACY_NS, "Capabilities"): None,  # 0.4 or 1.0: its version attribute says
        (WPS20_NS, "Capabilities"): "2.0.0",
    },
    read=read,
    items=Items(
        paths=(".//{*}ProcessOfferings/{*}Process", "{*}Contents/{*}ProcessSummary"), name=("{*}Identifier",)
    ),
)
