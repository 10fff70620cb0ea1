"""Web Map Tile Service 1.0, read by OWSLib's WebMapTileService: layers, with what a GetTile of each needs
(``geoweb.harvest.operations``), and whether the service takes GetTile requests as KVP.

What a layer keeps is bounded (a few formats, styles, sets and templates; one tile matrix per set), so a
document of thousands of layers and matrices stays cheap to store."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import islice

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
from geoweb.values import stripped, words

WMTS_NS = "http://www.opengis.net/wmts/1.0"
MAX_LISTED = 4  # of each a layer lists: a GetTile needs one
# Resource.extra: "KVP", or "RESTful" where the service declares no KVP GetTile (OWSLib's ``restonly``)
GET_TILE_ENCODING = "get_tile_encoding"
# Dataset.extra of a layer: its image formats, its style identifiers (the default first), the first (the
# coarsest) tile matrix of each of its tile matrix sets, its tile URL templates by format
FORMATS = "formats"
STYLES = "styles"
FIRST_TILE_MATRIX = "first_tile_matrix"
TILE_TEMPLATES = "tile_templates"


def read(root: etree._Element, version: str | None) -> Description:
    """The service and its layers; each set's first matrix is looked up once, not per layer."""
    wmts = owslib_service(WebMapTileService, "1.0.0", root)
    first_matrices = {
        stripped(set_id): stripped(next(iter(getattr(matrix_set, "tilematrix", None) or ()), None))
        for set_id, matrix_set in (getattr(wmts, "tilematrixsets", None) or {}).items()
    }
    datasets = [
        owslib_dataset(name, layer, **tile_needs(layer, first_matrices))
        for name, layer in wmts.contents.items()
    ]
    description = owslib_description(wmts, datasets)
    description.extra[GET_TILE_ENCODING] = "RESTful" if wmts.restonly else "KVP"
    return description


def tile_needs(layer: object, first_matrices: Mapping[str | None, str | None]) -> dict[str, object]:
    """What a GetTile of an OWSLib layer needs, a few of each: its tile matrix sets always, the rest only
    where the layer has any."""
    sets = words(getattr(layer, "tilematrixsetlinks", None))
    styles = getattr(layer, "styles", None) or {}
    default_first = sorted(styles, key=lambda style: not (styles[style] or {}).get("isDefault"))
    needs = {
        FORMATS: words(getattr(layer, "formats", None))[:MAX_LISTED],
        STYLES: words(default_first)[:MAX_LISTED],
        FIRST_TILE_MATRIX: dict(
            islice(((s, first_matrices[s]) for s in sets if first_matrices.get(s)), MAX_LISTED)
        ),
        TILE_TEMPLATES: _tile_templates(layer),
    }
    return {"tile_matrix_sets": sets} | {key: value for key, value in needs.items() if value}


def _tile_templates(layer: object) -> dict[str, str]:
    """The first few tile URL templates of an OWSLib layer (its ``ResourceURL``s), by format."""
    templates: dict[str, str] = {}
    for url in getattr(layer, "resourceURLs", None) or ():
        image_format, template = stripped(url.get("format")), stripped(url.get("template"))
        if stripped(url.get("resourceType")) == "tile" and image_format and template:
            templates.setdefault(image_format, template)
        if len(templates) == MAX_LISTED:
            break
    return templates


SERVICE = ServiceType(
    name="WMTS",
    roots={(WMTS_NS, "Capabilities"): "1.0.0"},
    read=read,
    items=Items(paths=("{*}Contents/{*}Layer",), name=("{*}Identifier",)),
)
