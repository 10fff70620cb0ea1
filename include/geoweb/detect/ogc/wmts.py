"""Web Map Tile Service 1.0, read by OWSLib's WebMapTileService: layers, with the tile matrix sets each one
links to."""

from __future__ import annotations

from lxml import etree
from owslib.wmts import WebMapTileService

from geoweb.detect.ogc.common import (
    Description,
    Items,
    ServiceType,
    owslib_dataset,
    owslib_description,
    owslib_service,
)
from geoweb.values import words

WMTS_NS = "http://www.opengis.net/wmts/1.0"


def read(root: etree._Element, version: str | None) -> Description:
    wmts = owslib_service(WebMapTileService, "1.0.0", root)
    datasets = [
        owslib_dataset(name, layer, tile_matrix_sets=words(getattr(layer, "tilematrixsetlinks", None)))
        for name, layer in wmts.contents.items()
    ]
    return owslib_description(wmts, datasets)


SERVICE = ServiceType(
    name="WMTS",
    roots={(WMTS_NS, "Capabilities"): "1.0.0"},
    read=read,
    items=Items(paths=("{*}Contents/{*}Layer",), name=("{*}Identifier",)),
)
