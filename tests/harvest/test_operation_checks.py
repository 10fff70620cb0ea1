"""Operation checks over loopback servers: after a good check, a WMS is asked for a map, a WMTS for a tile
(KVP, or its tile URL template when it declares no KVP GetTile), a WFS for a feature, a file for its first
bytes, and each answer judged; on PostGIS the operation row is saved beside the capabilities row, and
``resource_quality`` says when a service answers while its maps fail."""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from aiohttp import web
from PIL import Image

from geoweb.crawl.factory import open_crawler
from geoweb.detect.ogc import read_capabilities
from geoweb.harvest.operations import ONE_COLOUR, NoOperation, operation_request
from geoweb.harvest.recheck import Checker
from geoweb.harvest.revisit import check_resources
from geoweb.models import CheckResult, Due, Resource, ScheduleState
from geoweb.settings import Settings
from geoweb.store import Store
from tests.harvest.test_revisit_timings import crawled
from tests.hostile.servers import PagesServer, loopback_settings

CAPABILITIES = Path(__file__).parents[1] / "data" / "capabilities"
WMS_130 = (CAPABILITIES / "mapserver_wms_130.xml").read_bytes()
WFS_200 = (CAPABILITIES / "mapserver_wfs_200.xml").read_bytes()
WMTS_KVP = (CAPABILITIES / "mapproxy_wmts_100_kvp.xml").read_bytes()
WMTS_RESTFUL = (CAPABILITIES / "mapproxy_wmts_100_rest.xml").read_bytes()
# where the test web's MapProxy answered when its documents were captured: its RESTful tile templates' host
MAPPROXY = b"http://127.0.0.1:18032"
XML = "text/xml"
GML = b"""<?xml version="1.0"?>
<wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs/2.0" numberMatched="3" numberReturned="1">
  <wfs:member><ms:lakes xmlns:ms="http://mapserver.gis.umn.edu/mapserver"><ms:name>Lac</ms:name></ms:lakes></wfs:member>
</wfs:FeatureCollection>"""
GEOJSON = b'{"type": "FeatureCollection", "features": [{"type": "Feature", "properties": {"name": "a"}, ' + (
    b'"geometry": {"type": "Point", "coordinates": [7.1, 46.2]}}]}'
)
MS = 1e-3

Answer = Callable[[web.Request], Awaitable[web.StreamResponse]]


def png(size: tuple[int, int] = (256, 256), *, one_colour: bool = False) -> bytes:
    """A PNG map: a gradient, or all one colour."""
    image = Image.new("RGB", size, (200, 220, 255))
    if not one_colour:
        image.putdata([(x % 256, y % 256, 128) for y in range(size[1]) for x in range(size[0])])
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def fixed(content_type: str, body: bytes) -> Answer:
    async def answer(request: web.Request) -> web.StreamResponse:
        return web.Response(body=body, headers={"Content-Type": content_type})

    return answer


class OperationServer(PagesServer):
    """``PagesServer`` whose operation requests (a ``request=`` other than GetCapabilities) are answered by
    ``answer``, and whose pages are answered 206 with their first bytes when a Range is asked. ``ranges``
    records the Range headers received."""

    def __init__(self, pages: dict[str, tuple[str, bytes]], answer: Answer | None = None):
        super().__init__(pages)
        self.answer = answer
        self.ranges: list[str] = []

    async def _page(self, request: web.Request) -> web.StreamResponse:
        asked = {k.lower(): v for k, v in request.query.items()}.get("request", "GetCapabilities")
        if asked.lower() != "getcapabilities" and self.answer is not None:
            self.seen.append(request.path_qs)
            return await self.answer(request)
        if "Range" in request.headers and request.path in self.pages:
            self.seen.append(request.path_qs)
            self.ranges.append(request.headers["Range"])
            content_type, body = self.pages[request.path]
            return web.Response(status=206, body=body[:1024], headers={"Content-Type": content_type})
        return await super()._page(request)

    def query_of_last(self) -> dict[str, str]:
        return {k.upper(): v[0] for k, v in parse_qs(urlsplit(self.seen[-1]).query).items()}


def due_of(url: str, type_: str = "WMS", version: str | None = "1.3.0") -> Due:
    return Due(0, url, type_, version, None, ScheduleState(3600.0))


def checked(settings: Settings, due: Due) -> CheckResult:
    """One check of ``due`` by the revisits' checker, with the crawl's fetcher and detectors."""

    async def run() -> CheckResult:
        async with open_crawler(settings) as crawler:
            return await Checker(crawler.fetch, crawler.detectors, settings, crawler.stats).check(due)

    return asyncio.run(run())


def check_wms(answer: Answer, **changes) -> tuple[CheckResult, OperationServer]:
    """A check of a WMS whose capabilities answer and whose operations get ``answer``."""
    return check_service("/wms", WMS_130, due_of, answer, **changes)


def check_wmts(answer: Answer) -> tuple[CheckResult, OperationServer]:
    """A check of MapProxy's KVP WMTS, whose capabilities answer and whose operations get ``answer``."""
    return check_service("/service", WMTS_KVP, lambda url: due_of(url, "WMTS", "1.0.0"), answer)


def check_service(
    path: str, document: bytes, due: Callable[[str], Due], answer: Answer, **changes
) -> tuple[CheckResult, OperationServer]:
    """A check of the service whose capabilities ``document`` answers at ``path``, its operations ``answer``."""
    with OperationServer({path: (XML, document)}, answer) as server:
        result = checked(loopback_settings(server, **changes), due(server.url(path)))
    return result, server


def test_the_getmap_asks_the_centre_of_the_first_layer_in_latitude_first_order():
    request = operation_request(read_capabilities(WMS_130, "http://maps.example/wms?map=a.map"))
    query = parse_qs(urlsplit(request.url).query)
    assert request.url.startswith("http://maps.example/wms?map=a.map&")
    assert {k: v[0] for k, v in query.items() if k not in ("STYLES", "map")} == {
        "SERVICE": "WMS", "VERSION": "1.3.0", "REQUEST": "GetMap", "LAYERS": "provinces", "CRS": "EPSG:4326",
        "BBOX": "45.375000,6.125000,45.625000,6.875000", "WIDTH": "256", "HEIGHT": "256", "FORMAT": "image/png",
    }  # fmt: skip


def test_a_wms_whose_getmap_answers_a_map_is_ok_and_measured():
    result, server = check_wms(fixed("image/png", png()))
    assert (result.outcome, result.operation) == ("unchanged", "GetCapabilities")  # as without operations
    operation = result.operation_check
    assert (operation.outcome, operation.operation, operation.http_status) == ("ok", "GetMap", 200)
    assert operation.error_reason is None and operation.warning is None
    assert operation.bytes == len(png()) and 0 <= operation.first_byte_seconds <= operation.total_seconds
    assert server.query_of_last()["REQUEST"] == "GetMap"


def test_a_map_all_one_colour_is_ok_with_a_warning():
    result, _ = check_wms(fixed("image/png", png(one_colour=True)))
    assert (result.operation_check.outcome, result.operation_check.warning) == ("ok", ONE_COLOUR)


def test_a_wfs_answers_one_feature():
    async def gml(request: web.Request) -> web.StreamResponse:
        return web.Response(body=GML, headers={"Content-Type": "application/gml+xml; version=3.2"})

    with OperationServer({"/wfs": (XML, WFS_200)}, gml) as server:
        result = checked(loopback_settings(server), due_of(server.url("/wfs"), "WFS", "2.0.0"))
        query = server.query_of_last()
    assert (result.operation_check.operation, result.operation_check.outcome) == ("GetFeature", "ok")
    assert (query["REQUEST"], query["TYPENAMES"], query["COUNT"]) == ("GetFeature", "ms:provinces", "1")


def test_a_file_is_read_from_its_first_bytes():
    with OperationServer({"/lakes.geojson": ("application/geo+json", GEOJSON)}) as server:
        result = checked(loopback_settings(server), due_of(server.url("/lakes.geojson"), "GEOJSON", None))
    operation = result.operation_check
    assert (operation.operation, operation.outcome, operation.http_status) == ("RangeRead", "ok", 206)
    assert server.ranges == ["bytes=0-1023"]


def test_the_gettile_asks_the_top_left_tile_of_the_coarsest_matrix_of_the_first_layer():
    request = operation_request(read_capabilities(WMTS_KVP, "http://tiles.example/service"))
    assert request.url.startswith("http://tiles.example/service?")
    assert {k: v[0] for k, v in parse_qs(urlsplit(request.url).query).items()} == {
        "SERVICE": "WMTS", "REQUEST": "GetTile", "VERSION": "1.0.0", "LAYER": "rivers_tiles", "STYLE": "default",
        "FORMAT": "image/png", "TILEMATRIXSET": "webmercator", "TILEMATRIX": "00", "TILEROW": "0", "TILECOL": "0",
    }  # fmt: skip


def test_a_wmts_whose_gettile_answers_a_tile_is_ok():
    result, server = check_wmts(fixed("image/png", png()))
    operation = result.operation_check
    assert (operation.outcome, operation.operation, operation.http_status) == ("ok", "GetTile", 200)
    assert operation.error_reason is None and operation.warning is None
    assert (server.query_of_last()["REQUEST"], server.query_of_last()["LAYER"]) == ("GetTile", "rivers_tiles")


def test_a_tile_that_is_an_exception_report_sent_as_png_fails():
    report = b"""<?xml version="1.0"?><ows:ExceptionReport xmlns:ows="http://www.opengis.net/ows/1.1" version="1.1.0">
      <ows:Exception exceptionCode="TileOutOfRange" locator="TILEROW"><ows:ExceptionText>no such tile</ows:ExceptionText>
      </ows:Exception></ows:ExceptionReport>"""
    result, _ = check_wmts(fixed("image/png", report))
    operation = result.operation_check
    assert (result.outcome, operation.operation, operation.outcome) == ("unchanged", "GetTile", "failed")
    assert operation.error_reason == "ogc_exception" and "TileOutOfRange" in operation.error_message


def test_a_restful_only_wmts_is_asked_for_a_tile_of_its_template():
    with OperationServer({}) as server:
        document = WMTS_RESTFUL.replace(MAPPROXY, server.url("").encode())
        server.pages = {
            "/wmts/1.0.0/WMTSCapabilities.xml": (XML, document),
            "/wmts/rivers_tiles/webmercator/00/0/0.png": ("image/png", png(one_colour=True)),
        }
        due = due_of(server.url("/wmts/1.0.0/WMTSCapabilities.xml"), "WMTS", "1.0.0")
        result = checked(loopback_settings(server), due)
    operation = result.operation_check
    assert (operation.operation, operation.outcome, operation.warning) == ("GetTile", "ok", ONE_COLOUR)
    assert server.seen[-1] == "/wmts/rivers_tiles/webmercator/00/0/0.png"


def test_no_tile_is_asked_of_a_wmts_only_read_leniently():
    broken = WMTS_KVP.replace(b"<ows:SupportedCRS>urn:ogc:def:crs:EPSG:3857</ows:SupportedCRS>", b"")
    resource = read_capabilities(broken, "http://tiles.example/service")
    assert resource.owslib_error and [d.name for d in resource.datasets] == ["rivers_tiles", "regions_tiles"]
    with pytest.raises(NoOperation):
        operation_request(resource)  # its layers' formats and matrices are not read: no guessed tile


def test_no_operation_check_when_the_detector_kept_too_little():
    resource = Resource("http://tiles.example/wmts", "WMTS", "1.0.0")
    with OperationServer({}) as server:
        settings = loopback_settings(server)

        async def run() -> CheckResult | None:
            async with open_crawler(settings) as crawler:
                checker = Checker(crawler.fetch, crawler.detectors, settings, crawler.stats)
                return await checker.check_operation(due_of(resource.url, "WMTS"), resource)

        assert asyncio.run(run()) is None
    assert server.seen == []


# --- on PostGIS ------------------------------------------------------------------------------------------


def revisited(store: Store, settings: Settings, url: str) -> dict:
    """One revisit of the resource at ``url`` once it is due, its operation check included: its JSON line."""
    time.sleep(10 * MS)
    due = [
        d.id for d in store.revisits.due(["WMS"], 100_000, settings.revisit_initial_interval) if d.url == url
    ]
    lines: list[dict] = []
    check_resources(store, "operations", due, settings, lines.append)
    [line] = lines
    return line


def test_the_operation_row_is_saved_beside_the_capabilities_row_and_failing_maps_show(postgis_dsn):
    report = (
        b'<?xml version="1.0"?><ServiceExceptionReport version="1.3.0" xmlns="http://www.opengis.net/ogc">'
    )
    report += (
        b'<ServiceException code="LayerNotDefined">no such layer</ServiceException></ServiceExceptionReport>'
    )
    with Store(postgis_dsn) as store, OperationServer({"/wms": (XML, WMS_130)}) as server:
        settings = loopback_settings(
            server, revisit_initial_interval=MS, revisit_min_interval=MS, revisit_max_interval=8 * MS
        )
        url = server.url("/wms")
        crawled(store, url)
        server.answer = fixed("image/png", png())
        good = revisited(store, settings, url)
        server.answer = fixed("image/png", report)
        failing = revisited(store, settings, url)
        with store.transaction() as cur:
            cur.execute(
                "SELECT c.operation, c.outcome, c.http_status, c.error_reason, c.warning, s.last_outcome "
                "FROM resource_checks c JOIN resources r ON r.id = c.resource_id "
                "JOIN resource_schedule s ON s.resource_id = r.id WHERE r.url = %s ORDER BY c.id",
                (url,),
            )
            rows = cur.fetchall()
            cur.execute("SELECT id FROM resources WHERE url = %s", (url,))
            [(resource_id,)] = cur.fetchall()
        [quality] = store.revisits.quality([resource_id])
    assert (good["outcome"], good["operation_check"]["outcome"]) == ("unchanged", "ok")
    assert (failing["outcome"], failing["operation_check"]["error_reason"]) == ("unchanged", "ogc_exception")
    assert rows == [
        ("GetCapabilities", "unchanged", 200, None, None, "unchanged"),
        ("GetMap", "ok", 200, None, None, "unchanged"),
        ("GetCapabilities", "unchanged", 200, None, None, "unchanged"),
        ("GetMap", "failed", 200, "ogc_exception", None, "unchanged"),
    ]
    assert quality["operations_status"] == "failing"
    assert quality["operations_error"].startswith(
        "GetMap ogc_exception: OGC exception report (LayerNotDefined)"
    )
    assert quality["operations_30d"]["GetMap"]["checks"] == 2
    assert quality["operations_30d"]["GetMap"]["successes"] == 1
