"""Parse untrusted JSON, and read it null-safely: the JSON counterpart of ``xmlsafe``.

OGC API, STAC and ArcGIS REST documents come from servers nobody vetted: any member may be missing, null or
of the wrong type. The readers here return None or an empty list instead of raising, so a detector states
what it needs and skips what it cannot use.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from geoweb.errors import HTTPStatusError, MalformedContent, UnsafeContent
from geoweb.models import BBox
from geoweb.values import stripped

if TYPE_CHECKING:
    from geoweb.fetch.response import Response

_JSON_OPENERS = (b"{", b"[")


def looks_like_json(head: bytes) -> bool:
    """Whether the first bytes of a body open a JSON object or array (after a BOM and whitespace)."""
    return head.removeprefix(b"\xef\xbb\xbf").lstrip()[:1] in _JSON_OPENERS


def parse_json(data: bytes, *, max_bytes: int, invalid: type[MalformedContent] = MalformedContent) -> Any:
    """The parsed document. NaN, Infinity and integers too large for a float are refused.

    Raises UnsafeContent for a body over ``max_bytes`` or nested too deeply, ``invalid`` for anything that
    is not JSON.
    """
    if len(data) > max_bytes:
        raise UnsafeContent(f"JSON document of {len(data)} bytes is over the {max_bytes}-byte cap")
    try:
        return json.loads(data, parse_constant=_no_constant, parse_int=float)
    except RecursionError:
        raise UnsafeContent("JSON nested too deeply") from None
    except ValueError as exc:  # also JSONDecodeError and UnicodeDecodeError
        raise invalid(f"not JSON: {exc}") from None


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


# parse_int=float: a 5000-digit integer becomes inf (refused where used) instead of a slow bignum
_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_int=float)


def value_at(text: str, position: int) -> tuple[Any, int]:
    """The JSON value starting at ``position`` of ``text`` and where it ends, read as ``parse_json`` reads
    (for a document known only in part, such as the head of a file over the body cap). Raises ValueError
    when none parses there."""
    try:
        return _DECODER.raw_decode(text, position)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def response_object(response: Response, *, max_bytes: int, invalid: type[MalformedContent]) -> dict:
    """The JSON object of a successful, whole response. Raises HTTPStatusError, MalformedContent for a body
    cut at the size cap, what ``parse_json`` raises, and ``invalid`` for JSON that is no object."""
    if not 200 <= response.status < 300:
        raise HTTPStatusError(response.status, url=response.final_url)
    if not response.complete:
        raise MalformedContent("body incomplete (cut at the size cap)")
    document = parse_json(response.body, max_bytes=max_bytes, invalid=invalid)
    if not isinstance(document, dict):
        raise invalid("the document is not a JSON object")
    return document


def text(obj: Any, key: str) -> str | None:
    """``obj[key]`` as stripped, non-empty text; None when missing or not a string."""
    return stripped(obj.get(key) if isinstance(obj, dict) else None)


def number(obj: Any, key: str) -> float | None:
    """``obj[key]`` as a finite number; None otherwise (booleans are not numbers)."""
    value = obj.get(key) if isinstance(obj, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def objects(obj: Any, key: str) -> list[dict]:
    """The objects of the list ``obj[key]``; other members of the list are skipped."""
    value = obj.get(key) if isinstance(obj, dict) else None
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def texts(obj: Any, key: str) -> list[str]:
    """The non-empty strings of the list ``obj[key]`` (a lone string counts as a list of one)."""
    value = obj.get(key) if isinstance(obj, dict) else None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return []
    return [item.strip() for item in value if isinstance(item, str) and item.strip()]


def links(obj: Any, *rels: str) -> Iterator[dict]:
    """The link objects (``links`` member, as in OGC API, STAC and Atom) with an ``href`` and one of ``rels``
    (any rel when none is given)."""
    for link in objects(obj, "links"):
        if text(link, "href") and (not rels or link.get("rel") in rels):
            yield link


_SLACK = 1e-3  # degrees by which a server's rounding may overshoot the world (GNOSIS writes 90.0002)


def lonlat_bbox(value: Any) -> BBox | None:
    """A [minx, miny, maxx, maxy] (or 3-D [minx, miny, minz, maxx, maxy, maxz]) list in lon/lat degrees as a
    box; None when it is not one. A box crossing the antimeridian (minx > maxx) is widened to the whole
    longitude range, since a box cannot hold it; an overshoot of the world by rounding is clamped."""
    if not isinstance(value, list) or len(value) not in (4, 6):
        return None
    if any(isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) for v in value):
        return None
    minx, miny, maxx, maxy = value if len(value) == 4 else (value[0], value[1], value[3], value[4])
    minx, maxx = _clamped(minx, 180), _clamped(maxx, 180)
    miny, maxy = _clamped(miny, 90), _clamped(maxy, 90)
    if not (-180 <= minx <= 180 and -180 <= maxx <= 180 and -90 <= miny <= maxy <= 90):
        return None
    if minx > maxx:
        minx, maxx = -180.0, 180.0
    return (float(minx), float(miny), float(maxx), float(maxy))


def _clamped(value: float, limit: float) -> float:
    """``value`` brought back to ±``limit`` when it passes it by no more than rounding does."""
    return max(-limit, min(limit, value)) if abs(value) <= limit + _SLACK else value


# CRS84 and its 3-D twin CRS84h (lon, lat, height), as OGC API and STAC name them
_CRS84 = ("/OGC/1.3/CRS84", "/OGC/0/CRS84", "/OGC/1.3/CRS84h", "/OGC/0/CRS84h")


def spatial_extent(collection: Any) -> BBox | None:
    """The overall WGS84 box of an OGC API or STAC collection: ``extent.spatial.bbox[0]`` (both standards
    put the box of the whole collection first, in CRS84 unless ``crs`` says otherwise). A single box written
    flat (``"bbox": [w, s, e, n]``, as some servers do) is read too."""
    extent = collection.get("extent") if isinstance(collection, dict) else None
    spatial = extent.get("spatial") if isinstance(extent, dict) else None
    if not isinstance(spatial, dict):
        return None
    crs = text(spatial, "crs")
    if crs and not crs.endswith(_CRS84):
        return None  # a box in another CRS would need its axis order; none seen in the wild
    boxes = spatial.get("bbox")
    if not isinstance(boxes, list) or not boxes:
        return None
    return lonlat_bbox(boxes[0] if isinstance(boxes[0], list) else boxes)
