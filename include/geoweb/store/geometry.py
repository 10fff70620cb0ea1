"""WGS84 boxes as PostGIS geometries and back.

A box becomes a polygon, or a point or line when it is degenerate (ST_MakeEnvelope would make an invalid
zero-area polygon). A box whose west edge lies east of its east edge crosses the antimeridian and becomes two
parts, so it still intersects what it covers. Boxes that cannot be a WGS84 box are refused with the reason.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import shapely
from shapely.geometry.base import BaseGeometry

from geoweb.models import BBox

SRID = 4326


def clean_box(bbox: Sequence) -> tuple[BBox | None, str | None]:
    """The storable box and a note on what was wrong with it: (None, reason) when it cannot be stored."""
    try:
        west, south, east, north = (float(v) for v in bbox)
    except (TypeError, ValueError):
        return None, "bbox skipped: not four numbers"
    if not all(math.isfinite(v) for v in (west, south, east, north)):
        return None, "bbox skipped: not finite"
    if south > north:
        return None, "bbox skipped: south above north"
    if north < -90 or south > 90:
        return None, "bbox skipped: outside WGS84 latitudes"
    if west > east:
        if west > 180 or east < -180:
            return None, "bbox skipped: west above east and outside WGS84 longitudes"
    elif east < -180 or west > 180:
        return None, "bbox skipped: outside WGS84 longitudes"
    box = (_clamp(west, 180), _clamp(south, 90), _clamp(east, 180), _clamp(north, 90))
    note = "bbox clamped to WGS84" if box != (west, south, east, north) else None
    if box[0] > box[2]:  # crosses the antimeridian; an edge lying on it belongs to the other side
        if box[0] == 180:
            box = (-180.0, *box[1:])
        elif box[2] == -180:
            box = (*box[:2], 180.0, box[3])
    return box, note


def _clamp(value: float, limit: float) -> float:
    return max(-limit, min(limit, value))


def box_geometry(box: BBox) -> BaseGeometry:
    """The geometry of a clean box (see ``clean_box``)."""
    west, south, east, north = box
    if west > east:
        parts = [_part(west, south, 180.0, north), _part(-180.0, south, east, north)]
        return {"Polygon": shapely.MultiPolygon, "LineString": shapely.MultiLineString}[parts[0].geom_type](
            parts
        )
    return _part(west, south, east, north)


def _part(west: float, south: float, east: float, north: float) -> BaseGeometry:
    if west == east and south == north:
        return shapely.Point(west, south)
    if west == east or south == north:
        return shapely.LineString([(west, south), (east, north)])
    return shapely.box(west, south, east, north)


def to_ewkb(boxes: Sequence[BBox | None]) -> list[str | None]:
    """Hex EWKB with the SRID of clean boxes (None stays None), in one vectorised pass: PostgreSQL reads it
    straight into a geometry(Geometry, 4326) column."""
    geometries = np.array([None if b is None else box_geometry(b) for b in boxes], dtype=object)
    return shapely.to_wkb(shapely.set_srid(geometries, SRID), hex=True, include_srid=True).tolist()


def boxes_of(wkbs: Sequence[bytes | None]) -> list[BBox | None]:
    """The boxes of stored geometries (ST_AsBinary), inverting ``box_geometry``; None stays None."""
    geometries = shapely.from_wkb(list(wkbs))
    boxes = []
    for geometry, bounds in zip(geometries, shapely.bounds(geometries).tolist(), strict=True):
        if geometry is None:
            boxes.append(None)
        elif geometry.geom_type.startswith("Multi"):  # two parts: the box crosses the antimeridian
            east_part, west_part = geometry.geoms
            boxes.append((east_part.bounds[0], bounds[1], west_part.bounds[2], bounds[3]))
        else:
            boxes.append(tuple(bounds))
    return boxes
