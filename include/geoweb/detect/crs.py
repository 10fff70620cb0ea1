"""Bounding boxes in a file's own CRS, as WGS84 lon/lat boxes: what the file detectors report."""

from __future__ import annotations

import math
from functools import lru_cache

from pyproj import Transformer
from pyproj.exceptions import CRSError, ProjError

from geoweb.models import BBox


def reprojected_bbox(bounds, crs: str | None) -> BBox | None:
    """``bounds`` in ``crs`` as a WGS84 lon/lat box; with no CRS, kept only when it already looks like degrees."""
    if bounds is None or not all(math.isfinite(v) for v in bounds):
        return None
    if crs is None:
        minx, miny, maxx, maxy = bounds
        in_degrees = -180 <= minx <= maxx <= 180 and -90 <= miny <= maxy <= 90
        return tuple(bounds) if in_degrees else None
    try:
        box = _to_wgs84(crs).transform_bounds(*bounds, densify_pts=21)
    except (CRSError, ProjError):
        return None
    return box if all(math.isfinite(v) for v in box) else None


@lru_cache(maxsize=64)
def _to_wgs84(crs: str) -> Transformer:
    return Transformer.from_crs(crs, "EPSG:4326", always_xy=True)
