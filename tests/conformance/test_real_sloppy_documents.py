"""Sloppy documents as other projects publish them: capabilities documents from the test data of OWSLib,
MapServer's msautotest, GDAL's autotest and QGIS (tests/data/sloppy, source and licence in its README), read
through the crawl's OGC detector. Each case asserts the type and version, the conformance level, the defects
named, and the title and boxes read; the boxes expected were read by hand from the documents. Some defects are
as published, others are made by one named edit of a sound document. Exception reports and an HTML page from
the same projects stay unreported.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from geoweb.models import Conformance
from tests.unit.test_ogc_detector import FakeWeb, detect, response

SLOPPY = Path(__file__).resolve().parents[1] / "data" / "sloppy"
URL = "http://example.org/cgi-bin/mapserv?map=regions"
CGI_HEADER = re.compile(rb"(?:[A-Za-z-]+: [^\r\n]*\r?\n)+\r?\n")


def served(name: str) -> bytes:
    """The body of ``name``: msautotest's expected files start with the CGI program's header lines, which a
    web server turns into HTTP headers."""
    body = (SLOPPY / name).read_bytes()
    header = CGI_HEADER.match(body)
    return body[header.end() :] if header else body


def sub(pattern: bytes, replacement: bytes, document: bytes) -> bytes:
    """``document`` with ``pattern`` replaced: an edit that matches nothing is a broken test."""
    edited, count = re.subn(pattern, replacement, document, flags=re.S)
    assert count, f"{pattern!r} is not in the document"
    return edited


def cut_in_third_box(document: bytes) -> bytes:
    """The document cut short inside the UpperCorner of its third feature type (bebouwing)."""
    at = document.index(b"<ows:UpperCorner>", document.index(b"<Name>bebouwing</Name>"))
    return document[: at + len(b"<ows:UpperCorner>7.27")]


def found(body: bytes):
    """What the crawl's detector reports for ``body`` served with status 200 at a MapServer URL, the other
    types' probes answering 404."""
    resources = detect(response(URL, body), FakeWeb().context())
    assert len(resources) <= 1
    return resources[0] if resources else None


def union(boxes) -> tuple[float, float, float, float] | None:
    known = [b for b in boxes if b is not None]
    if not known:
        return None
    return (
        min(b[0] for b in known),
        min(b[1] for b in known),
        max(b[2] for b in known),
        max(b[3] for b in known),
    )


HSRS_EUROPE = (-73.2634725607418, -21.3428428333117, 120.131330581725, 83.6274190882078)
SWISS = (5.01393, 45.356, 11.4774, 48.3001)
NL = (3.20018847986592, 50.7175338039051, 7.2735430151281, 53.5582047896104)
PROVINCE = (-66.724329, 41.770508, -57.72168, 48.477314)
ROAD_AREA = (-66.6333, 42.3821, -59.2921, 48.2955)
ROAD_LINK = (-66.633318, 42.382054, -59.292114, 48.295512)
QGIS_LAYERS = {n: SWISS for n in ("test", "agri_zones", "cadastre", "buildings", "land_surveing_parcels")}
INSPIRE_LAYERS = {
    "TN.RoadTransportNetwork.RoadArea": ROAD_AREA,
    "TN.RoadTransportNetwork.RoadLink": ROAD_LINK,
    # no box of its own: its parent RoadArea's
    "TN.CommonTransportElements.TransportLink": ROAD_AREA,
    "TN.RailTransportNetwork.RailwayLink": ROAD_LINK,
    "TN.AirTransportNetwork.AirLink": ROAD_LINK,
}
INSPIRE_GER = "mapserver_wms_inspire_scenario1_cap130_ger.xml"
CRYOSPHERE = "owslib_mapserver-wfs-cap.xml"
# its 25 feature types, each with a LatLongBoundingBox in EPSG:3031 metres: no box can be read
CRYOSPHERE_LAYERS = {
    name.decode(): None for name in re.findall(rb"<FeatureType>\s*<Name>([^<]+)</Name>", served(CRYOSPHERE))
}

# name -> (file, edit or None, type, version, defects (their starts), title, {dataset: box})
CASES = {
    "WFS 1.1.0 in windows-1250": (
        "owslib_wfs_HSRS_GetCapabilities_1_1_0.xml",
        None,
        "WFS",
        "1.1.0",
        [],
        "Help Service Gazeteer",
        {
            "nuts1": HSRS_EUROPE,
            "states": (-180.0, -89.9, 180.0, 83.674733),
            "nuts2": HSRS_EUROPE,
            "nuts3": HSRS_EUROPE,
            "orp": (12.0971913568792, 48.5542371331248, 18.858466675767, 51.055771864485),
            "okresy": (12.0971913568792, 48.5542371331248, 18.858297034807, 51.055771864485),
            "sidla": (12.0696013961853, 48.529730261414, 18.973334328945, 51.0387911057136),
            "kraje": (12.0977321962419, 48.5542371331248, 18.8505002447346, 51.0551785667194),
        },
    ),
    "WMTS without a service title": (
        "owslib_sfs-wmts-cap-world.xml",
        None,
        "WMTS",
        "1.0.0",
        [],
        None,
        {
            "World": (-179.99999999999997, -90.0, 179.296876953125, 83.62700000000001),
            "Ocean": (-179.99999999999997, -85.583, 179.296876953125, 89.946),
        },
    ),
    "WFS 1.0 without its namespace, boxes in metres": (
        CRYOSPHERE,
        lambda d: sub(rb'\s+xmlns="http://www.opengis.net/wfs"', b"", d),
        "WFS",
        "1.0.0",
        [
            "root element WFS_Capabilities without its namespace",
            "WGS84 bounding boxes not in degrees, left out: 25",
        ],
        "Atlas of the Cryosphere: Southern Hemisphere",
        CRYOSPHERE_LAYERS,
    ),
    "WFS 2.0 answering sections=FeatureTypeList": (
        "mapserver_wfs_200_caps_sections_feature_type_list.xml",
        None,
        "WFS",
        "2.0.0",
        ["no ServiceIdentification section", "no OperationsMetadata section"],
        None,
        {"ms:province": PROVINCE},
    ),
    "WCS 2.0 answering sections=Contents": (
        "mapserver_wcs_20_cap_sections_contents.xml",
        None,
        "WCS",
        "2.0.1",
        ["no ServiceIdentification section", "no OperationsMetadata section"],
        None,
        {"grey": None},  # a CoverageSummary without a WGS84BoundingBox
    ),
    "WCS 1.1 with its service sections only": (
        "mapserver_wcs11_caps_section2.xml",
        None,
        "WCS",
        "1.1.1",
        ["no OperationsMetadata section"],
        "First Test Service",
        {},
    ),
    "INSPIRE WMS 1.3.0 in German": (
        INSPIRE_GER,
        None,
        "WMS",
        "1.3.0",
        [],
        "myservicetitleger",
        INSPIRE_LAYERS,
    ),
    "INSPIRE WMS 1.3.0, prefixes undeclared": (
        INSPIRE_GER,
        lambda d: sub(rb'\s+xmlns:inspire_\w+="[^"]*"', b"", d),
        "WMS",
        "1.3.0",
        ["namespace prefixes used but not declared: inspire_vs, inspire_common"],
        "myservicetitleger",
        INSPIRE_LAYERS,
    ),
    "INSPIRE WFS 2.0 with an empty title": (
        "mapserver_wfs_200_insipire_missing_md_caps.xml",
        None,
        "WFS",
        "2.0.0",
        [],
        None,
        {"ms:province": PROVINCE},
    ),
    "WFS 1.1 after a byte-order mark and a blank line": (
        "gdal_wfs_get_capabilities.xml",
        lambda d: b"\xef\xbb\xbf\r\n" + d,
        "WFS",
        "1.1.0",
        [],
        "Overzichtskaart NL",
        {"rijkswegen": NL, "vaarwegen": NL, "bebouwing": NL, "NL-prov": NL},
    ),
    "WFS 1.1 cut short in a box": (
        "gdal_wfs_get_capabilities.xml",
        cut_in_third_box,
        "WFS",
        "1.1.0",
        [
            "document cut short: read up to the UpperCorner element it ends in",
            "WGS84 bounding boxes not in degrees, left out: 1",  # the one it was cut in
        ],
        "Overzichtskaart NL",
        # the cut box is left out, never read as half a box; the feature types after the cut are not there
        {"rijkswegen": NL, "vaarwegen": NL, "bebouwing": None},
    ),
    "WMS 1.3.0 with an inherited box": (
        "qgis_GetCapabilities.xml",
        None,
        "WMS",
        "1.3.0",
        [],
        "Test",
        QGIS_LAYERS,
    ),
    "WMS 1.3.0 with decimal commas": (
        "qgis_GetCapabilities.xml",
        lambda d: sub(rb"(Bound(?:Longitude|Latitude)>-?\d+)\.(\d+)", rb"\1,\2", d),
        "WMS",
        "1.3.0",
        ["decimal commas in bounding boxes, read as decimal points"],
        "Test",
        QGIS_LAYERS,
    ),
    "WMS 1.3.0 namespace with version 1.1.1": (
        "qgis_GetCapabilities.xml",
        lambda d: sub(rb'<WMS_Capabilities version="1.3.0"', b'<WMS_Capabilities version="1.1.1"', d),
        "WMS",
        "1.3.0",
        ["version attribute 1.1.1 where the namespace says 1.3.0"],
        "Test",
        QGIS_LAYERS,
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_a_real_sloppy_document_is_a_service_with_its_defects_named(name):
    file, edit, type_, version, defects, title, boxes = CASES[name]
    body = served(file)
    resource = found(edit(body) if edit else body)
    assert (resource.type, resource.version) == (type_, version)
    assert resource.conformance == (Conformance.READABLE if defects else Conformance.CONFORMANT)
    assert len(resource.defects) == len(defects), resource.defects
    for defect, expected in zip(resource.defects, defects, strict=True):
        assert defect.startswith(expected)
    assert resource.title == title
    assert {d.name: d.bbox for d in resource.datasets} == boxes
    assert resource.bbox == union(boxes.values())


def test_wms_1_0_0_gives_its_title_and_layers():
    resource = found(served("mapserver_wms_cap100.xml"))
    assert (resource.type, resource.version) == ("WMS", "1.0.0")
    assert resource.conformance == Conformance.READABLE
    assert resource.owslib_error is not None
    assert resource.title == "Test simple wms"
    assert {d.name: (d.title, d.bbox) for d in resource.datasets} == {
        "WMS_TEST": ("My Layers", (-67.5725, 42.0, -58.9275, 48.5)),
        "road": ("road", (-66.633318, 42.382054, -59.292114, 48.295512)),
    }


def test_wms_1_0_0_names_why_it_is_only_readable():
    resource = found(served("mapserver_wms_cap100.xml"))
    assert resource.conformance == Conformance.READABLE
    assert resource.defects == ["not readable by OWSLib's WMS reader"]


def test_a_wfs_1_0_with_boxes_in_metres_gives_no_box():
    resource = found(served(CRYOSPHERE))
    assert (resource.type, resource.version) == ("WFS", "1.0.0")
    assert resource.title == "Atlas of the Cryosphere: Southern Hemisphere"
    assert len(CRYOSPHERE_LAYERS) == 25
    assert {d.name: d.bbox for d in resource.datasets} == CRYOSPHERE_LAYERS
    assert resource.bbox is None


def test_a_wfs_1_0_with_boxes_in_metres_names_the_boxes_left_out():
    resource = found(served(CRYOSPHERE))
    assert resource.conformance == Conformance.READABLE
    assert resource.defects == ["WGS84 bounding boxes not in degrees, left out: 25"]


DECOYS = [
    "mapserver_wms_exception130.xml",
    "mapserver_wfs_200_cite_exception_no_service.xml",
    "mapserver_wms_get_feature_info_vector.html",
]


@pytest.mark.parametrize("file", DECOYS)
def test_decoys_served_with_status_200_stay_unreported(file):
    assert found(served(file)) is None
