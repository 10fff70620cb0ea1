"""Each correction and completion of ``geoweb.detect.ogc.adapter``, on the document it was found on: what
OWSLib alone makes of it, and what the crawl reports instead."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from owslib.wcs import WebCoverageService
from owslib.wfs import WebFeatureService

from geoweb.detect.ogc import read_capabilities
from tests.data.corpus import CAPABILITIES

REPO = Path(__file__).resolve().parents[2]
CAPTURED = REPO / "tests" / "data" / "capabilities"
URL = "http://h/ows"


def owslib(factory, version: str, body: bytes):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return factory(URL, version=version, xml=body)


def test_wfs_1_0_keywords_are_split_and_the_service_name_is_no_provider():
    body = (CAPTURED / "mapserver_wfs_100.xml").read_bytes()
    theirs = owslib(WebFeatureService, "1.0.0", body)
    assert len(theirs.identification.keywords) == 1 and "\n" in theirs.identification.keywords[0]
    assert theirs.provider.name == "MapServer WFS"  # the service's Name
    ours = read_capabilities(body, URL)
    assert ours.keywords == ["DEM", "administrative", "boundaries", "elevation", "hydrography", "meteorology"]
    assert ours.provider is None
    assert ours.datasets[0].keywords == ["boundaries", "administrative"]


def test_wfs_1_0_lat_long_boxes_are_taken_as_written():
    body = (CAPABILITIES / "wfs_dov_getcapabilities_100_nometadata.xml").read_bytes()
    [theirs] = owslib(WebFeatureService, "1.0.0", body).contents.values()
    # OWSLib reprojects the degrees as if they were Belgian Lambert metres: a box of a few metres
    assert theirs.boundingBoxWGS84[2] - theirs.boundingBoxWGS84[0] < 0.001
    [ours] = read_capabilities(body, URL).datasets
    assert ours.bbox == pytest.approx(theirs.boundingBox[:4])
    assert ours.bbox == pytest.approx((2.4986, 49.3590, 5.9593, 52.8196), abs=1e-4)


def test_wcs_1_1_0_written_with_ows_1_1_is_read_by_the_1_1_1_reader():
    body = (CAPTURED / "mapserver_wcs_110.xml").read_bytes()
    with pytest.raises(AttributeError):  # OWSLib's 1.1.0 reader finds no OWS 1.0 ServiceIdentification
        owslib(WebCoverageService, "1.1.0", body)
    ours = read_capabilities(body, URL)
    assert (ours.type, ours.version, ours.title) == ("WCS", "1.1.0", "Regions of the test web")
    assert [(d.name, d.bbox) for d in ours.datasets] == [("elevation", (6.0, 45.5, 10.0, 47.9))]


WCS20 = b"""<wcs:Capabilities xmlns:wcs="http://www.opengis.net/wcs/2.0" xmlns:ows="http://www.opengis.net/ows/2.0"
  xmlns:xlink="http://www.w3.org/1999/xlink" version="2.0.1">
  <ows:ServiceIdentification><ows:Title>Climate</ows:Title></ows:ServiceIdentification>
  <ows:ServiceProvider><ows:ProviderName>Met Office</ows:ProviderName></ows:ServiceProvider>
  <ows:OperationsMetadata><ows:Operation name="GetCapabilities"><ows:DCP><ows:HTTP>
    <ows:Get xlink:href="http://h/ows"/></ows:HTTP></ows:DCP></ows:Operation></ows:OperationsMetadata>
  <wcs:Contents><wcs:CoverageSummary><wcs:CoverageId>temp_2m</wcs:CoverageId>
    <ows:WGS84BoundingBox><ows:LowerCorner>-10 35</ows:LowerCorner><ows:UpperCorner>30 70</ows:UpperCorner>
    </ows:WGS84BoundingBox></wcs:CoverageSummary></wcs:Contents></wcs:Capabilities>"""


def test_wcs_2_0_summaries_keep_their_wgs84_box():
    [theirs] = owslib(WebCoverageService, "2.0.1", WCS20).contents.values()
    assert theirs.boundingBoxWGS84 is None  # OWSLib looks for a WCS 1.0 lonLatEnvelope
    [ours] = read_capabilities(WCS20, URL).datasets
    assert ours.bbox == (-10.0, 35.0, 30.0, 70.0)


def sos(srs: str, lower: str, upper: str) -> bytes:
    return f"""<sos:Capabilities xmlns:sos="http://www.opengis.net/sos/1.0" xmlns:ows="http://www.opengis.net/ows/1.1"
      xmlns:gml="http://www.opengis.net/gml" version="1.0.0">
      <ows:ServiceIdentification><ows:Title>Gauges</ows:Title></ows:ServiceIdentification>
      <ows:ServiceProvider><ows:ProviderName>Water board</ows:ProviderName></ows:ServiceProvider>
      <sos:Contents><sos:ObservationOfferingList><sos:ObservationOffering gml:id="gauges">
        <gml:name>River gauges</gml:name>
        <gml:boundedBy><gml:Envelope srsName="{srs}"><gml:lowerCorner>{lower}</gml:lowerCorner>
          <gml:upperCorner>{upper}</gml:upperCorner></gml:Envelope></gml:boundedBy>
      </sos:ObservationOffering></sos:ObservationOfferingList></sos:Contents></sos:Capabilities>""".encode()


@pytest.mark.parametrize(
    ("srs", "lower", "upper", "box"),
    [
        ("urn:ogc:def:crs:EPSG::4326", "41.9 -91.9", "47.2 -83.5", (-91.9, 41.9, -83.5, 47.2)),
        ("urn:ogc:def:crs:OGC:1.3:CRS84", "-91.9 41.9", "-83.5 47.2", (-91.9, 41.9, -83.5, 47.2)),
        ("EPSG:3857", "100000 200000", "300000 400000", None),  # metres: no WGS84 box
    ],
)
def test_sos_boxes_follow_their_crs(srs, lower, upper, box):
    # OWSLib swaps every envelope's axes (sos_52n_getcapabilities.xml is EPSG:4326, where that is right)
    [offering] = read_capabilities(sos(srs, lower, upper), URL).datasets
    assert (offering.name, offering.title, offering.bbox) == ("gauges", "River gauges", box)


def test_wps_2_0_which_owslib_cannot_read_is_completed():
    ours = read_capabilities((CAPTURED / "pywps_wps_200.xml").read_bytes(), URL)
    assert (ours.type, ours.version, ours.title, ours.provider) == (
        "WPS",
        "2.0.0",
        "Geoprocessing of the test web",
        "GeoWeb Test Agency",
    )
    assert [d.name for d in ours.datasets] == ["process.identifier"]  # PyWPS 4's 2.0 template, as served


@pytest.mark.parametrize("name", ["pycsw_csw_202.xml", "pycsw_csw_300.xml"])
def test_csw_capabilities_are_read_from_the_bytes_already_fetched(name):
    ours = read_capabilities((CAPTURED / name).read_bytes(), URL)
    assert (ours.type, ours.title, ours.provider) == (
        "CSW",
        "Catalogue of the test web",
        "GeoWeb Test Agency",
    )
