"""The DescribeFeatureType fallback against a loopback WFS whose schema answers are hostile: exception reports,
entity bombs, gigantic bodies, HTML, errors. Each ends in one logged warning naming the reason,
and the crawl keeps the service, its feature types and the concepts their names gave."""

from __future__ import annotations

import asyncio
import logging

import pytest
from aiohttp import web

from geoweb.crawl import Crawler
from geoweb.dedup import BloomFilter
from geoweb.detect.ogc import OGCDetector
from geoweb.fetch import Fetcher
from geoweb.models import Page, Resource
from tests.hostile.servers import PagesServer, loopback_settings

CAPABILITIES = b"""<?xml version="1.0" encoding="UTF-8"?>
<wfs:WFS_Capabilities version="2.0.0" xmlns:wfs="http://www.opengis.net/wfs/2.0"
    xmlns:ows="http://www.opengis.net/ows/1.1" xmlns:xlink="http://www.w3.org/1999/xlink">
  <ows:ServiceIdentification><ows:Title>Mixed WFS</ows:Title></ows:ServiceIdentification>
  <ows:OperationsMetadata><ows:Operation name="GetCapabilities"><ows:DCP><ows:HTTP>
    <ows:Get xlink:href="http://example.org/wfs"/></ows:HTTP></ows:DCP></ows:Operation></ows:OperationsMetadata>
  <wfs:FeatureTypeList>
    <wfs:FeatureType><wfs:Name>ns:rivers</wfs:Name><wfs:Title>Rivers</wfs:Title></wfs:FeatureType>
    <wfs:FeatureType><wfs:Name>ns:layer_17</wfs:Name><wfs:Title>Layer 17</wfs:Title></wfs:FeatureType>
    <wfs:FeatureType><wfs:Name>ns:layer_18</wfs:Name><wfs:Title>Layer 18</wfs:Title></wfs:FeatureType>
  </wfs:FeatureTypeList>
</wfs:WFS_Capabilities>
"""
SCHEMA = b"""<?xml version="1.0" encoding="UTF-8"?>
<schema xmlns="http://www.w3.org/2001/XMLSchema" xmlns:gml="http://www.opengis.net/gml/3.2"
    xmlns:ns="http://example.org/ns" targetNamespace="http://example.org/ns">
  <element name="layer_17" type="ns:layer_17Type" substitutionGroup="gml:AbstractFeature"/>
  <complexType name="layer_17Type"><complexContent><extension base="gml:AbstractFeatureType"><sequence>
    <element name="the_geom" type="gml:MultiCurvePropertyType"/>
    <element name="road_class" type="string"/>
    <element name="surface" type="string"/>
  </sequence></extension></complexContent></complexType>
  <element name="layer_18">
    <complexType><sequence><element name="id" type="int"/><element name="value" type="double"/></sequence>
    </complexType>
  </element>
</schema>
"""
EXCEPTION = b"""<?xml version="1.0"?>
<ows:ExceptionReport xmlns:ows="http://www.opengis.net/ows/1.1" version="2.0.0">
  <ows:Exception exceptionCode="InvalidParameterValue" locator="typeNames">
    <ows:ExceptionText>Unknown feature type</ows:ExceptionText></ows:Exception>
</ows:ExceptionReport>
"""
BOMB = (
    b'<?xml version="1.0"?><!DOCTYPE schema [<!ENTITY a "aaaaaaaaaa">'
    + b"".join(
        b'<!ENTITY a%d "%s">' % (i, (b"&a%d;" % (i - 1) if i > 1 else b"&a;") * 10) for i in range(1, 10)
    )
    + b']><schema xmlns="http://www.w3.org/2001/XMLSchema"><element name="layer_17">&a9;</element></schema>'
)
SCHEMA_CAP = 64 * 1024

# schema answer (content type, body, status) -> the reason logged
HOSTILE = {
    "exception report": ("text/xml", EXCEPTION, 200, "ogc_exception"),
    "entity bomb": ("text/xml", BOMB, 200, "unsafe_content"),
    "gigantic": ("text/xml", SCHEMA[:-10] + b"<!--" + b"x" * (4 * SCHEMA_CAP) + b"-->" + SCHEMA[-10:], 200, "malformed"),
    "html": ("text/html", b"<html><body><h1>Internal error</h1><p>Try later</body></html>", 200, "malformed"),
    "xhtml": ("application/xhtml+xml", b'<html xmlns="http://www.w3.org/1999/xhtml"><body/></html>', 200, "malformed"),
    "not xml": ("application/json", b'{"error": "no"}', 200, "malformed"),
    "server error": ("text/plain", b"boom", 500, "http_status"),
}  # fmt: skip


class WFSServer(PagesServer):
    """A WFS at /wfs: its capabilities for GetCapabilities, ``schema`` for DescribeFeatureType."""

    def __init__(self, content_type: str, schema: bytes, status: int = 200):
        super().__init__({"/wfs": ("text/xml", CAPABILITIES)})
        self.schema = (content_type, schema, status)

    async def _page(self, request: web.Request) -> web.Response:
        if request.query.get("request", "").lower() != "describefeaturetype":
            return await super()._page(request)
        self.seen.append(request.path_qs)
        content_type, body, status = self.schema
        return web.Response(body=body, status=status, headers={"Content-Type": content_type})


def crawl(server: WFSServer, **settings) -> list[Resource]:
    """A crawl of the WFS endpoint alone, as ``geoweb crawl --seed`` runs it; the resources it records."""
    config = loopback_settings(server, max_level=0, schema_max_bytes=SCHEMA_CAP, retries=0, **settings)
    found: list[Resource] = []

    async def run() -> None:
        async with Fetcher(config) as fetcher:
            crawler = Crawler(
                fetcher.get, [OGCDetector()], settings=config, seen=BloomFilter(1000), types={"WFS"}
            )

            def keep(page: Page) -> None:
                found.extend(page.resources)

            await crawler.crawl([server.url("/wfs?service=WFS&request=GetCapabilities")], keep)

    asyncio.run(run())
    return found


def concepts(resource: Resource) -> dict[str, list[str]]:
    return {d.name: d.concepts for d in resource.datasets}


def test_unmatched_feature_types_are_tagged_by_their_schema():
    with WFSServer("text/xml", SCHEMA) as server:
        (wfs,) = crawl(server)
    assert concepts(wfs) == {"ns:rivers": ["river"], "ns:layer_17": ["road"], "ns:layer_18": []}
    layer = wfs.datasets[1]
    assert layer.extra["schema_properties"] == ["road_class", "surface"]  # the geometry left out
    assert layer.extra["concept_matches"][0]["method"] == "schema"
    # one request for the unmatched types only, in the service's version
    (describe,) = [p for p in server.seen if "DescribeFeatureType" in p]
    assert "version=2.0.0" in describe and "typeNames=ns:layer_17,ns:layer_18" in describe


def test_the_fallback_can_be_turned_off():
    with WFSServer("text/xml", SCHEMA) as server:
        (wfs,) = crawl(server, describe_feature_types=0)
    assert concepts(wfs)["ns:layer_17"] == []
    assert not [p for p in server.seen if "DescribeFeatureType" in p]


def test_the_number_of_types_described_is_bounded():
    with WFSServer("text/xml", SCHEMA) as server:
        (wfs,) = crawl(server, describe_feature_types=1)
    (describe,) = [p for p in server.seen if "DescribeFeatureType" in p]
    assert describe.endswith("typeNames=ns:layer_17")
    assert concepts(wfs)["ns:layer_17"] == ["road"] and "schema_properties" not in wfs.datasets[2].extra


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_schema_answer_is_logged_and_loses_nothing(name, caplog):
    content_type, body, status, reason = HOSTILE[name]
    with WFSServer(content_type, body, status) as server, caplog.at_level(logging.INFO):
        (wfs,) = crawl(server)
    assert concepts(wfs) == {"ns:rivers": ["river"], "ns:layer_17": [], "ns:layer_18": []}
    assert all("schema_properties" not in d.extra for d in wfs.datasets)
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and f"DescribeFeatureType not used ({reason})" in warnings[0], warnings
