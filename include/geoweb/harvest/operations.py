"""Operation checks: a resource whose capabilities, landing page or file answer may still fail at what it is
for (a WMS whose capabilities come back while every GetMap fails). After a good check, one small request of
what the resource serves is built from the resource as its detector just read it, and its answer judged:

| type | request | a success |
|---|---|---|
| WMS | GetMap of its first layer with a WGS84 box: the box's centre 1/16, 256 x 256, ``image/png`` | a PNG |
| WMTS | GetTile of tile 0, 0 of the coarsest matrix of its first layer with an image format (KVP, else its tile URL template) | an image of that format |
| WFS | GetFeature of one feature of its first feature type (``count=1``, ``maxFeatures=1`` before 2.0) | XML (GML) or GeoJSON |
| WCS | DescribeCoverage of its first coverage | XML |
| OGCAPI-FEATURES | ``/collections/{id}/items?limit=1`` of its first collection | JSON with a ``features`` list |
| ARCGIS-MAPSERVER | ``export`` of the centre 1/16 of its box, 256 x 256, ``f=image`` | a PNG |
| KML, SHAPEFILE, GEOJSON, GEOTIFF | ``Range: bytes=0-1023`` of the file | 206 or 200 with bytes, no HTML page |

An OGC exception report is never a success, whatever its Content-Type, nor is an HTML page where a map or
data was asked for. A map is decoded within bounds (its size read from its header and refused above
``MAX_PIXELS`` before any pixel is decoded, Pillow's decompression-bomb warning an error); a map of one
colour is a success with a warning. What a request needs and the detector did not keep means no operation
check (``NoOperation``), never a guess: a WMS layer without a box, a WMTS layer without an image format, a
style or a tile matrix (or a tile URL template, where the service takes no KVP GetTile), a type with no
operation here.
"""

from __future__ import annotations

import io
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from urllib.parse import quote, urlencode, urljoin, urlsplit, urlunsplit

from lxml import etree
from PIL import Image, UnidentifiedImageError

from geoweb.detect.ogc import wmts
from geoweb.detect.ogc.common import exception_report, with_query
from geoweb.errors import GeowebError, HTTPStatusError
from geoweb.fetch.response import Response
from geoweb.jsonsafe import looks_like_json, parse_json
from geoweb.models import FILE_TYPES, BBox, CheckOperation, Dataset, Resource
from geoweb.xmlsafe import parse_xml, strip_bom

MAP_SIZE = 256  # pixels a side of a map asked for
QUARTER = 0.25  # of each side of a box: its centre 1/16 is asked for, a small map any server draws fast
MIN_HALF_SIDE = 0.0005  # degrees: a point layer's box is widened to about 100 m
MAX_PIXELS = 1024 * 1024  # an answer to a 256 x 256 request larger than this is no map: refused unread
MAP_FORMAT = "image/png"  # asked for of a WMS (its detector keeps no formats) and an ArcGIS map service
# the image formats an answer is judged in, as Pillow names them
PILLOW_FORMATS = {"image/png": "PNG", "image/jpeg": "JPEG", "image/gif": "GIF", "image/webp": "WEBP"}
TEMPLATE_KEY = re.compile(r"\{(\w+)\}")
RANGE = "bytes=0-1023"
RANGE_BYTES = 1024
ONE_COLOUR = "all one colour"

# Returns a warning (None when all is well); raises OperationFailed, or the error an answer stands for.
Judge = Callable[[Response, int], str | None]


class NoOperation(GeowebError):
    """Raised when no operation request can be built from what the detector kept; the message says why."""

    reason = "no_operation"
    user_msg = "No operation check for this resource"


class OperationFailed(GeowebError):
    """Raised by a judge for an answer that is not what was asked for; ``reason`` says how."""

    user_msg = "The operation answered with something else than was asked for"

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class OperationRequest:
    """One operation request and how its answer is judged. ``max_bytes`` None is the fetcher's body cap."""

    operation: CheckOperation
    url: str
    judge: Judge
    headers: dict[str, str] | None = None
    max_bytes: int | None = None


def operation_request(resource: Resource) -> OperationRequest:
    """The operation request that checks ``resource``. Raises NoOperation when there is none."""
    build = range_read if resource.type in FILE_TYPES else _BUILDERS.get(resource.type)
    if build is None:
        raise NoOperation(f"no operation check for a {resource.type}")
    return build(resource)


# --- requests --------------------------------------------------------------------------------------------


def get_map(resource: Resource) -> OperationRequest:
    """WMS GetMap of the first named layer with a box: EPSG:4326, latitude first from 1.3.0 on."""
    layer = _first(resource, with_box=True)
    minx, miny, maxx, maxy = centre(layer.bbox)
    version = resource.version or "1.3.0"
    if version.startswith("1.3"):
        crs_key, box = "CRS", (miny, minx, maxy, maxx)  # EPSG:4326 orders latitude first in 1.3.0
    else:
        crs_key, box = "SRS", (minx, miny, maxx, maxy)
    query = {
        "SERVICE": "WMS", "VERSION": version, "REQUEST": "GetMap", "LAYERS": layer.name, "STYLES": "",
        crs_key: "EPSG:4326", "BBOX": _numbers(box), "WIDTH": MAP_SIZE, "HEIGHT": MAP_SIZE,
        "FORMAT": MAP_FORMAT,
    }  # fmt: skip
    return OperationRequest(CheckOperation.GET_MAP, with_query(resource.url, urlencode(query)), judge_image)


@dataclass(frozen=True, slots=True)
class Tile:
    """Tile 0, 0 (top left) of the first (coarsest) tile matrix of a WMTS layer, in one of its formats."""

    layer: str
    style: str
    image_format: str
    matrix_set: str
    matrix: str

    def keys(self) -> dict[str, str]:
        """Where the tile is, keyed as a tile URL template names it."""
        return {
            "Style": self.style, "TileMatrixSet": self.matrix_set, "TileMatrix": self.matrix, "TileRow": "0",
            "TileCol": "0",
        }  # fmt: skip

    def query(self) -> dict[str, str]:
        where = {k.upper(): v for k, v in self.keys().items()}
        request = {"SERVICE": "WMTS", "REQUEST": "GetTile", "VERSION": "1.0.0", "LAYER": self.layer}
        return request | {"STYLE": where.pop("STYLE"), "FORMAT": self.image_format} | where

    def in_template(self, template: str) -> str | None:
        """``template`` filled in (its keys in any case, as servers write them); None when it has keys a tile
        does not fill (a dimension's)."""
        values = {k.lower(): quote(v, safe="") for k, v in self.keys().items()}
        if any(key.lower() not in values for key in TEMPLATE_KEY.findall(template)):
            return None
        return TEMPLATE_KEY.sub(lambda key: values[key[1].lower()], template)


def get_tile(resource: Resource) -> OperationRequest:
    """WMTS GetTile of the first layer with what a tile needs: KVP at the endpoint, or the layer's tile URL
    template where the service declares no KVP GetTile."""
    kvp = resource.extra.get(wmts.GET_TILE_ENCODING) == "KVP"
    for layer in resource.datasets:
        tile = _first_tile(layer, kvp)
        url = _tile_url(resource, layer, tile, kvp) if tile else None
        if url:
            judge = partial(judge_image, image_format=tile.image_format)
            return OperationRequest(CheckOperation.GET_TILE, url, judge)
    need = "" if kvp else " and a tile URL template (the service declares no KVP GetTile)"
    raise NoOperation(f"no WMTS layer with an image format, a style and a tile matrix{need}")


def _first_tile(layer: Dataset, kvp: bool) -> Tile | None:
    """The layer's tile in its first format that is an image judged here (without KVP, of those it has a
    template for); None when it lacks what a tile needs."""
    templates = layer.extra.get(wmts.TILE_TEMPLATES, {})
    formats = layer.extra.get(wmts.FORMATS, []) if kvp else list(templates)
    image_format = next((f for f in formats if _mime(f) in PILLOW_FORMATS), None)
    styles = layer.extra.get(wmts.STYLES, [])
    matrices = layer.extra.get(wmts.FIRST_TILE_MATRIX, {})
    if not (layer.name and image_format and styles and matrices):
        return None
    matrix_set, matrix = next(iter(matrices.items()))
    return Tile(layer.name, styles[0], image_format, matrix_set, matrix)


def _tile_url(resource: Resource, layer: Dataset, tile: Tile, kvp: bool) -> str | None:
    if kvp:
        return with_query(resource.url, urlencode(tile.query()))
    filled = tile.in_template(layer.extra[wmts.TILE_TEMPLATES][tile.image_format])
    return None if filled is None else urljoin(resource.url, filled)


def get_feature(resource: Resource) -> OperationRequest:
    """WFS GetFeature of one feature of the first feature type."""
    feature_type = _first(resource)
    version = resource.version or "1.1.0"
    two = version.startswith("2")
    query = {
        "SERVICE": "WFS", "VERSION": version, "REQUEST": "GetFeature",
        "TYPENAMES" if two else "TYPENAME": feature_type.name, "COUNT" if two else "MAXFEATURES": 1,
    }  # fmt: skip
    url = with_query(resource.url, urlencode(query))
    return OperationRequest(CheckOperation.GET_FEATURE, url, judge_features)


def describe_coverage(resource: Resource) -> OperationRequest:
    """WCS DescribeCoverage of the first coverage, keyed as its version names coverages."""
    coverage = _first(resource)
    version = resource.version or "1.0.0"
    key = (
        "COVERAGEID"
        if version.startswith("2")
        else "IDENTIFIERS"
        if version.startswith("1.1")
        else "COVERAGE"
    )
    query = {"SERVICE": "WCS", "VERSION": version, "REQUEST": "DescribeCoverage", key: coverage.name}
    url = with_query(resource.url, urlencode(query))
    return OperationRequest(CheckOperation.DESCRIBE_COVERAGE, url, judge_xml)


def items(resource: Resource) -> OperationRequest:
    """One item of the first collection of an OGC API - Features."""
    collection = _first(resource)
    parts = urlsplit(resource.url)
    path = f"{parts.path.rstrip('/')}/collections/{quote(collection.name, safe='')}/items"
    url = urlunsplit((parts.scheme, parts.netloc, path, "limit=1", ""))
    headers = {"Accept": "application/geo+json, application/json;q=0.9"}
    return OperationRequest(CheckOperation.ITEMS, url, judge_items, headers=headers)


def export(resource: Resource) -> OperationRequest:
    """An ArcGIS map service's map of the centre of its box, in WGS84."""
    if resource.bbox is None:
        raise NoOperation("the map service has no WGS84 box")
    query = {
        "bbox": _numbers(centre(resource.bbox)), "bboxSR": 4326, "size": f"{MAP_SIZE},{MAP_SIZE}",
        "format": "png", "f": "image",
    }  # fmt: skip
    url = f"{resource.url.rstrip('/')}/export?{urlencode(query)}"
    return OperationRequest(CheckOperation.EXPORT, url, judge_image)


def range_read(resource: Resource) -> OperationRequest:
    """The first bytes of a file: it is still there and still served."""
    return OperationRequest(
        CheckOperation.RANGE_READ,
        resource.url,
        judge_first_bytes,
        headers={"Range": RANGE},
        max_bytes=RANGE_BYTES,
    )


_BUILDERS: dict[str, Callable[[Resource], OperationRequest]] = {
    "WMS": get_map,
    "WMTS": get_tile,
    "WFS": get_feature,
    "WCS": describe_coverage,
    "OGCAPI-FEATURES": items,
    "ARCGIS-MAPSERVER": export,
}


def centre(box: BBox) -> BBox:
    """The centre of ``box``, a quarter of each side (1/16 of its area), at least ``MIN_HALF_SIDE`` wide."""
    minx, miny, maxx, maxy = box
    x, y = (minx + maxx) / 2, (miny + maxy) / 2
    half_width = max((maxx - minx) * QUARTER / 2, MIN_HALF_SIDE)
    half_height = max((maxy - miny) * QUARTER / 2, MIN_HALF_SIDE)
    return x - half_width, y - half_height, x + half_width, y + half_height


def _mime(image_format: str) -> str:
    """A format's media type, without its parameters (``image/png; mode=8bit``)."""
    return image_format.partition(";")[0].strip().lower()


def _numbers(values: BBox) -> str:
    return ",".join(f"{v:.6f}" for v in values)


def _first(resource: Resource, *, with_box: bool = False) -> Dataset:
    """The first named dataset (with a WGS84 box, when asked). Raises NoOperation when there is none."""
    for dataset in resource.datasets:
        if dataset.name and (dataset.bbox is not None or not with_box):
            return dataset
    raise NoOperation(f"no named dataset{' with a WGS84 box' if with_box else ''} in the {resource.type}")


# --- judges ----------------------------------------------------------------------------------------------


def judge_image(response: Response, max_bytes: int, image_format: str = MAP_FORMAT) -> str | None:
    """A whole image of ``image_format``, decoded within bounds; a warning when it is all one colour."""
    body = _whole_body(response)
    _refuse_documents(body, max_bytes, "an image")
    with _decoded(body) as image:
        if image.format != PILLOW_FORMATS[_mime(image_format)]:
            raise OperationFailed("wrong_format", f"a {image.format} image, not {image_format}")
        return ONE_COLOUR if image.getcolors(1) is not None else None


def judge_features(response: Response, max_bytes: int) -> None:
    """GeoJSON with a ``features`` list, or XML (GML) that is no exception report."""
    body = _whole_body(response)
    if looks_like_json(body):
        _features(body, max_bytes)
    else:
        _xml(body, max_bytes)


def judge_xml(response: Response, max_bytes: int) -> None:
    """XML that is no exception report (a coverage description)."""
    _xml(_whole_body(response), max_bytes)


def judge_items(response: Response, max_bytes: int) -> None:
    """JSON with a ``features`` list."""
    _features(_whole_body(response), max_bytes)


def judge_first_bytes(response: Response, max_bytes: int) -> None:
    """Some bytes of the file (206 for the range, or 200 with the file from its start), no HTML page. A 200
    declaring a body over the cap has none read, and is still the file answering."""
    _successful(response)
    if not response.body and not response.content_length:
        raise OperationFailed("empty", "no bytes")
    if _looks_like_html(response.body):
        raise OperationFailed("html", "an HTML page where the file was")


def _successful(response: Response) -> None:
    if response.status >= 400:
        raise HTTPStatusError(response.status, url=response.final_url)


def _whole_body(response: Response) -> bytes:
    """The body of a successful answer, read whole within the fetcher's caps."""
    _successful(response)
    if not response.complete:
        raise OperationFailed("truncated", f"answer cut at {len(response.body)} bytes: over the size cap")
    return response.body


def _looks_like_html(body: bytes) -> bool:
    head = strip_bom(body[:512]).lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html")) or b"<body" in head


def _refuse_documents(body: bytes, max_bytes: int, wanted: str) -> None:
    """Refuse a text document where ``wanted`` was asked for: an exception report (whatever its
    Content-Type), an HTML page, any other XML."""
    if strip_bom(body[:64]).lstrip()[:1] != b"<":
        return
    if _looks_like_html(body):
        raise OperationFailed("html", f"an HTML page, not {wanted}")
    root = _xml(body, max_bytes)
    raise OperationFailed("not_image", f"an XML document ({etree.QName(root).localname}), not {wanted}")


def _xml(body: bytes, max_bytes: int) -> etree._Element:
    """The root of an XML answer that is neither an HTML page nor an OGC exception report."""
    if _looks_like_html(body):
        raise OperationFailed("html", "an HTML page, not the XML asked for")
    root = parse_xml(body, max_bytes=max_bytes)
    report = exception_report(root)
    if report is not None:
        raise report
    return root


def _features(body: bytes, max_bytes: int) -> None:
    document = parse_json(body, max_bytes=max_bytes)
    if not isinstance(document, dict) or not isinstance(document.get("features"), list):
        raise OperationFailed("no_features", "JSON without a features list")


def _decoded(body: bytes) -> Image.Image:
    """The image in ``body``, its pixels decoded; its size is checked from its header first."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(body)) as probe:
                _bounded(probe.size)
                probe.verify()  # chunk checksums, before anything is decoded
            image = Image.open(io.BytesIO(body))
            image.load()
            return image
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise OperationFailed("image_too_large", f"image refused: {exc}") from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise OperationFailed("broken_image", f"not a readable image: {exc}") from None


def _bounded(size: tuple[int, int]) -> None:
    width, height = size
    if width * height > MAX_PIXELS:
        raise OperationFailed("image_too_large", f"a {width} x {height} image, over {MAX_PIXELS} pixels")
