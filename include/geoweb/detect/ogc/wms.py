"""Web Map Service 1.0-1.3.0, read by OWSLib's WebMapService: named layers, nested ones included, with
their WGS84 boxes (OWSLib gives a layer without a box its parent's)."""

from __future__ import annotations

from lxml import etree
from owslib.wms import WebMapService

from geoweb.detect.ogc.common import (
    Description,
    Items,
    ServiceType,
    owslib_dataset,
    owslib_description,
    owslib_service,
)

WMS_NS = "http://www.opengis.net/wms"


def read(root: etree._Element, version: str | None) -> Description:
    # OWSLib has readers for 1.1.1 and 1.3.0; 1.0 and 1.1.0 documents have the 1.1.1 shape.
    reader = "1.3.0" if etree.QName(root).namespace == WMS_NS else "1.1.1"
    wms = owslib_service(WebMapService, reader, root)
    return owslib_description(wms, [owslib_dataset(name, layer) for name, layer in wms.contents.items()])


SERVICE = ServiceType(
    name="WMS",
    # 1.0 to 1.1.1 share the un-namespaced root; their version attribute tells them apart.
    roots={(None, "WMT_MS_Capabilities"): None, (WMS_NS, "WMS_Capabilities"): "1.3.0"},
    read=read,
    items=Items(paths=(".//{*}Layer",)),
)
