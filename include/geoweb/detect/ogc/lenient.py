"""Sloppy capabilities documents: the defects that keep a service from being conformant, and a tolerant
reading of what OWSLib cannot read.

Real servers leave out sections the schema requires, write decimal commas in their boxes or drop the
namespace; their documents still name a service, its title and its layers. ``defects`` names what a
document lacks and repairs in the tree what can be repaired before OWSLib reads it (decimal commas);
``describe`` reads title, abstract, keywords, provider and datasets by element names in any namespace, for
the documents OWSLib's reader fails on. Nothing is guessed: a box that cannot be read is None, and so is a
title.
"""

from __future__ import annotations

import re

from lxml import etree

from geoweb.detect.ogc.common import Description, Items, corner_bbox, lat_first, listed_bbox
from geoweb.models import BBox, Dataset
from geoweb.values import one_line, stripped, words

# Sections the standards require, in the two shapes capabilities documents have; a section whose parent is
# missing is not named again.
CLASSIC_ROOTS = ("WMT_MS_Capabilities", "WMS_Capabilities", "WCS_Capabilities")  # and WFS 1.0
CLASSIC_SECTIONS = ("Service", "Capability", "Capability/Request")
OWS_SECTIONS = ("ServiceIdentification", "OperationsMetadata")  # OWS Common (WFS 1.1 on, WMTS, WPS...)

# Where boxes hold numbers: element texts, and the minx... attributes of the WMS and WFS 1.0 boxes.
_BOX_TEXTS = ("westBoundLongitude", "eastBoundLongitude", "southBoundLatitude", "northBoundLatitude",
              "LowerCorner", "UpperCorner", "lowerCorner", "upperCorner", "pos")  # fmt: skip
_BOX_ATTRIBUTES = ("LatLonBoundingBox", "LatLongBoundingBox", "BoundingBox")
_CORNERS = ("minx", "miny", "maxx", "maxy")
_DECIMAL_COMMA = re.compile(r"(?<=\d),(?=\d)")


def _path(section: str) -> str:
    return "/".join("{*}" + part for part in section.split("/"))


def missing_sections(root: etree._Element) -> list[str]:
    """The required sections a capabilities document leaves out, as defects."""
    classic = etree.QName(root).localname in CLASSIC_ROOTS or any(
        root.find(_path(s)) is not None for s in CLASSIC_SECTIONS[:2]
    )
    missing: list[str] = []
    for section in CLASSIC_SECTIONS if classic else OWS_SECTIONS:
        parent = section.rpartition("/")[0]
        if parent not in missing and root.find(_path(section)) is None:
            missing.append(section)
    return [f"no {section} section" for section in missing]


def _decimal_points(value: str | None) -> str | None:
    """``value`` with its decimal commas made points, where it has commas between digits and no point."""
    if value and "," in value and "." not in value:
        return _DECIMAL_COMMA.sub(".", value)
    return value


def repair_decimal_commas(root: etree._Element) -> list[str]:
    """Make the decimal commas of the document's boxes points, in place; the defect, if there was one."""
    repaired = False
    for elem in root.iter(*("{*}" + name for name in _BOX_TEXTS)):
        fixed = _decimal_points(elem.text)
        if fixed != elem.text:
            elem.text, repaired = fixed, True
    for elem in root.iter(*("{*}" + name for name in _BOX_ATTRIBUTES)):
        for corner in _CORNERS:
            value = elem.get(corner)
            fixed = _decimal_points(value)
            if fixed != value:
                elem.set(corner, fixed)
                repaired = True
    return ["decimal commas in bounding boxes, read as decimal points"] if repaired else []


# --- the tolerant reading ---------------------------------------------------------------------------------


def _text(elem: etree._Element | None, paths: tuple[str, ...]) -> str | None:
    """The stripped text of the first of ``paths`` (child paths, or ``@attribute``) that has one."""
    if elem is None:
        return None
    for path in paths:
        if path.startswith("@"):
            value = stripped(elem.get(path[1:]))
        else:
            node = elem.find(path)
            value = None if node is None else stripped(node.text)
        if value:
            return value
    return None


def _keywords(elem: etree._Element | None) -> list[str]:
    """Keywords in any of the standards' shapes: KeywordList/Keyword, Keywords/Keyword, keywords/keyword,
    and WFS 1.0's one Keywords text split at commas or semicolons."""
    if elem is None:
        return []
    found = [k.text for k in elem.iterfind("{*}KeywordList/{*}Keyword")]
    found += [k.text for k in elem.iterfind("{*}Keywords/{*}Keyword")]
    found += [k.text for k in elem.iterfind("{*}keywords/{*}keyword")]
    for text_only in elem.iterfind("{*}Keywords"):
        if len(text_only) == 0 and text_only.text:
            found += re.split(r"[,;]", text_only.text)
    return words(found)


def _geographic(box: etree._Element) -> BBox | None:
    sides = ("westBoundLongitude", "southBoundLatitude", "eastBoundLongitude", "northBoundLatitude")
    return listed_bbox(_text(box, ("{*}" + side,)) for side in sides)


def _corners(box: etree._Element) -> BBox | None:
    return listed_bbox(box.get(corner) for corner in _CORNERS)


def _lower_upper(box: etree._Element) -> BBox | None:
    return corner_bbox(_text(box, ("{*}LowerCorner",)), _text(box, ("{*}UpperCorner",)), lat_first=False)


def _positions(box: etree._Element) -> BBox | None:
    positions = box.findall("{*}pos")
    return corner_bbox(positions[0].text, positions[1].text, lat_first=False) if len(positions) == 2 else None


# The boxes the standards state in WGS84 degrees, longitude first, by element name.
WGS84_BOXES = {
    "EX_GeographicBoundingBox": _geographic,  # WMS 1.3
    "LatLonBoundingBox": _corners,  # WMS 1.0-1.1
    "LatLongBoundingBox": _corners,  # WFS 1.0
    "WGS84BoundingBox": _lower_upper,  # OWS Common
    "lonLatEnvelope": _positions,  # WCS 1.0
}


def unreadable_boxes(root: etree._Element) -> list[str]:
    """The defect of WGS84 boxes that are no boxes in degrees (projected metres, missing corners): they are
    left out, and say so."""
    unread = sum(1 for box in root.iter(*("{*}" + n for n in WGS84_BOXES)) if _wgs84(box) is None)
    return [f"WGS84 bounding boxes not in degrees, left out: {unread}"] if unread else []


def _wgs84(box: etree._Element) -> BBox | None:
    return WGS84_BOXES[etree.QName(box).localname](box)


def _own_box(elem: etree._Element) -> BBox | None:
    """The WGS84 box an element states itself, in any of the standards' forms (an SOS offering's envelope
    where its CRS is WGS84); None where there is none or it cannot be read."""
    for name in WGS84_BOXES:
        box = elem.find("{*}" + name)
        if box is not None:
            return _wgs84(box)
    envelope = elem.find("{*}boundedBy/{*}Envelope")
    order = None if envelope is None else lat_first(envelope.get("srsName"))
    if order is not None:
        lower, upper = _text(envelope, ("{*}lowerCorner",)), _text(envelope, ("{*}upperCorner",))
        return corner_bbox(lower, upper, lat_first=order)
    return None


def _box(elem: etree._Element) -> BBox | None:
    """An element's box, or the nearest enclosing element's of the same kind (a WMS layer inherits its
    parent layer's)."""
    while elem is not None:
        box = _own_box(elem)
        if box is not None:
            return box
        parent = elem.getparent()
        elem = (
            parent
            if parent is not None and etree.QName(parent).localname == etree.QName(elem).localname
            else None
        )
    return None


def describe(root: etree._Element, items: Items) -> Description:
    """What a capabilities document says of its service and datasets, read by element names in any
    namespace: for the documents OWSLib cannot read."""
    service = root.find("{*}Service")
    if service is None:
        service = root.find("{*}ServiceIdentification")
    provider = _text(root, ("{*}ServiceProvider/{*}ProviderName",)) or _text(
        service,
        ("{*}ContactInformation/{*}ContactPersonPrimary/{*}ContactOrganization",
         "{*}responsibleParty/{*}organisationName"),
    )  # fmt: skip
    datasets = [
        Dataset(
            name=_text(elem, items.name),
            title=one_line(_text(elem, items.title)),
            bbox=_box(elem),
            keywords=_keywords(elem),
        )
        for path in items.paths
        for elem in root.iterfind(path)
    ]
    return Description(
        title=one_line(_text(service, ("{*}Title", "{*}label"))),
        abstract=_text(service, ("{*}Abstract", "{*}description")),
        keywords=_keywords(service),
        provider=provider,
        datasets=datasets,
    )
