"""Web Map Service 1.0-1.3.0: named layers, nested ones included, with inherited WGS84 boxes."""

from __future__ import annotations

from collections.abc import Iterator

from lxml import etree

from geoweb.detect.ogc.common import Description, ServiceType, attribute_bbox, keywords, listed_bbox, text
from geoweb.models import BBox, Dataset

WMS_NS = "http://www.opengis.net/wms"


def extract(root: etree._Element) -> Description:
    service = root.find("{*}Service")
    return Description(
        title=text(service, "{*}Title"),
        abstract=text(service, "{*}Abstract"),
        keywords=keywords(service),
        provider=text(service, "{*}ContactInformation/{*}ContactPersonPrimary/{*}ContactOrganization"),
        datasets=list(_named_layers(root.find("{*}Capability"), None)),
    )


def _named_layers(parent: etree._Element | None, inherited: BBox | None) -> Iterator[Dataset]:
    """Layers with a Name, depth first in document order; a layer without a box inherits its parent's."""
    if parent is None:
        return
    for layer in parent.iterchildren("{*}Layer"):
        bbox = _layer_bbox(layer) or inherited
        name = text(layer, "{*}Name")
        if name:
            yield Dataset(name=name, title=text(layer, "{*}Title"), bbox=bbox, keywords=keywords(layer))
        yield from _named_layers(layer, bbox)


def _layer_bbox(layer: etree._Element) -> BBox | None:
    box = layer.find("{*}EX_GeographicBoundingBox")  # 1.3.0
    if box is None:
        return attribute_bbox(layer.find("{*}LatLonBoundingBox"))  # 1.0-1.1.1
    return listed_bbox(text(box, f"{{*}}{side}") for side in _SIDES)


_SIDES = ("westBoundLongitude", "southBoundLatitude", "eastBoundLongitude", "northBoundLatitude")

SERVICE = ServiceType(
    name="WMS",
    # 1.0 to 1.1.1 share the un-namespaced root; their version attribute tells them apart.
    roots={(None, "WMT_MS_Capabilities"): None, (WMS_NS, "WMS_Capabilities"): "1.3.0"},
    extract=extract,
)
