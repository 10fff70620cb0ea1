"""The real servers of the test web answer as its ground truth (var/testweb/manifest.json) says they do."""

from __future__ import annotations

import io
import struct
import urllib.error
import urllib.request
import zipfile
from urllib.parse import urlsplit

import pytest
from lxml import etree
from protego import Protego

from testweb.model import DIRECT

pytestmark = pytest.mark.testweb

# (type, version) -> (namespace, root element) of a GetCapabilities answer
ROOTS = {
    ("WMS", "1.1.1"): (None, "WMT_MS_Capabilities"),
    ("WMS", "1.3.0"): ("http://www.opengis.net/wms", "WMS_Capabilities"),
    ("WFS", "1.0.0"): ("http://www.opengis.net/wfs", "WFS_Capabilities"),
    ("WFS", "1.1.0"): ("http://www.opengis.net/wfs", "WFS_Capabilities"),
    ("WFS", "2.0.0"): ("http://www.opengis.net/wfs/2.0", "WFS_Capabilities"),
    ("WCS", "1.0.0"): ("http://www.opengis.net/wcs", "WCS_Capabilities"),
    ("WCS", "1.1.0"): ("http://www.opengis.net/wcs/1.1", "Capabilities"),
    ("WCS", "2.0.1"): ("http://www.opengis.net/wcs/2.0", "Capabilities"),
    ("SOS", "1.0.0"): ("http://www.opengis.net/sos/1.0", "Capabilities"),
    ("WMTS", "1.0.0"): ("http://www.opengis.net/wmts/1.0", "Capabilities"),
    ("WPS", "1.0.0"): ("http://www.opengis.net/wps/1.0.0", "Capabilities"),
    ("CSW", "2.0.2"): ("http://www.opengis.net/cat/csw/2.0.2", "Capabilities"),
}
OGC_TYPES = ("WMS", "WFS", "WCS", "WMTS", "WPS", "SOS", "CSW")


def _path(*steps: str) -> str:
    return "//" + "/".join(f"*[local-name()='{s}']" for s in steps)


# type -> XPath of the dataset names a capabilities document lists
DATASET_NAMES = {
    "WMS": _path("Layer", "Name"),
    "WFS": _path("FeatureType", "Name"),
    "WCS": " | ".join(
        (_path("CoverageOfferingBrief", "name"), _path("CoverageSummary", "Identifier"), _path("CoverageId"))
    ),
    "SOS": _path("ObservationOffering", "name"),
    "WMTS": _path("Contents", "Layer", "Identifier"),
    "WPS": _path("ProcessOfferings", "Process", "Identifier"),
}
CSW_NS = {"csw": "http://www.opengis.net/cat/csw/2.0.2", "dc": "http://purl.org/dc/elements/1.1/"}
CSW_NS["dct"] = "http://purl.org/dc/terms/"


def get(
    url: str, headers: dict[str, str] | None = None, timeout: float = 10
) -> tuple[int, dict[str, str], bytes]:
    """Status, lower-case headers and body; 4xx and 5xx are answers too."""
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with DIRECT.open(request, timeout=timeout) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()


def capabilities_url(url: str, service: str, version: str | None = None) -> str:
    if url.endswith(".xml"):  # a RESTful capabilities document is its own request
        return url
    query = f"service={service}&request=GetCapabilities" + (f"&version={version}" if version else "")
    return f"{url}{'&' if '?' in url else '?'}{query}"


def xml_root(body: bytes) -> etree._Element | None:
    try:
        return etree.fromstring(body, etree.XMLParser(resolve_entities=False, no_network=True))
    except etree.XMLSyntaxError:
        return None


def root_key(root: etree._Element | None) -> tuple[str | None, str] | None:
    if root is None:
        return None
    name = etree.QName(root)
    return name.namespace, name.localname


def local_names(root: etree._Element, type_: str) -> set[str]:
    return {n.text.strip().rpartition(":")[2] for n in root.xpath(DATASET_NAMES[type_]) if n.text}


def real_server_resources(manifest: dict, type_: str) -> list[dict]:
    """Planted resources of one type served by real server software (not by our decoy server)."""
    return [
        r
        for r in manifest["resources"]
        if r["type"] == type_
        and manifest["servers"][f"{urlsplit(r['url']).scheme}://{urlsplit(r['url']).netloc}"] != "decoys"
    ]


@pytest.mark.parametrize(("type_", "version"), sorted(ROOTS))
def test_every_planted_service_answers_its_getcapabilities(testweb, type_, version):
    resources = real_server_resources(testweb, type_)
    assert resources, f"no {type_} planted"
    for resource in resources:
        url = capabilities_url(resource["url"], type_, version)
        status, _, body = get(url)
        root = xml_root(body)
        assert status == 200, f"{url}: HTTP {status}"
        assert root_key(root) == ROOTS[(type_, version)], f"{url}: root {root_key(root)}"
        if type_ in DATASET_NAMES:
            assert local_names(root, type_) == set(resource["datasets"]), url


def test_services_answer_no_type_they_are_not_planted_as(testweb):
    """The ground truth lists every type an endpoint serves: asking for any other gets no capabilities of it."""
    planted: dict[str, set[str]] = {}
    for r in testweb["resources"]:
        if r["type"] in OGC_TYPES:
            planted.setdefault(r["url"], set()).add(r["type"])
    roots_of = {t: {root for (rt, _), root in ROOTS.items() if rt == t} for t in OGC_TYPES}
    for url, types in planted.items():
        for other in sorted(set(OGC_TYPES) - types):
            _, _, body = get(capabilities_url(url, other))
            assert root_key(xml_root(body)) not in roots_of[other], f"{url} also serves {other}"


def test_the_echo_endpoint_answers_every_service_with_one_wms_document(testweb):
    (echo,) = [r for r in testweb["resources"] if "same WMS document" in r.get("note", "")]
    bodies = {get(capabilities_url(echo["url"], t))[2] for t in OGC_TYPES}
    assert len(bodies) == 1
    assert root_key(xml_root(bodies.pop())) == ROOTS[("WMS", "1.3.0")]


def test_the_catalogue_returns_every_record_and_the_links_to_unlinked_services(testweb):
    (csw,) = [r for r in testweb["resources"] if r["type"] == "CSW"]
    query = "service=CSW&version=2.0.2&request=GetRecords&typeNames=csw:Record&resultType=results"
    _, _, body = get(f"{csw['url']}?{query}&elementSetName=full&maxRecords=100")
    root = xml_root(body)
    results = root.find("csw:SearchResults", CSW_NS)
    assert int(results.get("numberOfRecordsMatched")) == len(csw["datasets"]) >= 12 + 5
    assert set(root.xpath("//dc:identifier/text()", namespaces=CSW_NS)) == set(csw["datasets"])
    references = root.xpath("//dct:references/text()", namespaces=CSW_NS)
    for hidden in (r for r in testweb["resources"] if r["via"] == "catalogue"):
        assert any(ref == hidden["url"] or ref.startswith(hidden["url"]) for ref in references), hidden["url"]


EXECUTE = """<wps:Execute service="WPS" version="1.0.0" xmlns:wps="http://www.opengis.net/wps/1.0.0"
    xmlns:ows="http://www.opengis.net/ows/1.1"><ows:Identifier>{process}</ows:Identifier><wps:DataInputs>
  <wps:Input><ows:Identifier>geometry</ows:Identifier><wps:Data>
    <wps:ComplexData mimeType="application/geo+json">{{"type": "Point", "coordinates": [10, 20]}}</wps:ComplexData>
  </wps:Data></wps:Input>
  <wps:Input><ows:Identifier>distance</ows:Identifier><wps:Data><wps:LiteralData>1</wps:LiteralData></wps:Data></wps:Input>
</wps:DataInputs></wps:Execute>"""


@pytest.mark.parametrize(
    ("process", "expected"),
    [
        ("buffer", '"type": "Polygon"'),
        ("bbox", "<ows:LowerCorner> 10.0  20.0 </ows:LowerCorner>"),
        ("centroid", "POINT (10 20)"),
    ],
)
def test_the_wps_processes_really_run(testweb, process, expected):
    (wps,) = [r for r in testweb["resources"] if r["type"] == "WPS"]
    assert process in wps["datasets"]
    request = urllib.request.Request(
        wps["url"], EXECUTE.format(process=process).encode(), {"Content-Type": "text/xml"}
    )
    with DIRECT.open(request, timeout=10) as response:
        body = response.read().decode()
    assert "ProcessSucceeded" in body and expected in body, body


def test_two_services_are_reachable_only_through_the_catalogue(testweb):
    hidden = {r["url"] for r in testweb["resources"] if r["via"] == "catalogue" and r["type"] in OGC_TYPES}
    assert len(hidden) >= 2


def test_the_large_zip_is_read_with_range_requests_only(testweb):
    """The crawler identifies an archive over its cap from the central directory; lighttpd must serve Range."""
    (large,) = [r for r in testweb["resources"] if r["url"].endswith("parcels-large.zip")]
    status, headers, tail = get(large["url"], {"Range": "bytes=-22"})
    assert status == 206, status
    size = int(headers["content-range"].rpartition("/")[2])
    assert size > 10 * 1024 * 1024
    assert tail[:4] == b"PK\x05\x06", "the last 22 bytes are the end-of-central-directory record"
    directory_size, directory_offset = struct.unpack("<II", tail[12:20])
    status, _, directory = get(
        large["url"], {"Range": f"bytes={directory_offset}-{directory_offset + directory_size - 1}"}
    )
    assert status == 206 and len(directory) == directory_size
    names, offset = [], 0
    while directory[offset : offset + 4] == b"PK\x01\x02":
        name_len, extra_len, comment_len = struct.unpack("<HHH", directory[offset + 28 : offset + 34])
        names.append(directory[offset + 46 : offset + 46 + name_len].decode())
        offset += 46 + name_len + extra_len + comment_len
    assert {f"{large['datasets'][0]}.{ext}" for ext in ("shp", "shx", "dbf")} <= set(names)


def test_the_download_script_names_its_kmz_only_in_content_disposition(testweb):
    (parks,) = [r for r in testweb["resources"] if "download?" in r["url"]]
    status, headers, body = get(parks["url"])
    assert status == 200
    assert headers["content-type"] == "application/octet-stream"
    assert 'filename="parks.kmz"' in headers["content-disposition"]
    with zipfile.ZipFile(io.BytesIO(body)) as kmz:
        assert kmz.namelist()[0] == "doc.kml"
        assert f"<name>{parks['datasets'][0]}</name>".encode() in kmz.read("doc.kml")


def test_every_planted_file_holds_its_dataset(testweb):
    for resource in (r for r in testweb["resources"] if r["type"] in ("KML", "SHAPEFILE")):
        status, _, body = get(resource["url"])
        assert status == 200, resource["url"]
        name = resource["datasets"][0]
        if resource["type"] == "SHAPEFILE":
            members = set(zipfile.ZipFile(io.BytesIO(body)).namelist())
            assert {f"{name}.shp", f"{name}.shx", f"{name}.dbf"} <= members, resource["url"]
        else:
            kml = zipfile.ZipFile(io.BytesIO(body)).read("doc.kml") if body[:2] == b"PK" else body
            assert etree.QName(xml_root(kml)).localname == "kml" and f"<name>{name}</name>".encode() in kml


def test_robots_txt_keeps_crawlers_out_of_the_private_pages(testweb):
    for prefix in testweb["robots_disallowed"]:
        parts = urlsplit(prefix)
        status, _, body = get(f"{parts.scheme}://{parts.netloc}/robots.txt")
        assert status == 200
        robots = Protego.parse(body.decode())
        assert not robots.can_fetch(prefix, "GeoWebHarvester")
        assert robots.can_fetch(f"{parts.scheme}://{parts.netloc}/", "GeoWebHarvester")
    excluded = [r for r in testweb["resources"] if r["via"] == "robots-excluded"]
    assert excluded and all(
        any(r["source_page"].startswith(p) for p in testweb["robots_disallowed"]) for r in excluded
    )


def test_one_site_asks_for_a_small_crawl_delay(testweb):
    delays = []
    for origin in testweb["servers"]:
        status, _, body = get(f"{origin}/robots.txt")
        if status == 200 and (delay := Protego.parse(body.decode()).crawl_delay("GeoWebHarvester")):
            delays.append(delay)
    assert delays and all(0 < d <= 0.2 for d in delays)


def decoy(manifest: dict, word: str) -> str:
    """The URL of the one decoy whose reason mentions ``word``."""
    (url,) = [d["url"] for d in manifest["decoys"] if word in d["why"]]
    return url


def test_the_soft_404_kml_is_an_html_page(testweb):
    url = decoy(testweb, "soft 404")
    status, headers, _ = get(url)
    assert url.endswith(".kml") and status == 200 and headers["content-type"].startswith("text/html")


def test_the_decoy_zip_holds_no_shapefile(testweb):
    names = zipfile.ZipFile(io.BytesIO(get(decoy(testweb, "no shapefile"))[2])).namelist()
    assert names and not any(n.endswith(".shp") for n in names)


def test_the_html_endpoint_answers_getcapabilities_with_html(testweb):
    status, headers, _ = get(capabilities_url(decoy(testweb, "GetCapabilities included"), "WMS"))
    assert status == 200 and headers["content-type"].startswith("text/html")


def test_the_broken_endpoint_answers_only_exception_reports(testweb):
    for service in OGC_TYPES:
        body = get(capabilities_url(decoy(testweb, "ServiceExceptionReport"), service))[2]
        assert root_key(xml_root(body)) == ("http://www.opengis.net/ogc", "ServiceExceptionReport")


def test_the_calendar_never_ends(testweb):
    start = decoy(testweb, "calendar")
    assert 'href="/calendar/2024/02"' in get(start)[2].decode()
    assert 'href="/calendar/10000/01"' in get(start.replace("2024/01", "9999/12"))[2].decode()


def test_the_slow_page_keeps_the_client_waiting(testweb):
    with pytest.raises(TimeoutError):
        get(decoy(testweb, "5 s"), timeout=0.5)


def test_the_tms_is_no_ogc_capabilities(testweb):
    assert root_key(xml_root(get(decoy(testweb, "TMS"))[2])) == (None, "TileMapService")


def test_every_seed_page_is_served(testweb):
    for seed in testweb["seeds"]:
        status, headers, body = get(seed)
        assert status == 200 and headers["content-type"].startswith("text/html") and b"<a href=" in body
