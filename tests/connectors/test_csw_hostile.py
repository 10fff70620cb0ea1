"""The CSW harvest against catalogues that misbehave (a loopback CSW serving crafted GetRecords answers) and
on real-world ISO 19139 records: paging that repeats or stalls, exception reports, hostile XML, failures
half-way, refused filters, records across catalogues. Each ends in a clear error or a logged skip, and what
earlier pages loaded stays."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from html import escape

import pytest
from aiohttp import web

from geoweb.connectors import ConnectorError
from geoweb.connectors.csw import CSWConnector, iso_record, parse_page
from geoweb.harvest.catalogue import catalogue_seeds, harvest_catalogue
from geoweb.models import Record
from geoweb.store import Store
from geoweb.xmlsafe import parse_xml
from tests.data.corpus import RECORDS
from tests.standins.server import Standin

PAGE = """<?xml version="1.0" encoding="UTF-8"?>
<csw:GetRecordsResponse xmlns:csw="http://www.opengis.net/cat/csw/2.0.2" xmlns:dc="http://purl.org/dc/elements/1.1/"
    xmlns:dct="http://purl.org/dc/terms/" xmlns:ows="http://www.opengis.net/ows" version="2.0.2">
  <csw:SearchStatus timestamp="2026-01-01T00:00:00Z"/>
  <csw:SearchResults {figures} elementSet="full">{records}</csw:SearchResults>
</csw:GetRecordsResponse>"""
EXCEPTION = """<?xml version="1.0" encoding="UTF-8"?>
<ows:ExceptionReport xmlns:ows="http://www.opengis.net/ows" version="1.2.0">
  <ows:Exception exceptionCode="{code}" locator="constraint"><ows:ExceptionText>{text}</ows:ExceptionText></ows:Exception>
</ows:ExceptionReport>"""
BOMB = """<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>
<csw:GetRecordsResponse xmlns:csw="http://www.opengis.net/cat/csw/2.0.2">&lol2;</csw:GetRecordsResponse>"""


def dc(identifier: str | None, *, modified: str = "2025-03-01", title: str = "A record", link: str | None = None,
       box: str = "<ows:LowerCorner>10 20</ows:LowerCorner><ows:UpperCorner>11 21</ows:UpperCorner>") -> str:  # fmt: skip
    """A csw:Record (its box in EPSG:4326, latitude first)."""
    ident = f"<dc:identifier>{escape(identifier)}</dc:identifier>" if identifier is not None else ""
    ref = f'<dct:references scheme="OGC:WMS">{escape(link)}</dct:references>' if link else ""
    return (
        f"<csw:Record>{ident}<dc:title>{escape(title)}</dc:title><dct:modified>{modified}</dct:modified>{ref}"
        f'<ows:BoundingBox crs="urn:ogc:def:crs:EPSG::4326">{box}</ows:BoundingBox></csw:Record>'
    )


class CatalogueStandin(Standin):
    """A CSW at ``/csw`` answering GetRecords from ``records`` (csw:Record XML), ``startPosition`` and
    ``maxRecords`` as a catalogue does; ``layout(start, size)`` may replace the paging: it returns (records,
    the figures attribute text). Faults: ``server`` (500), ``exception`` (an OGC exception report),
    ``malformed`` (XML cut short), ``bomb`` (a DOCTYPE with entities), ``html`` (an error page), ``slow``
    (1.5 s of silence first). A ``constraint`` is refused with an exception report if ``filters`` is False."""

    path = "/csw"

    def __init__(self, records: list[str]):
        super().__init__()
        self.records = records
        self.filters = True
        self.layout: Callable[[int, int], tuple[list[str], str]] | None = None

    @property
    def endpoint(self) -> str:
        return f"{self.url}/csw"

    def page_of(self, request: web.Request) -> int:
        start, size = self._window(request)
        return (start - 1) // size + 1

    def _window(self, request: web.Request) -> tuple[int, int]:
        query = {k.lower(): v for k, v in request.query.items()}
        return int(query.get("startposition", "1")), int(query.get("maxrecords", "10"))

    def fault(self, kind: str, request: web.Request) -> web.StreamResponse:
        if kind == "server":
            return web.Response(status=500, text="Internal Server Error")
        if kind == "exception":
            return xml(EXCEPTION.format(code="NoApplicableCode", text="database is locked"))
        if kind == "html":
            return web.Response(text="<html><body>Maintenance</body></html>", content_type="text/html")
        if kind == "bomb":
            return xml(BOMB)
        return xml(PAGE.format(figures='numberOfRecordsMatched="3"', records="<csw:Record><dc:identifier>"))

    async def answer(self, request: web.Request) -> web.StreamResponse:
        if "constraint" in {k.lower() for k in request.query} and not self.filters:
            return xml(EXCEPTION.format(code="InvalidParameterValue", text="Invalid Filter query"))
        start, size = self._window(request)
        if self.layout is not None:
            records, figures = self.layout(start, size)
        else:
            records = self.records[start - 1 : start - 1 + size]
            following = start + len(records) if start - 1 + size < len(self.records) else 0
            figures = (f'numberOfRecordsMatched="{len(self.records)}" numberOfRecordsReturned="{len(records)}" '
                       f'nextRecord="{following}"')  # fmt: skip
        return xml(PAGE.format(figures=figures, records="".join(records)))


class SlowCatalogue(CatalogueStandin):
    async def answer(self, request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(1.5)
        return await super().answer(request)


def xml(text: str) -> web.Response:
    return web.Response(text=text, content_type="application/xml")


@pytest.fixture(autouse=True)
def no_retries(monkeypatch):
    """The fetcher's retries (with their backoff) are tested elsewhere; here a 500 is final at once."""
    monkeypatch.setenv("GEOWEB_RETRIES", "0")


@pytest.fixture
def store(postgis_dsn) -> Iterator[Store]:
    with Store(postgis_dsn) as opened:
        yield opened


def connector(standin: CatalogueStandin, **settings) -> CSWConnector:
    return CSWConnector({"url": standin.endpoint, "page_size": 5, "allowed_hosts": [f"127.0.0.1:{standin.port}"],
                         **settings})  # fmt: skip


def statuses(store: Store, source: str) -> dict[str, str]:
    with store.conn, store.conn.cursor() as cur:
        cur.execute("SELECT identifier, status FROM catalogue_records WHERE source = %s", (source,))
        return dict(cur.fetchall())


def records(count: int, prefix: str = "r") -> list[str]:
    return [
        dc(f"{prefix}{i:02d}", link=f"http://maps.example/{prefix}{i % 3}/wms?service=WMS")
        for i in range(count)
    ]


def test_identifiers_repeated_across_pages_are_kept_once():
    """An unstable sort order: each page starts with the last record of the page before."""
    pool = records(12)

    def overlapping(start: int, size: int) -> tuple[list[str], str]:
        window = pool[start - 1 : start - 1 + size]
        following = start + size - 1 if start - 1 + size < len(pool) else 0
        return (
            window,
            f'numberOfRecordsMatched="12" numberOfRecordsReturned="{len(window)}" nextRecord="{following}"',
        )

    with CatalogueStandin(pool) as csw:
        csw.layout = overlapping
        pages = list(connector(csw).pages())
    identifiers = [r.identifier for p in pages for r in p.records]
    assert identifiers == [f"r{i:02d}" for i in range(12)]
    assert sum(p.duplicates for p in pages) == len(pages) - 1


def test_a_next_record_that_does_not_advance_ends_in_an_error():
    with CatalogueStandin(records(12)) as csw:
        csw.layout = lambda start, size: (records(5), 'numberOfRecordsMatched="12" nextRecord="1"')
        with pytest.raises(ConnectorError, match="nextRecord 1 does not advance past 1"):
            list(connector(csw).records())


def test_a_missing_next_record_pages_on_by_what_was_returned():
    pool = records(12)
    with CatalogueStandin(pool) as csw:
        csw.layout = lambda start, size: (pool[start - 1 : start - 1 + size], 'numberOfRecordsMatched="12"')
        pages = list(connector(csw).pages())
    assert [p.start for p in pages] == [1, 6, 11] and sum(len(p.records) for p in pages) == 12


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("exception", r"records from 6: OGC exception report \(NoApplicableCode\): database is locked"),
        ("server", "records from 6: HTTP 500"),
        ("malformed", "records from 6: not well-formed XML"),
        ("bomb", "records from 6: DOCTYPE declares entities"),
        ("html", r"records from 6: not a GetRecords response \(root html\)"),
    ],
)
def test_a_broken_page_fails_the_harvest_keeps_earlier_pages_and_withdraws_nothing(kind, message, store):
    with CatalogueStandin(records(12)) as csw:
        stale = Record(source=connector(csw).source, identifier="stale", title="loaded by an earlier harvest")
        store.catalogue.upsert_records(connector(csw).source, [stale])
        csw.fail(page=2, kind=kind)
        with pytest.raises(ConnectorError, match=message):
            harvest_catalogue(store, connector(csw), full=True)
        source = connector(csw).source
    state = store.catalogue.source_state(source)
    assert state.last_status == "failed" and "records from 6" in state.last_error and state.watermark is None
    assert statuses(store, source) == {"stale": "active"} | {f"r{i:02d}": "active" for i in range(5)}


def test_a_catalogue_slower_than_the_timeout_is_a_clear_error():
    with SlowCatalogue(records(3)) as csw, pytest.raises(ConnectorError, match="did not answer in time"):
        list(connector(csw, timeout=0.3).records())


def test_missing_record_count_is_refused():
    with CatalogueStandin(records(3)) as csw:
        csw.layout = lambda start, size: (records(3), 'nextRecord="0"')
        with pytest.raises(ConnectorError, match="numberOfRecordsMatched is missing"):
            list(connector(csw).records())


def test_a_refused_date_filter_falls_back_to_a_full_harvest_that_withdraws(store, caplog):
    with CatalogueStandin(records(7)) as csw:
        source = connector(csw).source
        harvest_catalogue(store, connector(csw))
        assert store.catalogue.source_state(source).watermark == datetime(2025, 3, 1, tzinfo=UTC)
        csw.records = records(6)  # r06 deleted
        csw.filters = False
        with caplog.at_level(logging.WARNING):
            counts = harvest_catalogue(store, connector(csw))
    assert "refuses the modification-date filter" in caplog.text
    assert counts["mode"] == "full" and counts["complete"] and counts["withdrawn"] == 1
    assert statuses(store, source)["r06"] == "withdrawn"


def test_records_without_identifier_are_skipped_and_counted(store, caplog):
    with CatalogueStandin([*records(4), dc(None)]) as csw:
        with caplog.at_level(logging.WARNING):
            counts = harvest_catalogue(store, connector(csw))
        assert counts["new"] == 4 and counts["skipped"] == 1 and counts["complete"]
    assert "1 entries from 1 without an identifier" in caplog.text


def test_hostile_record_values_are_cleaned_or_refused(store, caplog):
    hostile = [
        dc("x" * 3000),
        dc("outside", box="<ows:LowerCorner>95 10</ows:LowerCorner><ows:UpperCorner>99 20</ows:UpperCorner>"),
        dc("future", modified="9999-12-31"),
        dc("long", title="t" * 50_000),
    ]
    with CatalogueStandin(hostile) as csw:
        source = connector(csw).source
        with caplog.at_level(logging.WARNING):
            counts = harvest_catalogue(store, connector(csw))
    assert counts["new"] == 3 and counts["refused"] == 1
    assert "not stored: the identifier must be text" in caplog.text
    with store.conn, store.conn.cursor() as cur:
        cur.execute("SELECT identifier, footprint IS NULL, length(title) FROM catalogue_records WHERE source = %s",
                    (source,))  # fmt: skip
        rows = {row[0]: row[1:] for row in cur.fetchall()}
    assert rows["outside"][0] is True and rows["long"][1] == 2000
    # a date in the year 9999 does not become the watermark: it would hide every later change
    assert store.catalogue.source_state(source).watermark == datetime(2025, 3, 1, tzinfo=UTC)


def test_records_in_two_catalogues_are_one_record_and_one_seed(store):
    shared = [dc(f"shared-{i}", link=f"http://maps.example/shared{i}/wms?service=WMS") for i in range(3)]
    with CatalogueStandin([*shared, dc("only-a")]) as a, CatalogueStandin([*shared, dc("only-b")]) as b:
        for csw in (a, b):
            harvest_catalogue(store, connector(csw))
        with store.conn, store.conn.cursor() as cur:
            cur.execute(
                "SELECT identifier, sources FROM catalogue_records_unique WHERE identifier LIKE 'shared-%%' "
                "AND %s = ANY(sources)",
                (connector(a).source,),
            )
            unique = dict(cur.fetchall())
        seeds = catalogue_seeds(store)
        assert set(unique) == {"shared-0", "shared-1", "shared-2"}
        assert all(sorted(s) == sorted([connector(a).source, connector(b).source]) for s in unique.values())
        shared_seeds = [url for url in seeds if "/shared" in url]
        assert len(shared_seeds) == 3 and {seeds[u] for u in shared_seeds} <= {a.endpoint, b.endpoint}


def test_real_iso_records_give_identifiers_boxes_and_service_links():
    page = parse_page((RECORDS / "inspire-getrecords-response.xml").read_bytes(), "inspire", 83, False)
    assert (page.matched, page.returned, page.next_record) == (216, 2, 85) and not page.last
    wms, csw = page.records
    assert wms.identifier == "8dad9c98-0512-4845-a2bf-3ace1c93df6f" and wms.extra["service_type"] == "view"
    assert {link.protocol for link in wms.links} == {"OGC:WMS"}  # contacts' web sites are not links
    assert csw.bbox == pytest.approx((9.53357, 46.40749, 17.16639, 49.01875))
    root = parse_xml((RECORDS / "csw_dov_getrecordbyid.xml").read_bytes())
    record = iso_record(root.find("{*}MD_Metadata"), "dov")
    assert record.modified == datetime(2018, 2, 21, 16, 14, 24, tzinfo=UTC)
    assert ("OGC:WFS", "https://www.dov.vlaanderen.be/geoserver/wfs?") in {
        (x.protocol, x.url) for x in record.links
    }
    service = iso_record(parse_xml((RECORDS / "iso19139_srv.xml").read_bytes()), "bayern")
    # a service's operations repeat its endpoint: one link
    assert [x.url for x in service.links].count(
        "https://geoservices.bayern.de/wfs/v1/ogc_alkis_ave.cgi?"
    ) == 1
