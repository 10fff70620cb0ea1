"""Web Map Tile Service 1.0: layers, with the tile matrix sets each one links to."""

from __future__ import annotations

from lxml import etree

from geoweb.detect.ogc.common import Description, ServiceType, keywords, ows_description, text, wgs84_bbox
from geoweb.models import Dataset

WMTS_NS = "http://www.opengis.net/wmts/1.0"


def extract(root: etree._Element) -> Description:
    datasets = [
        Dataset(
            name=text(layer, "{*}Identifier"),
            title=text(layer, "{*}Title"),
            bbox=wgs84_bbox(layer),
            keywords=keywords(layer),
            extra={
                "tile_matrix_sets": [
                    t.text.strip()
                    for t in layer.iterfind("{*}TileMatrixSetLink/{*}TileMatrixSet")
                    if t.text and t.text.strip()
                ]
            },
        )
        for layer in root.iterfind("{*}Contents/{*}Layer")
    ]
    return ows_description(root, datasets)


SERVICE = ServiceType(name="WMTS", roots={(WMTS_NS, "Capabilities"): "1.0.0"}, extract=extract)
