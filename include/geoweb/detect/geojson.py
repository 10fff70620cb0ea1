"""GeoJSON files (RFC 7946), confirmed by content: a FeatureCollection, Feature or geometry in lon/lat.

A URL ending in .json is mostly something else (a config, an API answer), so the document is parsed under the
body cap and every position is checked: RFC 7946 coordinates are WGS84 degrees, and a file in projected
coordinates (the obsolete ``crs`` member) is not reported, since its extent cannot be trusted.

A FeatureCollection over the body cap is identified from its first ``HEAD_BYTES`` (the bytes the crawl read,
or one Range request): its ``type``, its ``name`` and ``bbox`` members written before ``features`` (GDAL
writes them so), and its first feature, parsed and checked like any other. Its feature count is unknown and
its box is the declared one or none: never guessed from one feature.
"""

from __future__ import annotations

import math
import posixpath
import re
from collections.abc import Iterator
from urllib.parse import urlsplit

from geoweb.detect.base import DetectContext, Detector
from geoweb.detect.rangezip import HEAD_BYTES, read_head
from geoweb.errors import GeowebError, MalformedContent
from geoweb.fetch.response import Response
from geoweb.jsonsafe import objects, response_object, value_at
from geoweb.links.normalize import normalize_url
from geoweb.models import BBox, Dataset, Resource, sha256
from geoweb.values import one_line

GEOJSON_MEDIA_TYPES = ("application/geo+json", "application/vnd.geo+json")
GEOJSON_EXTENSIONS = (".geojson", ".json")
# geometry type -> how deep positions sit in its coordinates (0: the coordinates are one position)
GEOMETRY_DEPTH = {
    "Point": 0,
    "MultiPoint": 1,
    "LineString": 1,
    "MultiLineString": 2,
    "Polygon": 2,
    "MultiPolygon": 3,
}
STAC_MEMBERS = frozenset({"stac_version", "stac_extensions"})
PAGING_RELS = frozenset({"next", "prev", "previous", "first", "last"})
_FEATURES_ARRAY = re.compile(r'"features"\s*:\s*\[\s*')
_MEMBER_KEY = re.compile(r'\s*"((?:[^"\\]|\\.)*)"\s*:\s*')
_MEMBER_SEPARATOR = re.compile(r"\s*,?")
_FEATURE_TYPE = re.compile(rb'"type"\s*:\s*"(?:Feature|FeatureCollection)"')


class NotGeoJSON(MalformedContent):
    """Raised when a JSON document is not GeoJSON, or not GeoJSON in WGS84 lon/lat."""

    reason = "not_geojson"
    user_msg = "The document is not a GeoJSON file"


class GeoJSONDetector(Detector):
    name = "geojson"
    types = ("GEOJSON",)

    def accepts(self, response: Response) -> bool:
        return (
            response.names_file(*GEOJSON_EXTENSIONS)
            or response.content_type in GEOJSON_MEDIA_TYPES
            or _looks_like_geojson(response.body)
        )

    async def detect(self, response: Response, ctx: DetectContext) -> list[Resource]:
        if not ctx.wants("GEOJSON"):
            return []
        try:
            if response.complete or not 200 <= response.status < 300:
                resource = geojson_resource(response, ctx.settings.max_body_bytes)
            else:
                head = await read_head(ctx, response, HEAD_BYTES, counter="geojson")
                resource = geojson_resource_from_head(response, head)
                ctx.stats["geojson/large_files"] += 1
        except GeowebError as exc:
            return ctx.miss(self.name, response.final_url, exc)
        ctx.stats["geojson/found"] += 1
        return [resource]


def _looks_like_geojson(body: bytes) -> bool:
    head = body[:4096]
    return head.lstrip().startswith(b"{") and bool(_FEATURE_TYPE.search(head))


def geojson_resource(response: Response, max_bytes: int) -> Resource:
    """The GeoJSON resource a response proves; raises a GeowebError saying why not."""
    return _described(
        response, response_object(response, max_bytes=max_bytes, invalid=NotGeoJSON), whole=True
    )


def geojson_resource_from_head(response: Response, head: bytes) -> Resource:
    """The GeoJSON FeatureCollection whose first bytes are ``head``; raises a GeowebError saying why not."""
    text = head.decode("utf-8", "ignore").lstrip("\ufeff \t\r\n")
    features = _FEATURES_ARRAY.search(text)
    if not text.startswith("{") or features is None:
        raise NotGeoJSON(f"no features array in the first {len(head)} bytes of a file over the body cap")
    members = _members_before(text, features.start())
    if members.get("type") != "FeatureCollection":
        raise NotGeoJSON("a file over the body cap that is no FeatureCollection")
    try:
        first, _ = value_at(text, features.end())
    except ValueError:
        raise NotGeoJSON(f"the first feature does not end in the first {len(head)} bytes") from None
    return _described(response, {**members, "features": [first]}, whole=False)


def _described(response: Response, document: dict, *, whole: bool) -> Resource:
    """The resource of a GeoJSON ``document``: the whole file, or its members and first feature only (then
    the feature count is unknown and the box is the declared one or none)."""
    if _is_stac(document):
        raise NotGeoJSON("a STAC item or item collection (a STAC resource or nothing: docs/stac.md)")
    if _is_api_page(document):
        raise NotGeoJSON("a page of an API's items (OGC API, WFS 3, STAC search), not a file")
    kinds: set[str] = set()
    lons: list[float] = []
    lats: list[float] = []
    for geometry in _geometries(document):
        kinds.add(geometry["type"])
        for lon, lat in _positions(geometry):
            lons.append(lon)
            lats.append(lat)
    computed = (min(lons), min(lats), max(lons), max(lats)) if lons and whole else None
    bbox = _declared_bbox(document.get("bbox")) or computed
    # ogr2ogr writes the layer's name
    title = one_line(document.get("name")) or one_line(document.get("title"))
    extra = {"features": _feature_count(document) if whole else None, "geometry_types": sorted(kinds)}
    if not whole:
        extra["read"] = "head"
    stem = posixpath.splitext(posixpath.basename(urlsplit(response.final_url).path))[0] or None
    return Resource(
        url=normalize_url(response.final_url) or response.final_url,
        type="GEOJSON",
        title=title,
        datasets=[Dataset(name=title or stem, title=title, bbox=bbox, extra=extra)],
        bbox=bbox,
        extra={"type": document["type"], **extra},
        content_sha256=sha256(response.body) if whole else None,
    )


def _members_before(text: str, end: int) -> dict:
    """The top-level members written before ``features`` (at ``end``): ``"key": value`` pairs read one by
    one; reading stops at the first that does not parse."""
    members: dict = {}
    position = 1
    while position < end:
        key = _MEMBER_KEY.match(text, position)
        if key is None:
            break
        try:
            value, position = value_at(text, key.end())
        except ValueError:
            break
        members[value_at(f'"{key[1]}"', 0)[0]] = value
        position = _MEMBER_SEPARATOR.match(text, position).end()
    return members


def _is_stac(document: dict) -> bool:
    """A STAC item, or a collection of them (an item search page): STAC members on it or its features."""
    features = document.get("features") if document.get("type") == "FeatureCollection" else None
    first = features[0] if isinstance(features, list) and features else None
    return any(isinstance(d, dict) and STAC_MEMBERS & d.keys() for d in (document, first))


def _is_api_page(document: dict) -> bool:
    """An items response of an OGC API or STAC API: the API is the resource, its pages are not files.
    They carry paging members or links that no GeoJSON file has (OGC API - Features, STAC API context),
    even when empty."""
    return document.get("type") == "FeatureCollection" and (
        any(key in document for key in ("numberMatched", "numberReturned", "context"))
        or any(link.get("rel") in PAGING_RELS for link in objects(document, "links"))
    )


def _geometries(document: dict) -> Iterator[dict]:
    """Every geometry of the document (null geometries skipped); raises NotGeoJSON for a wrong structure."""
    kind = document.get("type")
    if kind == "FeatureCollection":
        features = document.get("features")
        if not isinstance(features, list):
            raise NotGeoJSON("FeatureCollection without a features array")
    elif kind == "Feature":
        features = [document]
    elif kind in GEOMETRY_DEPTH or kind == "GeometryCollection":
        features = [{"type": "Feature", "geometry": document}]
    else:
        raise NotGeoJSON(f"top-level type {kind!r} is not a GeoJSON type")
    for feature in features:
        if not isinstance(feature, dict) or feature.get("type") != "Feature":
            raise NotGeoJSON("a member of features is not a Feature")
        # GeometryCollections may nest: walk them with a stack, never recursion
        stack = [feature.get("geometry")]
        while stack:
            geometry = stack.pop()
            if geometry is None:
                continue
            if not isinstance(geometry, dict):
                raise NotGeoJSON("a geometry is not an object")
            if geometry.get("type") == "GeometryCollection":
                members = geometry.get("geometries")
                if not isinstance(members, list):
                    raise NotGeoJSON("GeometryCollection without a geometries array")
                stack.extend(members)
            elif geometry.get("type") in GEOMETRY_DEPTH:
                yield geometry
            else:
                raise NotGeoJSON(f"geometry type {geometry.get('type')!r} is not a GeoJSON type")


def _positions(geometry: dict) -> Iterator[tuple[float, float]]:
    """(lon, lat) of every position of a geometry; raises NotGeoJSON for bad nesting or non-WGS84 values."""
    level = [geometry.get("coordinates")]
    for _ in range(GEOMETRY_DEPTH[geometry["type"]]):
        if not all(isinstance(item, list) for item in level):
            raise NotGeoJSON(f"{geometry['type']} coordinates are not nested arrays")
        level = [inner for item in level for inner in item]
    for position in level:
        if not (isinstance(position, list) and len(position) >= 2 and all(map(_is_number, position))):
            raise NotGeoJSON(f"{geometry['type']} holds a position that is not 2+ finite numbers")
        lon, lat = position[0], position[1]
        if not (-180.0 <= lon <= 180.0 and -90.0 <= lat <= 90.0):
            raise NotGeoJSON(f"position ({lon}, {lat}) is outside WGS84 lon/lat")
        yield float(lon), float(lat)


def _is_number(value: object) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def _declared_bbox(value: object) -> BBox | None:
    """The ``bbox`` member as (minx, miny, maxx, maxy) when it is valid (2D or 3D, in range); else None."""
    if not (isinstance(value, list) and len(value) in (4, 6) and all(map(_is_number, value))):
        return None
    half = len(value) // 2
    minx, miny, maxx, maxy = value[0], value[1], value[half], value[half + 1]
    if -180 <= minx <= maxx <= 180 and -90 <= miny <= maxy <= 90:
        return (float(minx), float(miny), float(maxx), float(maxy))
    return None


def _feature_count(document: dict) -> int:
    if document["type"] == "FeatureCollection":
        return len(document["features"])
    return 1
