"""CSW 2.0.2 through GeoHub's /geohub/csw, read with OWSLib's client (the library QGIS MetaSearch uses): what
the harvest holds, found by text, box and type, paged, each service's link leading to its capabilities, and a
service's conformance level and what its checks measured in its ISO record's data quality."""

from __future__ import annotations

import psycopg2
import pytest
from lxml import etree
from owslib import fes
from owslib.csw import CatalogueServiceWeb
from owslib.wfs import WebFeatureService
from owslib.wms import WebMapService

from geoweb.models import FILE_TYPES, Conformance, Page, Resource
from geoweb.store import Store
from tests.catalogue.conftest import CRAWL_RUN, crawled
from tests.geohub import data

pytestmark = pytest.mark.testweb

EPSG_4326 = "urn:ogc:def:crs:EPSG::4326"  # latitude first, as CSW 2.0.2 boxes in EPSG:4326 are
ISO_19139 = "http://www.isotc211.org/2005/gmd"
SITE = "http://quality.example/"
# The quantitative reports of an ISO record's data quality, which OWSLib keeps only in the record's XML
MEASURES = "gmd:dataQualityInfo/gmd:DQ_DataQuality/gmd:report/gmd:DQ_ConceptualConsistency"
NAMESPACES = {
    "gmd": ISO_19139,
    "gco": "http://www.isotc211.org/2005/gco",
    "xlink": "http://www.w3.org/1999/xlink",
}
PERCENT, UNITY, SECOND = (
    "urn:ogc:def:uom:OGC::percent", "http://www.opengis.net/def/uom/OGC/1.0/unity",
    "http://www.opengis.net/def/uom/SI/second",
)  # fmt: skip


@pytest.fixture(scope="module")
def csw(catalogue, auth) -> CatalogueServiceWeb:
    return CatalogueServiceWeb(catalogue.csw, headers=auth, timeout=60)


def records(csw: CatalogueServiceWeb, *constraints, maxrecords: int = 100) -> dict:
    """Every record matching the constraints (ANDed), by identifier: one page of up to ``maxrecords``."""
    found = fes.And(list(constraints)) if len(constraints) > 1 else constraints[0]
    csw.getrecords2(constraints=[found] if constraints else [], esn="full", maxrecords=maxrecords)
    assert csw.results["matches"] == csw.results["returned"] == len(csw.records)
    return dict(csw.records)


def titles(found: dict) -> set[str]:
    return {r.title for r in found.values()}


def stored(dsn: str, sql: str, *args) -> list[tuple]:
    with psycopg2.connect(dsn) as conn, conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchall()


def test_the_capabilities_name_the_public_address_and_offer_no_transaction(csw, catalogue):
    assert csw.identification.title == "GeoWeb Harvester catalogue"
    operations = {op.name: op for op in csw.operations}
    assert "Transaction" not in operations and "Harvest" not in operations
    assert {m["url"] for m in operations["GetRecords"].methods} == {catalogue.csw}


def test_every_discovered_resource_is_one_record_with_its_type_and_link(csw, catalogue_dsn):
    expected = {
        f"urn:geoweb:resource:{id_}": (type_, url)
        for id_, type_, url in stored(catalogue_dsn, "SELECT id, type, url FROM resources")
    }
    csw.getrecords2(esn="full", maxrecords=1)
    assert csw.results["matches"] == len(expected)
    found = {}
    for start in range(1, len(expected) + 1, 100):
        csw.getrecords2(esn="full", maxrecords=100, startposition=start)
        found |= csw.records
    assert found.keys() == expected.keys()
    for identifier, record in found.items():
        type_, url = expected[identifier]
        assert record.format == type_
        assert record.type == ("dataset" if type_ in FILE_TYPES else "service")
        assert [ref["url"] for ref in record.references] == [url.replace(",", "%2C").replace("^", "%5E")]


def test_text_finds_titles_providers_and_concepts_stemmed(csw):
    water = titles(records(csw, fes.PropertyIsLike("csw:AnyText", "%water%")))
    # the provider's name, and a base map whose only water is its dataset's concept (river)
    assert {data.GAUGES.title, data.DIKES.title, data.VALAIS.title, data.RIVERS.title} <= water
    assert data.PARCELS.title not in water and data.ZERMATT_TITLE.title not in water
    assert data.RIVERS.title in titles(records(csw, fes.PropertyIsLike("csw:AnyText", "reservoir")))


def intersecting(dsn: str, west: float, south: float, east: float, north: float) -> set[str]:
    """The titles of the resources whose stored box PostGIS finds intersecting the box."""
    found = stored(dsn, "SELECT coalesce(title, url) FROM resources "
                   "WHERE ST_Intersects(bbox, ST_MakeEnvelope(%s, %s, %s, %s, 4326))", west, south, east, north)  # fmt: skip
    return {title for (title,) in found}


def test_a_box_finds_what_it_intersects_across_the_antimeridian_too(csw, catalogue_dsn):
    bern = titles(records(csw, fes.BBox([46.9, 7.3, 47.0, 7.5], crs=EPSG_4326)))
    assert bern == intersecting(catalogue_dsn, 7.3, 46.9, 7.5, 47.0)
    assert data.PARCELS.title in bern and data.RIVERS.title not in bern and data.STATIONS.title not in bern
    fiji = titles(records(csw, fes.BBox([-18.0, 178.0, -17.0, 179.0], crs=EPSG_4326)))
    assert fiji == intersecting(catalogue_dsn, 178.0, -18.0, 179.0, -17.0)
    assert data.ISLANDS.title in fiji and data.RIVERS.title not in fiji
    record = next(iter(records(csw, fes.PropertyIsEqualTo("dc:title", data.PARCELS.title)).values()))
    box = record.bbox
    assert (float(box.minx), float(box.miny), float(box.maxx), float(box.maxy)) == pytest.approx(
        (7.3, 46.9, 7.5, 47.0)  # sent latitude first (EPSG:4326's axis order); OWSLib reads it back as x, y
    )


def test_type_and_format_queries(csw, catalogue_dsn):
    files = records(csw, fes.PropertyIsEqualTo("dc:type", "dataset"))
    assert {r.format for r in files.values()} <= set(FILE_TYPES)
    [(count,)] = stored(
        catalogue_dsn, "SELECT count(*) FROM resources WHERE type = ANY(%s)", list(FILE_TYPES)
    )
    assert len(files) == count
    wms = records(csw, fes.PropertyIsEqualTo("dc:format", "WMS"), fes.PropertyIsLike("csw:AnyText", "alpine"))
    assert titles(wms) == {r.title for r in data.ALPINE}
    assert all(r.type == "service" for r in wms.values())


def test_pages_of_a_query_cover_its_matches_once(csw):
    text = fes.And([fes.PropertyIsEqualTo("dc:format", "WMS"), fes.PropertyIsLike("csw:AnyText", "%alpine%")])
    seen, start = [], 1
    while start:
        csw.getrecords2(constraints=[text], esn="brief", maxrecords=10, startposition=start)
        assert csw.results["matches"] == len(data.ALPINE)
        seen += list(csw.records)
        start = csw.results["nextrecord"] or 0
    assert len(seen) == len(set(seen)) == len(data.ALPINE)
    ordered = fes.SortBy([fes.SortProperty("dc:title", "ASC")])
    csw.getrecords2(constraints=[text], esn="brief", maxrecords=5, startposition=6, sortby=ordered)
    assert [r.title for r in csw.records.values()] == sorted(r.title for r in data.ALPINE)[5:10]


def test_a_record_by_id_and_hostile_words_as_text(csw):
    hostile = records(
        csw, fes.PropertyIsEqualTo("dc:format", "KML"), fes.PropertyIsLike("csw:AnyText", "flood")
    )
    identifier, record = next(iter(hostile.items()))
    assert record.title == data.HOSTILE_TITLE and record.abstract == data.HOSTILE_ABSTRACT
    csw.getrecordbyid([identifier], esn="full")
    assert csw.records[identifier].title == data.HOSTILE_TITLE
    [control] = records(csw, fes.PropertyIsLike("csw:AnyText", "control characters")).values()
    assert (control.title, control.abstract, control.subjects) == (
        "Control characters",
        "from JSON",
        ["a  b", "c"],
    )


def test_each_crawled_service_links_to_capabilities_its_client_reads(csw, testweb, catalogue_dsn):
    """Follow the OGC:WMS and OGC:WFS links of the test web's services to the real servers."""
    clients = {
        "WMS": lambda url: WebMapService(url, version="1.3.0"),
        "WFS": lambda url: WebFeatureService(url),
    }
    loaded = stored(catalogue_dsn, "SELECT r.url, r.type FROM resources r JOIN run_resources rr "
                    "ON rr.resource_id = r.id WHERE rr.run_id = %s", CRAWL_RUN)  # fmt: skip
    assert {(r["url"], r["type"]) for r in crawled(testweb)} <= set(loaded)
    followed = 0
    for kind, client in clients.items():
        for record in records(csw, fes.PropertyIsEqualTo("dc:format", kind)).values():
            (link,) = record.references
            assert link["scheme"] == f"OGC:{kind}"
            if not link["url"].startswith("http://127.0.0.1:"):
                continue  # GeoHub's made-up sites
            service = client(link["url"])
            assert service.identification.type.upper().endswith(kind)
            assert list(service.contents), f"{kind} {link['url']} lists nothing"
            followed += 1
    assert followed >= 4


def test_a_transaction_is_refused_and_changes_nothing(catalogue, auth, csw):
    csw.getrecords2(esn="brief", maxrecords=1)
    before = csw.results["matches"]
    delete = (
        '<csw:Transaction xmlns:csw="http://www.opengis.net/cat/csw/2.0.2" xmlns:ogc="http://www.opengis.net/ogc"'
        ' service="CSW" version="2.0.2"><csw:Delete><csw:Constraint version="1.1.0"><ogc:Filter>'
        "<ogc:PropertyIsLike wildCard='%' singleChar='_' escapeChar='\\'><ogc:PropertyName>dc:title"
        "</ogc:PropertyName><ogc:Literal>%</ogc:Literal></ogc:PropertyIsLike></ogc:Filter></csw:Constraint>"
        "</csw:Delete></csw:Transaction>"
    )
    session = catalogue.geohub.session()
    answer = session.post(catalogue.csw, data=delete, headers={**auth, "Content-Type": "application/xml"})
    assert "ExceptionReport" in answer.text and "TransactionSummary" not in answer.text
    csw.getrecords2(esn="brief", maxrecords=1)
    assert csw.results["matches"] == before


def test_what_a_harvest_loads_or_removes_is_in_the_catalogue_at_once(csw, catalogue_dsn):
    fresh = Resource(
        url="http://fresh.example/wms", type="WMS", title="Freshly harvested glaciers", bbox=(8, 46, 9, 47)
    )
    text = fes.PropertyIsLike("csw:AnyText", "freshly harvested glaciers")
    assert records(csw, text) == {}
    with Store(catalogue_dsn) as store:
        store.frontier.commit_pages(CRAWL_RUN, [Page(fresh.url, None, 0, [fresh])], 1, keyword_of={})
        try:
            assert titles(records(csw, text)) == {fresh.title}
        finally:
            with store.conn, store.conn.cursor() as cur:
                cur.execute("DELETE FROM resources WHERE url = %s", (fresh.url,))
    assert records(csw, text) == {}


def test_a_services_conformance_level_is_its_iso_records_data_quality(csw, catalogue_dsn):
    """What QGIS MetaSearch shows of an ISO record: the standard, passed or not, and the lineage statement."""
    conformant = Resource(
        url="http://conformant.example/wms", type="WMS", version="1.3.0", title="Conformant glaciers",
        conformance=Conformance.CONFORMANT,
    )  # fmt: skip
    readable = Resource(
        url="http://readable.example/wms", type="WMS", version="1.1.1", title="Readable glaciers",
        conformance=Conformance.READABLE, defects=["no Capability/Request section", "decimal commas"],
        owslib_error="OWSLib's WMS reader cannot read it: TypeError: 'NoneType' object is not iterable",
    )  # fmt: skip
    urls = [conformant.url, readable.url]
    with Store(catalogue_dsn) as store:
        store.frontier.commit_pages(
            CRAWL_RUN, [Page(SITE, None, 0, [conformant, readable])], 1, keyword_of={}
        )
        try:
            ids = dict(stored(catalogue_dsn, "SELECT url, 'urn:geoweb:resource:' || id FROM resources "
                              "WHERE url = ANY(%s)", urls))  # fmt: skip
            csw.getrecordbyid([ids[url] for url in urls], outputschema=ISO_19139)
            good, sloppy = (csw.records[ids[url]].dataquality for url in urls)
            assert (good.conformancetitle, good.conformancedegree, good.lineage) == (
                ["OGC WMS 1.3.0"],
                ["true"],
                "Capabilities document read whole by OWSLib",
            )
            assert (sloppy.conformancetitle, sloppy.conformancedegree, sloppy.lineage) == (
                ["OGC WMS 1.1.1"],
                ["false"],
                "Capabilities document readable: no Capability/Request section; decimal commas; "
                "OWSLib's WMS reader cannot read it: TypeError: 'NoneType' object is not iterable",
            )
        finally:
            with store.conn, store.conn.cursor() as cur:
                cur.execute("DELETE FROM resources WHERE url = ANY(%s)", (urls,))


def test_what_nothing_judges_has_no_data_quality_and_brief_records_none(csw, catalogue_dsn):
    [(identifier,)] = stored(catalogue_dsn, "SELECT 'urn:geoweb:resource:' || id FROM resources "
                             "WHERE type = 'KML' AND conformance IS NULL LIMIT 1")  # fmt: skip
    csw.getrecordbyid([identifier], outputschema=ISO_19139)
    assert csw.records[identifier].dataquality is None
    [(judged,)] = stored(catalogue_dsn, "SELECT 'urn:geoweb:resource:' || id FROM resources "
                         "WHERE conformance IS NOT NULL LIMIT 1")  # fmt: skip
    csw.getrecordbyid([judged], esn="brief", outputschema=ISO_19139)
    assert csw.records[judged].dataquality is None  # ISO's full element set only
    csw.getrecordbyid([judged], outputschema=ISO_19139)
    assert csw.records[judged].dataquality.conformancedegree in (["true"], ["false"])


def measures(record) -> dict[str, tuple[str, str]]:
    """An ISO record's measured values by the name of their measure, each with its unit."""
    found = {}
    for measure in etree.fromstring(record.xml).iterfind(MEASURES, NAMESPACES):
        name = measure.findtext("gmd:nameOfMeasure/gco:CharacterString", namespaces=NAMESPACES)
        result = measure.find("gmd:result/gmd:DQ_QuantitativeResult", NAMESPACES)
        unit = result.find("gmd:valueUnit", NAMESPACES).get(f"{{{NAMESPACES['xlink']}}}href")
        found[name] = (result.findtext("gmd:value/gco:Record", namespaces=NAMESPACES), unit)
    return found


def iso_records(csw: CatalogueServiceWeb, dsn: str, urls: list[str]) -> list:
    """The ISO records of the resources at ``urls``, in that order."""
    ids = dict(
        stored(dsn, "SELECT url, 'urn:geoweb:resource:' || id FROM resources WHERE url = ANY(%s)", urls)
    )
    csw.getrecordbyid([ids[url] for url in urls], outputschema=ISO_19139)
    return [csw.records[ids[url]] for url in urls]


def test_a_checked_service_s_availability_response_time_and_inspire_verdicts(csw, catalogue_dsn):
    """What a revisit measured, as OWSLib reads an ISO record: each INSPIRE criterion judged as a report on its
    rule, the figures in the lineage statement, and each figure as a quantitative report in the XML."""
    steady, flaky = iso_records(csw, catalogue_dsn, [data.STEADY.url, data.FLAKY.url])
    availability_rule, getmap_rule = stored(
        catalogue_dsn, "SELECT DISTINCT inspire_availability_rule, inspire_getmap_rule FROM resource_quality "
        "WHERE type = 'WMS'",
    )[0]  # fmt: skip
    quality = steady.dataquality
    assert (quality.conformancetitle, quality.conformancedegree) == (
        [availability_rule, getmap_rule],
        ["true", "true"],
    )
    assert quality.lineage == "Checked 54 times over 30 days: 100 % successful, median response time 0.39 s"
    assert measures(steady) == {
        "availability over 30 days": ("100", PERCENT),
        "checks over 30 days": ("54", UNITY),
        "median response time": ("0.39", SECOND),
    }
    quality = (
        flaky.dataquality
    )  # too few GetMap checks to judge its performance: that criterion has no report
    assert (quality.conformancetitle, quality.conformancedegree) == ([availability_rule], ["false"])
    assert quality.lineage == "Checked 30 times over 30 days: 66.67 % successful, median response time 2 s"
    assert measures(flaky)["availability over 30 days"] == ("66.67", PERCENT)


def test_a_judged_service_s_checks_follow_its_conformance_level(csw, catalogue_dsn):
    judged = Resource(
        url="http://checked.example/wms", type="WMS", version="1.3.0", title="Checked glaciers",
        conformance=Conformance.CONFORMANT,
    )  # fmt: skip
    with Store(catalogue_dsn) as store:
        store.frontier.commit_pages(CRAWL_RUN, [Page(SITE, None, 0, [judged])], 1, keyword_of={})
        try:
            data.checked(
                store, judged, [("unchanged", "GetCapabilities", 0.25), ("failed", "GetCapabilities", None)]
            )
            [record] = iso_records(csw, catalogue_dsn, [judged.url])
            quality = record.dataquality
            assert (quality.conformancetitle, quality.conformancedegree) == (["OGC WMS 1.3.0"], ["true"])
            assert quality.lineage == (
                "Capabilities document read whole by OWSLib. "
                "Checked 2 times over 30 days: 50 % successful, median response time 0.25 s"
            )
        finally:
            with store.conn, store.conn.cursor() as cur:
                cur.execute("DELETE FROM resources WHERE url = %s", (judged.url,))
