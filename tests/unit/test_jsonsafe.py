"""jsonsafe: the capped, NaN-free, depth-safe JSON parser and its null-safe readers."""

from __future__ import annotations

import json

import pytest

from geoweb.errors import HTTPStatusError, MalformedContent, UnsafeContent
from geoweb.jsonsafe import (
    links,
    lonlat_bbox,
    looks_like_json,
    number,
    objects,
    parse_json,
    response_object,
    spatial_extent,
    text,
    texts,
)
from tests.data.files.make_fixtures import response

CAP = 1_000_000


class NotMine(MalformedContent):
    reason = "not_mine"


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b'{"a": 1}', True),
        (b"  \r\n\t[1, 2]", True),
        (b'\xef\xbb\xbf{"a": 1}', True),  # a UTF-8 byte-order mark
        (b"<html>{}</html>", False),
        (b"", False),
        (b"null", False),
        (b'"a string"', False),
    ],
)
def test_looks_like_json(head, expected):
    assert looks_like_json(head) is expected


def test_parse_json_reads_documents_with_a_byte_order_mark():
    assert parse_json(b'\xef\xbb\xbf{"a": [1, "b", null]}', max_bytes=CAP) == {"a": [1.0, "b", None]}


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_parse_json_refuses_non_json_numbers(constant):
    with pytest.raises(MalformedContent, match=f"{constant} is not a JSON number"):
        parse_json(f'{{"x": {constant}}}'.encode(), max_bytes=CAP)


def test_huge_numbers_become_infinite_and_no_reader_returns_them():
    document = parse_json(f'{{"big": {"9" * 5000}, "exp": 1e999}}'.encode(), max_bytes=CAP)
    assert document["big"] == float("inf") and document["exp"] == float("inf")
    assert number(document, "big") is None and number(document, "exp") is None


def test_parse_json_over_the_cap_is_unsafe():
    with pytest.raises(UnsafeContent, match="over the 10-byte cap"):
        parse_json(b'{"a": "0123456789"}', max_bytes=10)


def test_deep_nesting_is_unsafe_not_a_crash():
    with pytest.raises(UnsafeContent, match="nested too deeply"):
        parse_json(b"[" * 200_000 + b"]" * 200_000, max_bytes=CAP)
    with pytest.raises(UnsafeContent):
        parse_json(b'{"a":' * 100_000 + b"1" + b"}" * 100_000, max_bytes=CAP)


@pytest.mark.parametrize(
    "body",
    [b'{"a": 1', b"{'a': 1}", b"\xff\xfe\x00\x81garbage", b"<html></html>", b"", b'{"a": 1} trailing'],
)
def test_what_is_not_json_raises_the_callers_error(body):
    with pytest.raises(NotMine, match="not JSON"):
        parse_json(body, max_bytes=CAP, invalid=NotMine)


def test_text_is_stripped_non_empty_text_or_none():
    doc = {"a": "  Lakes ", "b": "   ", "c": 5, "d": None, "e": ["x"]}
    assert text(doc, "a") == "Lakes"
    assert [text(doc, k) for k in "bcdez"] == [None] * 5
    assert text(["a"], "a") is None and text(None, "a") is None


def test_number_is_finite_and_not_boolean():
    doc = {"i": 3.0, "f": -2.5, "t": True, "s": "4", "n": float("nan"), "inf": float("-inf")}
    assert (number(doc, "i"), number(doc, "f")) == (3.0, -2.5)
    assert [number(doc, k) for k in ("t", "s", "n", "inf", "missing")] == [None] * 5
    assert number("not a dict", "i") is None


def test_objects_keeps_only_the_objects_of_a_list():
    assert objects({"c": [{"id": 1}, "x", None, [1], {"id": 2}]}, "c") == [{"id": 1}, {"id": 2}]
    assert objects({"c": {"id": 1}}, "c") == [] and objects({"c": "x"}, "c") == [] and objects(7, "c") == []


def test_texts_reads_a_list_or_a_lone_string():
    assert texts({"k": [" lakes ", "", 3, None, "rivers", ["x"]]}, "k") == ["lakes", "rivers"]
    assert texts({"k": "hydrography"}, "k") == ["hydrography"]
    assert texts({"k": {"a": "b"}}, "k") == [] and texts({"k": "  "}, "k") == [] and texts(None, "k") == []


def test_links_need_an_href_and_one_of_the_relations():
    doc = {
        "links": [
            {"rel": "self", "href": "http://h/a"},
            {"rel": "data", "href": "  "},
            {"rel": "data", "href": 7},
            {"rel": ["data"], "href": "http://h/list-rel"},
            {"rel": "data", "href": "http://h/c"},
            "http://h/not-an-object",
            {"href": "http://h/no-rel"},
        ]
    }
    assert [link["href"] for link in links(doc, "data")] == ["http://h/c"]
    assert [link["href"] for link in links(doc, "self", "data")] == ["http://h/a", "http://h/c"]
    assert len(list(links(doc))) == 4
    assert list(links({"links": "http://h/x"})) == [] and list(links(None)) == []


@pytest.mark.parametrize(
    ("value", "box"),
    [
        ([5, 45, 8, 46], (5.0, 45.0, 8.0, 46.0)),
        ([5, 45, 0, 8, 46, 3000], (5.0, 45.0, 8.0, 46.0)),  # 3-D: minz and maxz dropped
        ([-180, -90, 180, 90], (-180.0, -90.0, 180.0, 90.0)),
        ([170, -20, -170, -10], (-180.0, -20.0, 180.0, -10.0)),  # across the antimeridian
        ([1, 1, 1, 1], (1.0, 1.0, 1.0, 1.0)),  # a point
        ([-180, -90, 180, 90.0002058236639], (-180.0, -90.0, 180.0, 90.0)),  # rounding overshoot (GNOSIS)
        ([-180.0009, -90.0009, 180, 90], (-180.0, -90.0, 180.0, 90.0)),
        ([-180.01, -90, 180, 90], None),  # more than rounding
        ([5, 46, 8, 45], None),  # south above north
        ([-181, 0, 0, 1], None),
        ([0, -91, 1, 0], None),
        ([0, 0, 1, 95], None),
        ([500000, 4000000, 600000, 4100000], None),  # projected metres
        ([0, 0, 1], None),
        ([0, 0, 1, 1, 2], None),
        ([0, "0", 1, 1], None),
        ([0, 0, True, 1], None),
        ([0, 0, float("inf"), 1], None),
        ([0, 0, float("nan"), 1], None),
        ("0,0,1,1", None),
        ({"minx": 0}, None),
        (None, None),
    ],
)
def test_lonlat_bbox(value, box):
    assert lonlat_bbox(value) == box


def collection(spatial) -> dict:
    return {"id": "c", "extent": {"spatial": spatial, "temporal": {"interval": [[None, None]]}}}


CRS84 = "http://www.opengis.net/def/crs/OGC/1.3/CRS84"


@pytest.mark.parametrize(
    ("spatial", "box"),
    [
        ({"bbox": [[5, 45, 8, 46]]}, (5.0, 45.0, 8.0, 46.0)),
        ({"bbox": [[5, 45, 8, 46]], "crs": CRS84}, (5.0, 45.0, 8.0, 46.0)),
        ({"bbox": [[5, 45, 0, 8, 46, 9]], "crs": CRS84 + "h"}, (5.0, 45.0, 8.0, 46.0)),  # 3-D CRS84h
        ({"bbox": [[0, 40, 20, 50], [5, 45, 8, 46]]}, (0.0, 40.0, 20.0, 50.0)),  # the first box is the whole
        ({"bbox": [5, 45, 8, 46]}, (5.0, 45.0, 8.0, 46.0)),  # one box written flat
        ({"bbox": [[500000, 4e6, 6e5, 4.1e6]], "crs": "http://www.opengis.net/def/crs/EPSG/0/32632"}, None),
        ({"bbox": [[5, 45, 8, 46]], "crs": "http://www.opengis.net/def/crs/EPSG/0/4326"}, None),  # lat first
        ({"bbox": [[5, 95, 8, 96]]}, None),
        ({"bbox": []}, None),
        ({"bbox": "5,45,8,46"}, None),
        ({"bbox": [None]}, None),
        ({}, None),
        ("everywhere", None),
    ],
)
def test_spatial_extent(spatial, box):
    assert spatial_extent(collection(spatial)) == box


def test_spatial_extent_of_what_is_no_collection():
    assert spatial_extent(None) is None
    assert spatial_extent({"extent": [1, 2]}) is None
    assert spatial_extent(json.loads('{"extent": {"spatial": null}}')) is None


@pytest.mark.parametrize(
    ("status", "body", "complete", "error", "message"),
    [
        (404, b'{"a": 1}', True, HTTPStatusError, "404"),
        (200, b'{"a": 1', False, MalformedContent, "cut at the size cap"),
        (200, b"[1, 2]", True, NotMine, "not a JSON object"),
        (200, b"<html>", True, NotMine, "not JSON"),
        (200, b"[" * 100_000, True, UnsafeContent, "nested too deeply"),
    ],
)
def test_response_object_refuses_what_is_no_whole_json_object(status, body, complete, error, message):
    answer = response("http://h/doc.json", body, status=status, complete=complete)
    with pytest.raises(error, match=message):
        response_object(answer, max_bytes=CAP, invalid=NotMine)


def test_response_object_of_a_good_answer():
    assert response_object(response("http://h/doc.json", b'{"a": 1}'), max_bytes=CAP, invalid=NotMine) == {
        "a": 1
    }
