"""Hostile and broken XML through the OGC detector: no resource, a logged reason, nothing expanded or
fetched, and nothing else lost (probes of the same endpoint still find the real services)."""

from __future__ import annotations

import logging
import socket

import pytest

from geoweb.errors import GeowebError
from geoweb.models import OGC_TYPES
from geoweb.settings import MB
from tests.unit.test_ogc_detector import WFS_DOC, FakeWeb, detect, probe, response

LOGGER = "geoweb.detect.ogc"
WMS_OPEN = b'<WMT_MS_Capabilities version="1.1.1"><Service><Title>'
WMS_REQUEST = b"<Request><GetCapabilities/></Request>"  # what OWSLib's reader needs beside the layers
WMS_CLOSE = (
    b"</Title></Service><Capability>" + WMS_REQUEST + b"<Layer><Name>x</Name></Layer></Capability>"
    b"</WMT_MS_Capabilities>"
)


def wms_with_doctype(doctype: bytes, title: bytes) -> bytes:
    return b'<?xml version="1.0"?>' + doctype + WMS_OPEN + title + WMS_CLOSE


BILLION_LAUGHS = wms_with_doctype(
    b'<!DOCTYPE WMT_MS_Capabilities [<!ENTITY lol "lol">'
    + b"".join(
        b'<!ENTITY lol%d "%s">' % (i, (b"&lol%d;" % (i - 1) if i > 1 else b"&lol;") * 10)
        for i in range(1, 10)
    )
    + b"]>",
    b"&lol9;",
)
PASSWD_ENTITY = wms_with_doctype(
    b'<!DOCTYPE WMT_MS_Capabilities [<!ENTITY x SYSTEM "file:///etc/passwd">]>', b"&x;"
)
NETWORK_ENTITY = wms_with_doctype(
    b'<!DOCTYPE WMT_MS_Capabilities [<!ENTITY x SYSTEM "http://127.0.0.1:1/x">]>', b"&x;"
)
DEEP = (
    WMS_OPEN
    + b"t</Title></Service><Capability>"
    + b"<Layer>" * 100_000
    + b"</Layer>" * 100_000
    + b"</Capability>"
)

# body -> the logged reason; each is served at a plain URL and must yield nothing.
HOSTILE = {
    # cut in its root's start tag: nothing to read (cut later, it is a sloppy service: tests/conformance)
    "malformed": (b'<WMT_MS_Capabilities version="1.1.1', "not well-formed"),
    "binary junk": (b"\x00\xff\xfe\x00garbage\x00" * 100, "not well-formed"),
    "billion laughs": (BILLION_LAUGHS, "rejected"),
    "external entity file": (PASSWD_ENTITY, "DOCTYPE declares entities (x)"),
    "external entity http": (NETWORK_ENTITY, "DOCTYPE declares entities (x)"),
    "30 MB document": (WMS_OPEN + b" " * (30 * MB) + WMS_CLOSE, "over the 20971520-byte cap"),
    "deeply nested": (DEEP, "exceeds parser limits"),
    # the sniff reads the root's start tag only: an html root is no capabilities root, malformed or not
    "html as xml": (b"<!DOCTYPE html><html><body><p>Map viewer<br></body></html>", "no capabilities root"),
    "xhtml": (b'<html xmlns="http://www.w3.org/1999/xhtml"><body/></html>', "no capabilities root"),
    "wms exception": (
        b'<ServiceExceptionReport version="1.1.1"><ServiceException code="InvalidFormat">bad format'
        b"</ServiceException></ServiceExceptionReport>",
        "OGC exception report (InvalidFormat): bad format",
    ),
    "ows exception": (
        b'<ExceptionReport xmlns="http://www.opengis.net/ows/2.0"><Exception exceptionCode="NoApplicableCode">'
        b"<ExceptionText>internal error</ExceptionText></Exception></ExceptionReport>",
        "OGC exception report (NoApplicableCode): internal error",
    ),
    # Capabilities roots in namespaces no standard gives them.
    "Capabilities, no namespace": (b'<Capabilities version="1.0.0"/>', "no capabilities root"),
    "WMTS 2.0 namespace": (
        b'<Capabilities xmlns="http://www.opengis.net/wmts/2.0"/>',
        "no capabilities root",
    ),
    "WMS root in WFS namespace": (
        b'<WMS_Capabilities xmlns="http://www.opengis.net/wfs"/>',
        "no capabilities root",
    ),
    "WFS root, foreign namespace": (
        b'<WFS_Capabilities xmlns="http://example.com/wfs"/>',
        "no capabilities root",
    ),
    "CSW 2.0 namespace": (
        b'<csw:Capabilities xmlns:csw="http://www.opengis.net/cat/csw/2.0"/>',
        "no capabilities root",
    ),
}


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_document_yields_nothing_with_a_logged_reason(name, caplog):
    body, reason = HOSTILE[name]
    web = FakeWeb()
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        assert detect(response("http://h/data/doc.xml", body), web.context()) == []
    assert reason in caplog.text
    assert "root:" not in caplog.text  # /etc/passwd never read into anything
    assert len(caplog.text) < 5000  # reasons, not documents


@pytest.mark.parametrize(
    "name", ["billion laughs", "external entity file", "30 MB document", "deeply nested"]
)
def test_unsafe_documents_are_warnings(name, caplog):
    ctx = FakeWeb().context()
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        detect(response("http://h/data/doc.xml", HOSTILE[name][0]), ctx)
    assert [r.levelname for r in caplog.records] == ["WARNING"]
    assert ctx.stats == {"ogc/unsafe_content": 1}


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_answer_at_an_endpoint_loses_nothing_else(name):
    endpoint = "http://h/geoserver/ows"
    body = HOSTILE[name][0]
    # The page itself is hostile, and so is every probe answer but the WFS one.
    web = FakeWeb({probe(endpoint, t): body for t in OGC_TYPES} | {probe(endpoint, "WFS"): WFS_DOC})
    ctx = web.context()
    found = detect(response(endpoint + "?service=WMS&request=GetCapabilities", body), ctx)
    assert [(r.type, r.url) for r in found] == [("WFS", endpoint)]
    assert ctx.stats["ogc/probe_miss"] == len(OGC_TYPES) - 1


@pytest.fixture
def owslib_calls(monkeypatch) -> list[str]:
    """Every OWSLib reader the OGC modules call, replaced by one that records the call and fails."""
    from geoweb.detect.ogc import adapter, sos, wcs, wfs, wms, wmts, wps

    calls: list[str] = []

    def recorder(name: str):
        def called(*args, **kwargs):
            calls.append(name)
            raise AssertionError(f"{name} was called")

        return called

    readers = [(wms, "WebMapService"), (wfs, "WebFeatureService"), (wcs, "WebCoverageService"),
               (wmts, "WebMapTileService"), (wps, "WebProcessingService"), (sos, "SensorObservationService")]  # fmt: skip
    for module, name in readers:
        monkeypatch.setattr(module, name, recorder(name))
    monkeypatch.setattr(adapter.ows, "ServiceIdentification", recorder("ows.ServiceIdentification"))
    return calls


def test_a_sound_document_does_reach_owslib(owslib_calls):
    from geoweb.detect.ogc import read_capabilities

    resource = read_capabilities(wms_with_doctype(b"", b"t"), "http://h/ows")
    assert "WebMapService was called" in resource.owslib_error
    assert owslib_calls == ["WebMapService"]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_documents_never_reach_owslib(name, owslib_calls):
    from geoweb.detect.ogc import read_capabilities

    with pytest.raises(GeowebError):
        read_capabilities(HOSTILE[name][0], "http://h/ows")
    assert owslib_calls == []  # refused before any reader ran


@pytest.fixture
def listener():
    """A local TCP port that records whether anything connected to it."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        server.setblocking(False)
        yield server


def _connections(server: socket.socket) -> int:
    count = 0
    while True:
        try:
            conn, _ = server.accept()
        except BlockingIOError:
            return count
        conn.close()
        count += 1


@pytest.mark.parametrize(
    "doctype",
    [
        b'<!DOCTYPE WMT_MS_Capabilities [<!ENTITY x SYSTEM "http://127.0.0.1:{port}/x">]>',
        b'<!DOCTYPE WMT_MS_Capabilities [<!ENTITY % p SYSTEM "http://127.0.0.1:{port}/p"> %p;]>',
        b'<!DOCTYPE WMT_MS_Capabilities SYSTEM "http://127.0.0.1:{port}/caps.dtd">',
    ],
)
def test_external_entities_and_dtds_are_never_fetched(doctype, listener, caplog):
    port = listener.getsockname()[1]
    body = wms_with_doctype(
        doctype.replace(b"{port}", str(port).encode()), b"&x;" if b"x SYSTEM" in doctype else b"t"
    )
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        found = detect(response("http://h/data/doc.xml", body), FakeWeb().context())
    assert _connections(listener) == 0
    if b"ENTITY" in doctype:
        assert found == []
        assert "DOCTYPE declares entities" in caplog.text
    else:  # an external DTD alone is harmless: it is not loaded, and the document is read
        assert [r.title for r in found] == ["t"]


def test_deep_but_legal_layer_nesting_is_read():
    depth = 200  # under the parser's depth limit of 256
    body = WMS_OPEN + b"t</Title></Service><Capability>" + WMS_REQUEST
    body += b"".join(b"<Layer><Name>l%d</Name>" % i for i in range(depth)) + b"</Layer>" * depth
    body += b"</Capability></WMT_MS_Capabilities>"
    [wms] = detect(response("http://h/doc.xml", body), FakeWeb().context(types=("WMS",)))
    assert len(wms.datasets) == depth
