"""The OGC detector against a small in-memory web: what it classifies, when it probes, what it reports."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter

import pytest

from geoweb.detect import load_detector
from geoweb.detect.base import DetectContext
from geoweb.detect.ogc import OGCDetector
from geoweb.detect.ogc.csw import FIRST_RECORDS
from geoweb.errors import ConnectionFailed, HTTPStatusError
from geoweb.fetch.response import Response, Timing
from geoweb.models import OGC_TYPES, ProofFetch, resource_from_record
from geoweb.settings import Settings
from tests.data import corpus

OWS = 'xmlns:ows="http://www.opengis.net/ows/1.1" xmlns:xlink="http://www.w3.org/1999/xlink"'
GET = b'<DCPType><HTTP><Get><OnlineResource xmlns:xlink="http://www.w3.org/1999/xlink" xlink:href="http://h/"/></Get></HTTP>'
WMS_DOC = (
    b'<WMS_Capabilities xmlns="http://www.opengis.net/wms" version="1.3.0"><Service><Title>Maps</Title>'
    # A document that names another host: the resource stays where the document came from.
    b'<OnlineResource xmlns:xlink="http://www.w3.org/1999/xlink" xlink:href="http://elsewhere/wms"/></Service>'
    b"<Capability><Request><GetCapabilities>" + GET + b"</DCPType></GetCapabilities></Request>"
    b"<Layer><Name>roads</Name></Layer></Capability></WMS_Capabilities>"
)
OPERATIONS = (
    '<ows:OperationsMetadata><ows:Operation name="GetCapabilities"><ows:DCP><ows:HTTP>'
    '<ows:Get xlink:href="http://h/"/></ows:HTTP></ows:DCP></ows:Operation></ows:OperationsMetadata>'
)
WFS_DOC = (
    f'<WFS_Capabilities xmlns="http://www.opengis.net/wfs/2.0" {OWS} version="2.0.0">{OPERATIONS}'
    "<FeatureTypeList><FeatureType><Name>roads</Name><Title>Roads</Title></FeatureType></FeatureTypeList>"
    "</WFS_Capabilities>"
).encode()
WCS_DOC = (
    b'<WCS_Capabilities xmlns="http://www.opengis.net/wcs" version="1.0.0"><Service><label>Heights</label>'
    b"<fees>NONE</fees><accessConstraints>NONE</accessConstraints></Service>"
    b"<Capability><Request><GetCapabilities>" + GET + b"</DCPType></GetCapabilities></Request></Capability>"
    b"</WCS_Capabilities>"
)
SOS_DOC = (
    f'<sos:Capabilities xmlns:sos="http://www.opengis.net/sos/1.0" {OWS} version="1.0.0">'
    "<ows:ServiceIdentification><ows:Title>Sensors</ows:Title></ows:ServiceIdentification>"
    "<ows:ServiceProvider><ows:ProviderName>Network</ows:ProviderName></ows:ServiceProvider>"
    f"{OPERATIONS}</sos:Capabilities>"
).encode()
CSW_DOC = (
    f'<csw:Capabilities xmlns:csw="http://www.opengis.net/cat/csw/2.0.2" {OWS} version="2.0.2">'
    "<ows:ServiceIdentification><ows:Title>Catalogue</ows:Title></ows:ServiceIdentification></csw:Capabilities>"
).encode()
EXCEPTION_DOC = (
    b'<ows:ExceptionReport xmlns:ows="http://www.opengis.net/ows/1.1" version="2.0.0">'
    b'<ows:Exception exceptionCode="MissingParameterValue"><ows:ExceptionText>service</ows:ExceptionText>'
    b"</ows:Exception></ows:ExceptionReport>"
)
RSS_DOC = b'<?xml version="1.0"?><rss version="2.0"><channel><title>News</title></channel></rss>'


def response(url: str, body: bytes, content_type: str = "text/xml", final_url: str | None = None) -> Response:
    return Response(url, final_url or url, 200, {"content-type": content_type}, body)


class FakeWeb:
    """``ctx.fetch`` over a dict of URL -> body (or exception); unknown URLs answer 404. Records requests."""

    def __init__(self, pages: dict[str, bytes | Exception] | None = None):
        self.pages = pages or {}
        self.requested: list[str] = []
        self.caps: list[int | None] = []  # max_bytes of each request (None: the body cap)
        self.in_flight = self.most_in_flight = 0

    async def fetch(self, url: str, *, headers=None, max_bytes=None) -> Response:
        self.requested.append(url)
        self.caps.append(max_bytes)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        await asyncio.sleep(0.001)
        self.in_flight -= 1
        page = self.pages.get(url, HTTPStatusError(404, url=url))
        if isinstance(page, Exception):
            raise page
        return response(url, page)

    def context(self, types=OGC_TYPES, settings: Settings | None = None) -> DetectContext:
        seen: set[str] = set()

        def first_time(key: str) -> bool:
            new = key not in seen
            seen.add(key)
            return new

        return DetectContext(self.fetch, settings or Settings(), types, first_time, Counter())


def detect(resp: Response, ctx: DetectContext):
    return asyncio.run(OGCDetector().detect(resp, ctx))


def probe(endpoint: str, service: str) -> str:
    return f"{endpoint}{'&' if '?' in endpoint else '?'}service={service}&request=GetCapabilities"


def test_registered_under_its_short_name():
    detector = load_detector("ogc")
    assert isinstance(detector, OGCDetector)
    assert detector.types == OGC_TYPES


@pytest.mark.parametrize(
    ("resp", "accepted"),
    [
        (response("http://h/caps.xml", WMS_DOC), True),
        (response("http://h/caps", WMS_DOC, "application/vnd.ogc.wms_xml"), True),
        (response("http://h/file", b"<?xml version='1.0'?><r/>", "application/octet-stream"), True),
        (response("http://h/geoserver/wms", b"<html>login</html>", "text/html"), True),
        (response("http://h/page?service=WFS", b"", "image/png"), True),
        (response("http://h/index.html", b"<!DOCTYPE html><html></html>", "text/html"), False),
        (response("http://h/data.zip", b"PK\x03\x04", "application/zip"), False),
    ],
)
def test_accepts(resp, accepted):
    assert OGCDetector().accepts(resp) is accepted


def test_capabilities_at_a_plain_url_is_reported_at_its_final_url():
    web = FakeWeb()
    ctx = web.context(types=("WMS",))
    resp = response("http://h/old", WMS_DOC, final_url="http://h/maps/caps.xml?SERVICE=WMS&x=1#top")
    [wms] = detect(resp, ctx)
    assert (wms.url, wms.type, wms.version, wms.title) == (
        "http://h/maps/caps.xml?x=1",
        "WMS",
        "1.3.0",
        "Maps",
    )
    assert [d.name for d in wms.datasets] == ["roads"]
    assert web.requested == []  # WMS was the only type wanted, and it is found


class TimedWeb(FakeWeb):
    """A FakeWeb whose answers are timed, as the fetcher times every response."""

    async def fetch(self, url: str, *, headers=None, max_bytes=None) -> Response:
        answer = await super().fetch(url, headers=headers, max_bytes=max_bytes)
        answer.timing = Timing(0.25, 0.75, len(answer.body))
        return answer


def test_a_service_carries_its_measured_fetch_but_its_record_does_not():
    endpoint = "http://h/geoserver/ows"
    web = TimedWeb({probe(endpoint, "WFS"): WFS_DOC})
    resp = response(endpoint + "?service=WMS&request=GetCapabilities", WMS_DOC)
    resp.status, resp.timing = 203, Timing(0.125, 0.5, 4321)
    wms, wfs = detect(resp, web.context(types=("WMS", "WFS")))
    assert wms.proof == ProofFetch(203, 0.125, 0.5, 4321)
    assert wfs.proof == ProofFetch(200, 0.25, 0.75, len(WFS_DOC))  # the probe's own fetch
    record = wms.to_record()
    assert "proof" not in record and "ProofFetch" not in repr(record)
    assert resource_from_record(record).proof is None
    # an untimed response (not the fetcher's) proves the service all the same, unmeasured
    [untimed] = detect(response("http://h/caps.xml", WMS_DOC), FakeWeb().context(types=("WMS",)))
    assert untimed.proof is None


def test_non_capabilities_xml_away_from_endpoints_sends_nothing(caplog):
    web = FakeWeb()
    ctx = web.context()
    with caplog.at_level(logging.DEBUG, logger="geoweb.detect.ogc"):
        assert detect(response("http://h/news/feed.xml", RSS_DOC), ctx) == []
    assert web.requested == []
    assert "root element rss is no capabilities root" in caplog.text
    assert ctx.stats == {"ogc/not_capabilities": 1}


def test_capabilities_document_leads_to_probes_for_the_other_wanted_types():
    endpoint = "http://h/geoserver/ows"
    web = FakeWeb({probe(endpoint, "WFS"): WFS_DOC})
    ctx = web.context(types=("WMS", "WFS", "WCS"))
    found = detect(response(endpoint + "?service=WMS&request=GetCapabilities", WMS_DOC), ctx)
    assert [(r.type, r.url) for r in found] == [("WMS", endpoint), ("WFS", endpoint)]
    assert web.requested == [probe(endpoint, "WFS"), probe(endpoint, "WCS")]
    assert ctx.stats["ogc/probe"] == 2
    assert ctx.stats["ogc/probe_miss"] == 1  # WCS: 404


def test_an_endpoint_is_probed_once_per_run():
    endpoint = "http://h/geoserver/ows"
    web = FakeWeb()
    ctx = web.context(types=("WMS", "WFS"))
    detect(response(endpoint + "?service=WMS&request=GetCapabilities", WMS_DOC), ctx)
    detect(response(endpoint + "?REQUEST=GetCapabilities&SERVICE=WMS&VERSION=1.1.1", WMS_DOC), ctx)
    assert web.requested == [probe(endpoint, "WFS")]


def test_endpoint_answering_every_service_with_one_document_is_one_service():
    endpoint = "http://h/cgi-bin/wms"
    web = FakeWeb({probe(endpoint, t): WMS_DOC for t in OGC_TYPES})
    ctx = web.context()
    found = detect(response(endpoint, b"<html>a map viewer</html>", "text/html"), ctx)
    # Every type is asked for; every answer is the same WMS document.
    assert web.requested == [probe(endpoint, t) for t in OGC_TYPES]
    assert [(r.type, r.url) for r in found] == [("WMS", endpoint)]
    assert ctx.stats["ogc/probe_miss"] == 0


def test_mapserver_serving_four_services_yields_four_records_and_keeps_its_map_parameter():
    endpoint = "http://h/cgi-bin/mapserv?map=/srv/atlas.map"
    web = FakeWeb(
        {
            probe(endpoint, "WFS"): WFS_DOC,
            probe(endpoint, "WCS"): WCS_DOC,
            probe(endpoint, "SOS"): SOS_DOC,
            probe(endpoint, "WMTS"): EXCEPTION_DOC,
            probe(endpoint, "WPS"): ConnectionFailed(url="x"),
            probe(endpoint, "CSW"): b"<not xml",
        }
    )
    ctx = web.context()
    start = response(
        "http://h/cgi-bin/mapserv?map=/srv/atlas.map&SERVICE=WMS&REQUEST=GetCapabilities", WMS_DOC
    )
    found = detect(start, ctx)
    assert [(r.type, r.url) for r in found] == [(t, endpoint) for t in ("WMS", "WFS", "WCS", "SOS")]
    assert all("map=/srv/atlas.map" in url for url in web.requested)
    assert ctx.stats["ogc/probe_miss"] == 3


def test_exception_report_is_endpoint_evidence(caplog):
    web = FakeWeb({"http://h/service?service=WFS&request=GetCapabilities": WFS_DOC})
    ctx = web.context(types=("WFS",))
    with caplog.at_level(logging.INFO, logger="geoweb.detect.ogc"):
        [wfs] = detect(response("http://h/service", EXCEPTION_DOC), ctx)
    assert wfs.type == "WFS"
    assert "OGC exception report (MissingParameterValue): service" in caplog.text


def test_unwanted_types_are_neither_reported_nor_probed():
    endpoint = "http://h/geoserver/ows"
    web = FakeWeb({probe(endpoint, "WCS"): WCS_DOC})
    ctx = web.context(types=("WCS",))
    found = detect(response(endpoint + "?service=WMS", WMS_DOC), ctx)
    assert [r.type for r in found] == ["WCS"]
    assert web.requested == [probe(endpoint, "WCS")]


def test_probe_failures_are_counted_and_logged_never_raised(caplog):
    endpoint = "http://h/ows"
    web = FakeWeb({probe(endpoint, t): ConnectionFailed(url=endpoint) for t in OGC_TYPES})
    ctx = web.context()
    with caplog.at_level(logging.DEBUG, logger="geoweb.detect.ogc"):
        assert detect(response(endpoint, b"", "text/plain"), ctx) == []
    assert ctx.stats["ogc/probe_miss"] == len(OGC_TYPES)
    assert caplog.text.count("missed (connection)") == len(OGC_TYPES)


def test_probes_go_one_at_a_time_under_the_body_cap_and_a_type_found_is_not_asked_again():
    endpoint = "http://h/cgi-bin/mapserv?map=/srv/a.map"
    web = FakeWeb({probe(endpoint, "WMS"): WFS_DOC, probe(endpoint, "WCS"): WCS_DOC})
    found = detect(response(endpoint, b"<html>a map viewer</html>", "text/html"), web.context())
    assert sorted(r.type for r in found) == ["WCS", "WFS"]
    # the WMS probe answered WFS: WFS is not asked for again
    assert web.requested == [probe(endpoint, t) for t in OGC_TYPES if t != "WFS"]
    assert set(web.caps) == {None} and web.most_in_flight == 1


def test_truncated_body_is_not_parsed_but_the_probe_recovers_it():
    endpoint = "http://h/wms"
    web = FakeWeb({probe(endpoint, "WMS"): WMS_DOC})
    ctx = web.context(types=("WMS",))
    cut = Response(endpoint, endpoint, 200, {"content-type": "text/xml"}, WMS_DOC[:50], complete=False)
    [wms] = detect(cut, ctx)
    assert wms.title == "Maps"


# --- CSW: the number of records and the first of them from one GetRecords request -----------------------

CSW_ENDPOINT = "http://h/pycsw/csw.py"
RECORDS_URL = (
    f"{CSW_ENDPOINT}?service=CSW&version=2.0.2&request=GetRecords&typeNames=csw%3ARecord"
    "&namespace=xmlns%28csw%3Dhttp%3A%2F%2Fwww.opengis.net%2Fcat%2Fcsw%2F2.0.2%29&resultType=results"
    f"&elementSetName=summary&maxRecords={FIRST_RECORDS}"
)
# The 12 Dublin Core records of the OGC CITE test data (tests/data/corpus/records/cite, its README)
CITE = sorted(corpus.CITE.glob("Record_*.xml"))


def records_response(matched: str, records: list[bytes] = ()) -> bytes:
    """A GetRecords answer as pycsw writes it, holding ``records`` (documents, their XML declaration cut)."""
    body = b"".join(r.split(b"?>", 1)[-1] if r.startswith(b"<?xml") else r for r in records)
    return (
        b'<csw:GetRecordsResponse xmlns:csw="http://www.opengis.net/cat/csw/2.0.2" version="2.0.2">'
        b'<csw:SearchStatus timestamp="2024-01-01T00:00:00Z"/><csw:SearchResults numberOfRecordsMatched="'
        + matched.encode()
        + f'" numberOfRecordsReturned="{len(records)}" nextRecord="0" elementSet="summary">'.encode()
        + body
        + b"</csw:SearchResults></csw:GetRecordsResponse>"
    )


def test_a_csw_s_first_records_are_its_datasets_and_its_footprint_theirs():
    web = FakeWeb({RECORDS_URL: records_response("12", [path.read_bytes() for path in CITE])})
    ctx = web.context(types=("CSW",))
    [csw] = detect(response(CSW_ENDPOINT + "?service=CSW&request=GetCapabilities", CSW_DOC), ctx)
    assert (csw.type, csw.title, csw.extra) == ("CSW", "Catalogue", {"records": 12})
    assert web.requested == [RECORDS_URL]  # one request for the count and the records
    assert len(csw.datasets) == 12
    by_name = {d.name: d for d in csw.datasets}
    lorem = by_name["urn:uuid:19887a8a-f6b0-4a63-ae56-7fba0e17801f"]
    assert (lorem.title, lorem.keywords, lorem.bbox) == ("Lorem ipsum", ["Tourism--Greece"], None)
    assert lorem.extra == {"type": "http://purl.org/dc/dcmitype/Image"}
    assert sum(d.bbox is not None for d in csw.datasets) == 3
    # EPSG:4326 corners are latitude first; the catalogue's box holds its records' boxes
    assert csw.bbox == (-6.171, 44.792, 17.92, 68.41)


def test_records_in_another_schema_or_without_identifier_are_left_out_and_the_count_kept():
    iso = (corpus.RECORDS / "9250AA67-F3AC-6C12-0CB9-0662231AA181_iso.xml").read_bytes()
    anonymous = (
        b'<csw:SummaryRecord xmlns:csw="http://www.opengis.net/cat/csw/2.0.2"'
        b' xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>No id</dc:title></csw:SummaryRecord>'
    )
    web = FakeWeb({RECORDS_URL: records_response("3", [iso, anonymous, CITE[0].read_bytes()])})
    [csw] = detect(response(CSW_ENDPOINT, CSW_DOC), web.context(types=("CSW",)))
    assert csw.extra == {"records": 3} and len(csw.datasets) == 1


def test_only_the_first_page_of_records_is_listed():
    many = [CITE[0].read_bytes().replace(b"19887a8a", f"{n:08x}".encode()) for n in range(FIRST_RECORDS + 5)]
    web = FakeWeb({RECORDS_URL: records_response("100000", many)})
    [csw] = detect(response(CSW_ENDPOINT, CSW_DOC), web.context(types=("CSW",)))
    assert csw.extra == {"records": 100_000} and len(csw.datasets) == FIRST_RECORDS


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (ConnectionFailed(url=RECORDS_URL), "(connection)"),
        (HTTPStatusError(500, url=RECORDS_URL), "(http_status)"),
        (EXCEPTION_DOC, "(ogc_exception)"),
        (b"<html>oops", "(malformed)"),
        (records_response("-1"), "numberOfRecordsMatched is '-1'"),
        (records_response("many"), "numberOfRecordsMatched is 'many'"),
        (RSS_DOC, "root element 'rss' is none of GetRecordsResponse"),
    ],
)
def test_a_failed_records_request_leaves_the_count_null_with_a_logged_reason(answer, reason, caplog):
    web = FakeWeb({RECORDS_URL: answer})
    ctx = web.context(types=("CSW",))
    with caplog.at_level(logging.INFO, logger="geoweb.detect.ogc"):
        [csw] = detect(response(CSW_ENDPOINT, CSW_DOC), ctx)
    assert csw.extra == {"records": None} and csw.datasets == [] and csw.bbox is None
    assert "records not listed" in caplog.text
    assert reason in caplog.text
    assert ctx.stats["ogc/csw_records_miss"] == 1
