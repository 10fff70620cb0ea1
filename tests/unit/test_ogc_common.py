import pytest
from lxml import etree

from geoweb.detect.ogc.common import (
    OGCExceptionReport,
    canonical_endpoint,
    capabilities_url,
    checked_bbox,
    corner_bbox,
    exception_report,
    lat_first,
    listed_bbox,
    owslib_dataset,
    points_to_endpoint,
)
from geoweb.values import stripped, words


@pytest.mark.parametrize(
    ("url", "endpoint"),
    [
        ("http://h/wms?SERVICE=WMS&Request=GetCapabilities&VERSION=1.3.0", "http://h/wms"),
        (
            "http://h/cgi-bin/mapserv?map=/maps/x.map&service=WFS&request=GetCapabilities&lang=fr",
            "http://h/cgi-bin/mapserv?map=/maps/x.map&lang=fr",
        ),
        (
            "http://h/ows?acceptVersions=2.0.0&sections=All&updateSequence=3&AcceptFormats=text/xml",
            "http://h/ows",
        ),
        ("HTTP://Host.Example.ORG/Path/WMS?Service=WMS#frag", "http://host.example.org/Path/WMS"),
        ("http://h/ows?&map=a%20b&&service=WMS&", "http://h/ows?map=a%20b"),
        ("http://h/ows?ser%76ice=WMS&x=1", "http://h/ows?x=1"),  # keys compared decoded
        ("http://User:PW@H/ows?service=WMS", "http://User:PW@h/ows"),
        ("http://h/wms", "http://h/wms"),
    ],
)
def test_canonical_endpoint(url, endpoint):
    assert canonical_endpoint(url) == endpoint


def test_capabilities_url_keeps_endpoint_parameters():
    assert capabilities_url("http://h/mapserv?map=x.map", "WFS") == (
        "http://h/mapserv?map=x.map&service=WFS&request=GetCapabilities"
    )
    assert capabilities_url("http://h/ows", "SOS") == "http://h/ows?service=SOS&request=GetCapabilities"


@pytest.mark.parametrize(
    "url",
    [
        "http://h/page?SERVICE=WMS",
        "http://h/page?Request=GetMap",
        "http://h/geoserver/wms",
        "http://h/geoserver/topp/ows",
        "http://h/cgi-bin/mapserv?map=x.map",
        "http://h/cgi-bin/qgis_mapserv.fcgi",
        "http://h/arcgis/services/Base/MapServer/WMSServer",
        "http://h/arcgis/services/Elev/ImageServer/WCSServer",
        "http://h/cgi-bin/wms/nexrad/n0r.cgi",
        "http://h/wms.cgi",
        "http://h/deegree-webservices/services",
        "http://h/pycsw/csw.py",
        "http://h/52n-sos-webapp/service",
        "http://h/geonetwork/srv/eng/csw",
        "http://h/services/wmts/",
        "http://h/wps",
    ],
)
def test_endpoint_urls(url):
    assert points_to_endpoint(url)


@pytest.mark.parametrize(
    "url",
    [
        "http://h/",
        "http://h/news/2024/index.html",
        "http://h/data/parks.kml",
        "http://h/wmsconnector-help.html",
        "http://h/sosial/page",
        "http://h/page?services=all",
        "http://h/wms-tutorial-video",
        "http://h/blog/owsley-family.html",
    ],
)
def test_ordinary_urls(url):
    assert not points_to_endpoint(url)


@pytest.mark.parametrize(
    ("crs", "expected"),
    [
        ("EPSG:4326", True),
        ("urn:ogc:def:crs:EPSG::4326", True),
        ("urn:ogc:def:crs:EPSG:6.6:4326", True),
        ("http://www.opengis.net/def/crs/EPSG/0/4326", True),
        ("urn:ogc:def:crs:OGC:1.3:CRS84", False),
        ("http://www.opengis.net/def/crs/OGC/1.3/CRS84", False),
        ("CRS:84", False),
        ("EPSG:43260", None),
        ("EPSG:31370", None),
        ("", None),
        (None, None),
    ],
)
def test_lat_first(crs, expected):
    assert lat_first(crs) is expected


@pytest.mark.parametrize(
    ("box", "expected"),
    [
        ((-10.0, -5.0, 10.0, 5.0), (-10.0, -5.0, 10.0, 5.0)),
        ((-180.0, -90.0, 180.0, 90.0), (-180.0, -90.0, 180.0, 90.0)),
        ((float("nan"), 0.0, 1.0, 1.0), None),
        ((0.0, 0.0, float("inf"), 1.0), None),
        ((10.0, 0.0, -10.0, 1.0), None),  # min after max
        ((0.0, -91.0, 1.0, 1.0), None),
        ((-181.0, 0.0, 1.0, 1.0), None),
    ],
)
def test_checked_bbox(box, expected):
    assert checked_bbox(*box) == expected


def test_corner_bbox_axis_order():
    assert corner_bbox("41.9 -91.9", "47.2 -83.5", lat_first=True) == (-91.9, 41.9, -83.5, 47.2)
    assert corner_bbox("-91.9 41.9", "-83.5 47.2", lat_first=False) == (-91.9, 41.9, -83.5, 47.2)
    assert corner_bbox("-90.0 NaN", "90.0 128.0", lat_first=True) is None
    assert corner_bbox("1 2 3", "4 5", lat_first=False) is None
    assert corner_bbox("a b", "1 2", lat_first=False) is None
    assert corner_bbox(None, "1 2", lat_first=False) is None


def _xml(text: str) -> etree._Element:
    return etree.fromstring(text)


def test_listed_bbox_takes_numbers_or_texts():
    assert listed_bbox((-1, "2", 3.5, " 4 ")) == (-1.0, 2.0, 3.5, 4.0)
    assert listed_bbox((1, 2, 3)) is None
    assert listed_bbox((1, 2, None, 4)) is None
    assert listed_bbox(("x", 2, 3, 4)) is None
    assert listed_bbox((float("nan"), 2, 3, 4)) is None


def test_owslib_values_are_read_null_safe():
    assert stripped("  a ") == "a"
    assert [stripped(v) for v in ("", "  ", None, 3, ["a"])] == [None] * 5
    assert words([" a", None, "b", "a", "", 7, "c "]) == ["a", "b", "c"]
    assert words(None) == []


class _Layer:  # the attributes an OWSLib content object has, some missing or broken as real ones are
    title = " Roads "
    keywords = ["transport", None, " transport "]
    boundingBoxWGS84 = (-10.0, 40.0, 10.0, 95.0)  # north of the pole: no box


def test_owslib_dataset_checks_what_owslib_holds():
    roads = owslib_dataset(" roads ", _Layer(), tile_matrix_sets=["g"])
    assert (roads.name, roads.title, roads.keywords, roads.bbox) == ("roads", "Roads", ["transport"], None)
    assert roads.extra == {"tile_matrix_sets": ["g"]}
    bare = owslib_dataset("x", object())
    assert (bare.title, bare.keywords, bare.bbox) == (None, [], None)


@pytest.mark.parametrize(
    ("xml", "message"),
    [
        (
            '<ServiceExceptionReport version="1.1.1"><ServiceException code="LayerNotDefined">'
            "no such\n layer</ServiceException></ServiceExceptionReport>",
            "(LayerNotDefined): no such layer",
        ),
        (
            '<ServiceExceptionReport xmlns="http://www.opengis.net/ogc" version="1.3.0">'
            "<ServiceException>boom</ServiceException></ServiceExceptionReport>",
            "(no code): boom",
        ),
        (
            '<ows:ExceptionReport xmlns:ows="http://www.opengis.net/ows/1.1" version="2.0.0">'
            '<ows:Exception exceptionCode="MissingParameterValue" locator="service">'
            "<ows:ExceptionText>service is missing</ows:ExceptionText></ows:Exception></ows:ExceptionReport>",
            "(MissingParameterValue): service is missing",
        ),
        (
            '<ExceptionReport xmlns="http://www.opengis.net/ows"><Exception exceptionCode="OperationNotSupported"/>'
            "</ExceptionReport>",
            "(OperationNotSupported): no text",
        ),
        ('<ExceptionReport xmlns="http://www.opengis.net/ows/2.0"/>', "without an exception"),
    ],
)
def test_exception_reports(xml, message):
    report = exception_report(_xml(xml))
    assert isinstance(report, OGCExceptionReport)
    assert message in str(report)


@pytest.mark.parametrize(
    "xml",
    ['<ExceptionReport xmlns="http://example.com/errors"/>', "<WMT_MS_Capabilities/>", "<html/>"],
)
def test_not_exception_reports(xml):
    assert exception_report(_xml(xml)) is None
