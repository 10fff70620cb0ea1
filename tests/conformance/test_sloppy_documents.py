"""Sloppy services are still services: real capabilities documents, each served with one defect real servers
show, are found through the crawl's OGC detector with their type, their conformance level, the defects named,
and the title and boxes that could be read; decoys stay unreported.

The documents are real servers' answers captured from the local test web (MapServer 8, MapProxy, PyWPS;
tests/data/capabilities). Each defect is made by one named edit of such a document, so the reading of the
sound document is the reference for what the sloppy one must still give.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from geoweb.models import Conformance
from tests.unit.test_ogc_detector import FakeWeb, detect, response

CAPTURED = Path(__file__).resolve().parents[1] / "data" / "capabilities"
URL = "http://example.org/cgi-bin/mapserv?map=regions"
INSPIRE = (
    "<inspire_vs:ExtendedCapabilities><inspire_common:ResourceLocator><inspire_common:URL>"
    "http://example.org/metadata</inspire_common:URL></inspire_common:ResourceLocator>"
    "<inspire_common:ResponseLanguage><inspire_common:Language>ger</inspire_common:Language>"
    "</inspire_common:ResponseLanguage></inspire_vs:ExtendedCapabilities>"
)


def captured(name: str) -> bytes:
    return (CAPTURED / name).read_bytes()


def sub(pattern: str, replacement: str, document: str) -> str:
    """``document`` with ``pattern`` replaced once at least: an edit that matches nothing is a broken test."""
    edited, count = re.subn(pattern, replacement, document, flags=re.S)
    assert count, f"{pattern!r} is not in the document"
    return edited


def found(body: bytes):
    """What the crawl's detector reports for ``body`` served at a MapServer URL, the other types' probes
    answering 404."""
    resources = detect(response(URL, body), FakeWeb().context())
    assert len(resources) <= 1
    return resources[0] if resources else None


def boxes(resource) -> dict:
    return {d.name: d.bbox for d in resource.datasets}


def text(name: str) -> str:
    return captured(name).decode("utf-8")


# name -> (document, its edit, the defects it must name (their starts), whether OWSLib still reads it)
SLOPPY = {
    "WMS 1.3.0 without Capability/Request": (
        "mapserver_wms_130.xml",
        lambda d: sub(r"<Request>.*?</Request>", "", d),
        ["no Capability/Request section"],
        False,
    ),
    "WMS 1.1.1 without Capability/Request": (
        "mapserver_wms_111.xml",
        lambda d: sub(r"<Request>.*?</Request>", "", d),
        ["no Capability/Request section"],
        False,
    ),
    "INSPIRE extended capabilities, prefixes undeclared": (
        "mapserver_wms_130.xml",
        lambda d: sub(r"<Capability>", "<Capability>" + INSPIRE, d),
        ["namespace prefixes used but not declared: inspire_vs, inspire_common"],
        True,
    ),
    "decimal commas in EX_GeographicBoundingBox": (
        "mapserver_wms_130.xml",
        lambda d: sub(r"(Bound(?:Longitude|Latitude)>-?\d+)\.(\d+)", r"\1,\2", d),
        ["decimal commas in bounding boxes"],
        True,
    ),
    "decimal commas in LatLonBoundingBox": (
        "mapserver_wms_111.xml",
        lambda d: sub(r'(min[xy]="-?\d+)\.(\d+)', r"\1,\2", d),
        ["decimal commas in bounding boxes"],
        True,
    ),
    "WFS 2.0 without OperationsMetadata": (
        "mapserver_wfs_200.xml",
        lambda d: sub(r"<ows:OperationsMetadata>.*?</ows:OperationsMetadata>", "", d),
        ["no OperationsMetadata section"],
        False,
    ),
    "WCS 2.0 without OperationsMetadata": (
        "mapserver_wcs_201.xml",
        lambda d: sub(r"<ows:OperationsMetadata>.*?</ows:OperationsMetadata>", "", d),
        ["no OperationsMetadata section"],
        False,
    ),
    "WMTS without OperationsMetadata": (
        "mapproxy_wmts_100_kvp.xml",
        lambda d: sub(r"<ows:OperationsMetadata>.*?</ows:OperationsMetadata>", "", d),
        ["no OperationsMetadata section"],
        True,
    ),
    "WFS 1.0 without its namespace": (
        "mapserver_wfs_100.xml",
        lambda d: sub(r'\s+xmlns="http://www.opengis.net/wfs"', "", d),
        ["root element WFS_Capabilities without its namespace"],
        False,
    ),
    "WMS 1.3.0 namespace with version 1.1.1": (
        "mapserver_wms_130.xml",
        lambda d: sub(r'version="1.3.0"', 'version="1.1.1"', d),
        ["version attribute 1.1.1 where the namespace says 1.3.0"],
        True,
    ),
    "byte-order mark and blank lines before the declaration": (
        "mapproxy_wms_130.xml",
        lambda d: "\ufeff\n\n  " + d,
        [],
        True,
    ),
}


@pytest.mark.parametrize("name", SLOPPY)
def test_a_sloppy_document_is_a_service_with_its_defects_named(name):
    file, edit, defects, owslib_reads = SLOPPY[name]
    sound = found(captured(file))
    resource = found(edit(text(file)).encode("utf-8"))
    assert sound.conformance == Conformance.CONFORMANT and sound.defects == []
    assert (resource.type, resource.version) == (sound.type, sound.version)
    assert resource.conformance == (Conformance.READABLE if defects else Conformance.CONFORMANT)
    assert len(resource.defects) == len(defects)
    for defect, expected in zip(resource.defects, defects, strict=True):
        assert defect.startswith(expected)
    assert (resource.owslib_error is None) == owslib_reads
    assert resource.title == sound.title
    assert boxes(resource) == boxes(sound)
    assert resource.bbox == sound.bbox


def test_an_abstract_in_iso_8859_1_under_a_utf_8_declaration_is_read_as_written():
    document = sub(r"<Abstract>[^<]*</Abstract>", "<Abstract>Données géographiques à Zürich</Abstract>",
                   text("mapserver_wms_130.xml"))  # fmt: skip
    resource = found(document.encode("latin-1"))
    assert resource.conformance == Conformance.READABLE
    assert resource.defects == ["bytes that are not UTF-8 under a UTF-8 declaration, read as Windows-1252"]
    assert resource.abstract == "Données géographiques à Zürich"
    assert len(resource.datasets) == 4


def test_entities_of_an_external_dtd_that_is_not_read_become_their_characters():
    document = sub(r"<Title>Regions of the test web</Title>", "<Title>Regions&nbsp;of the test web</Title>",
                   text("mapserver_wms_111.xml"))  # fmt: skip
    resource = found(document.encode())
    assert resource.conformance == Conformance.READABLE
    assert resource.defects == ["entities of a DTD that is not read: &nbsp;"]
    assert resource.title == "Regions\xa0of the test web"
    assert resource.owslib_error is None


def test_a_minimal_wms_with_a_title_and_one_layer_is_readable():
    body = b"""<?xml version="1.0" encoding="UTF-8"?>
    <WMS_Capabilities version="1.3.0" xmlns="http://www.opengis.net/wms"><Service><Title>Rivers</Title></Service>
    <Capability><Layer><Name>rivers</Name><Title>Rivers of Europe</Title><EX_GeographicBoundingBox>
    <westBoundLongitude>-10.5</westBoundLongitude><eastBoundLongitude>30</eastBoundLongitude>
    <southBoundLatitude>35</southBoundLatitude><northBoundLatitude>70</northBoundLatitude>
    </EX_GeographicBoundingBox></Layer></Capability></WMS_Capabilities>"""
    resource = found(body)
    assert (resource.type, resource.version, resource.conformance) == ("WMS", "1.3.0", Conformance.READABLE)
    assert resource.defects == ["no Capability/Request section"]
    assert resource.owslib_error.startswith("OWSLib's WMS reader cannot read it: TypeError")
    assert resource.title == "Rivers"
    assert [(d.name, d.title, d.bbox) for d in resource.datasets] == [
        ("rivers", "Rivers of Europe", (-10.5, 35.0, 30.0, 70.0))
    ]


def test_a_wms_without_its_service_section_keeps_its_layers_and_no_title():
    resource = found(sub(r"<Service>.*?</Service>", "", text("mapserver_wms_130.xml")).encode())
    assert resource.conformance == Conformance.READABLE
    assert resource.defects == ["no Service section"]
    assert resource.title is None
    assert boxes(resource) == boxes(found(captured("mapserver_wms_130.xml")))


def test_a_truncated_document_gives_its_whole_layers_and_never_a_cut_value():
    sound = found(captured("mapserver_wms_111.xml"))
    document = text("mapserver_wms_111.xml")
    last_layer = document.rindex("<Layer")
    cut = document.index("<LatLonBoundingBox", last_layer) + len('<LatLonBoundingBox minx="-1')
    resource = found(document[:cut].encode())
    assert resource.conformance == Conformance.READABLE
    assert resource.defects == ["document cut short: read up to the Layer element it ends in, left out"]
    assert resource.title == sound.title
    # the layer cut in its box is left out, rather than given its parent's box as if it had none
    assert boxes(resource) == {
        name: box for name, box in boxes(sound).items() if name != sound.datasets[-1].name
    }


def test_a_document_with_nothing_but_its_root_is_identified():
    resource = found(b'<WMS_Capabilities xmlns="http://www.opengis.net/wms" version="1.3.0"/>')
    assert (resource.type, resource.version, resource.conformance) == ("WMS", "1.3.0", Conformance.IDENTIFIED)
    assert resource.defects == ["no Service section", "no Capability section"]
    assert (resource.title, resource.datasets, resource.bbox) == (None, [], None)


DECOYS = {
    "HTML page answering 200": b"<!DOCTYPE html><html><head><title>WMS</title></head><body>Map</body></html>",
    "XHTML page": b'<html xmlns="http://www.w3.org/1999/xhtml"><head><title>WMS_Capabilities</title></head></html>',
    "WMS exception report": b'<?xml version="1.0"?><ServiceExceptionReport version="1.3.0" '
    b'xmlns="http://www.opengis.net/ogc"><ServiceException code="LayerNotDefined">no</ServiceException>'
    b"</ServiceExceptionReport>",
    "OWS exception report": b'<ows:ExceptionReport xmlns:ows="http://www.opengis.net/ows/1.1" version="2.0.0">'
    b'<ows:Exception exceptionCode="OperationNotSupported"/></ows:ExceptionReport>',
    "WMS root in a foreign namespace": b'<WMS_Capabilities xmlns="http://example.com/wms" version="1.3.0"/>',
    "Capabilities without a namespace": b'<Capabilities version="1.0.0"><Contents/></Capabilities>',
    "root start tag cut short": b'<WMT_MS_Capabilities version="1.1',
}


@pytest.mark.parametrize("name", DECOYS)
def test_decoys_stay_unreported(name):
    assert found(DECOYS[name]) is None
