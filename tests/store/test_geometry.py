import math

import pytest
import shapely

from geoweb.store.geometry import box_geometry, boxes_of, clean_box, to_ewkb


@pytest.mark.parametrize(
    ("bbox", "expected"),
    [
        ((120.1, 21.9, 122.0, 25.3), (120.1, 21.9, 122.0, 25.3)),
        (
            (12.345678901234567, -1e-9, 12.345678901234567, 1e-9),
            (12.345678901234567, -1e-9, 12.345678901234567, 1e-9),
        ),
        ((170.0, -20.0, -170.0, -10.0), (170.0, -20.0, -170.0, -10.0)),  # crosses the antimeridian
        (("1", "2", "3", "4"), (1.0, 2.0, 3.0, 4.0)),
    ],
)
def test_valid_boxes_pass_unchanged(bbox, expected):
    assert clean_box(bbox) == (expected, None)


@pytest.mark.parametrize(
    ("bbox", "reason"),
    [
        ((math.nan, 0, 1, 1), "not finite"),
        ((0, 0, math.inf, 1), "not finite"),
        ((0, 0, 1), "not four numbers"),
        (("west", 0, 1, 1), "not four numbers"),
        (None, "not four numbers"),
        ((0, 10, 1, 5), "south above north"),
        ((0, 91, 1, 95), "outside WGS84 latitudes"),
        ((500000.0, 4000000.0, 600000.0, 4100000.0), "outside WGS84"),  # projected metres labelled WGS84
        ((200, 0, 190, 1), "west above east and outside"),
    ],
)
def test_impossible_boxes_are_refused_with_the_reason(bbox, reason):
    box, note = clean_box(bbox)
    assert box is None
    assert reason in note


@pytest.mark.parametrize(
    ("bbox", "expected"),
    [
        ((-180.5, -90.2, 180.5, 90.2), (-180.0, -90.0, 180.0, 90.0)),  # rounding at the edges of the world
        ((-20037508.34, -20037508.34, 20037508.34, 20037508.34), (-180.0, -90.0, 180.0, 90.0)),
        ((100.0, 0.0, 190.0, 10.0), (100.0, 0.0, 180.0, 10.0)),
    ],
)
def test_overflowing_boxes_are_clamped_with_a_note(bbox, expected):
    assert clean_box(bbox) == (expected, "bbox clamped to WGS84")


def test_a_west_edge_on_the_antimeridian_is_its_other_side():
    assert clean_box((180.0, 0.0, -170.0, 5.0)) == ((-180.0, 0.0, -170.0, 5.0), None)
    assert clean_box((170.0, 0.0, -180.0, 5.0)) == ((170.0, 0.0, 180.0, 5.0), None)


@pytest.mark.parametrize(
    ("box", "geom_type"),
    [
        ((1.0, 2.0, 3.0, 4.0), "Polygon"),
        ((1.0, 2.0, 1.0, 2.0), "Point"),
        ((1.0, 2.0, 1.0, 4.0), "LineString"),
        ((1.0, 2.0, 3.0, 2.0), "LineString"),
        ((170.0, -20.0, -170.0, -10.0), "MultiPolygon"),
        ((170.0, 5.0, -170.0, 5.0), "MultiLineString"),
    ],
)
def test_boxes_become_valid_geometries_and_come_back_exactly(box, geom_type):
    geometry = box_geometry(box)
    assert geometry.geom_type == geom_type
    assert geometry.is_valid
    assert boxes_of([bytes.fromhex(to_ewkb([box])[0])]) == [box]


def test_an_antimeridian_box_covers_both_sides_and_not_the_middle():
    geometry = box_geometry((170.0, -20.0, -170.0, -10.0))
    assert geometry.intersects(shapely.Point(175, -15))
    assert geometry.intersects(shapely.Point(-175, -15))
    assert not geometry.intersects(shapely.Point(0, -15))


def test_ewkb_carries_the_srid_and_none_stays_none():
    hexes = to_ewkb([(0.0, 0.0, 1.0, 1.0), None])
    assert hexes[1] is None
    assert shapely.get_srid(shapely.from_wkb(hexes[0])) == 4326
    assert boxes_of([None]) == [None]
