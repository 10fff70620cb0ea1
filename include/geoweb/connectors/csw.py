"""OGC CSW catalogues: GetRecords page by page, Dublin Core or ISO 19139, incremental by modification date.

Requests are KVP GETs through the crawl's fetcher (``geoweb.connectors.syncfetch``): the address guard, size
caps, retries and the broken gzip of pycsw 2.6 are handled there, and a catalogue the crawl discovered is a
stranger's server like any other. Every answer is parsed with ``geoweb.xmlsafe``. Loading a catalogue into
the store is ``geoweb.harvest.catalogue``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from lxml import etree
from owslib.catalogue.csw2 import CswRecord
from owslib.iso import MD_Metadata

from geoweb.connectors.base import ConfigError, Connector, ConnectorError
from geoweb.connectors.syncfetch import SyncFetcher
from geoweb.detect.ogc.common import OGCExceptionReport, listed_bbox, wgs84_box, with_query
from geoweb.detect.ogc.csw import DC_RECORDS, search_results
from geoweb.errors import GeowebError
from geoweb.models import OnlineResource, Record, union_bbox
from geoweb.settings import Settings
from geoweb.values import stripped, words
from geoweb.xmlsafe import parse_xml

log = logging.getLogger("geoweb.connectors.csw")

# outputSchema, typeNames, the namespace declaration of typeNames, and the queryable of the modification date
SCHEMAS = {
    "dc": (
        "http://www.opengis.net/cat/csw/2.0.2",
        "csw:Record",
        "xmlns(csw=http://www.opengis.net/cat/csw/2.0.2)",
        ("dct:modified", 'xmlns:dct="http://purl.org/dc/terms/"'),
    ),
    "iso": (
        "http://www.isotc211.org/2005/gmd",
        "gmd:MD_Metadata",
        "xmlns(gmd=http://www.isotc211.org/2005/gmd)",
        ("apiso:Modified", 'xmlns:apiso="http://www.opengis.net/cat/csw/apiso/1.0"'),
    ),
}
ISO_RECORDS = frozenset({"MD_Metadata", "MI_Metadata"})

# Small page sizes and short timeouts are the classic harvest failures: catalogues answer slowly.
DEFAULT_PAGE_SIZE = 100
DEFAULT_TIMEOUT = 120.0  # seconds for one page
DEFAULT_MAX_PAGES = 10_000


def parse_time(value: str | None) -> datetime | None:
    """An ISO 8601 date or date-time (``Z``, or a space for ``T``; UTC when it has no zone); None if unreadable."""
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value.strip().replace(" ", "T", 1))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


# --- records ---------------------------------------------------------------------------------------------
# Records are read by OWSLib's record classes (CswRecord for Dublin Core, MD_Metadata for ISO 19139) from
# the elements of the hardened tree; what they hold is read null-safe here.


def dc_record(elem: etree._Element, source: str) -> Record | None:
    """A ``csw:Record`` (or Summary/BriefRecord) as a Record; None without an identifier."""
    record = CswRecord(elem)
    identifier = stripped(record.identifier)
    if identifier is None:
        return None
    links = [OnlineResource(url, protocol=stripped(ref.get("scheme")) or stripped(ref.get("protocol")),
                            name=stripped(ref.get("name")) or stripped(ref.get("description")))
             for ref in [*record.references, *record.uris] if (url := stripped(ref.get("url")))]  # fmt: skip
    return Record(
        source=source,
        identifier=identifier,
        title=stripped(record.title),
        abstract=stripped(record.abstract),
        keywords=words(record.subjects),
        bbox=union_bbox((wgs84_box(record.bbox), wgs84_box(record.bbox_wgs84))),
        modified=parse_time(stripped(record.modified) or stripped(record.date)),
        links=links,
        extra={"schema": "dc", "type": stripped(record.type),
               "formats": words([record.format])},
    )  # fmt: skip


def iso_record(elem: etree._Element, source: str) -> Record | None:
    """A ``gmd:MD_Metadata`` (ISO 19139) as a Record; None without a file identifier. Links are the online
    resources of the distribution and of a service's operations (contacts' web sites are not the data's)."""
    metadata = MD_Metadata(elem)
    identifier = stripped(metadata.identifier)
    if identifier is None:
        return None
    ident = next(iter(metadata.identification or ()), None)
    distribution = metadata.distribution
    online = [*getattr(distribution, "online", ()),
              *(o for d in getattr(distribution, "distributor", ()) for o in d.online),
              *(c for op in getattr(ident, "operations", ()) for c in op.get("connectpoint", ()))]  # fmt: skip
    links: dict[tuple[str, str | None], OnlineResource] = {}
    for resource in online:
        url, protocol = stripped(resource.url), stripped(resource.protocol)
        if url and (url, protocol) not in links:  # each operation of a service repeats its endpoint
            links[url, protocol] = OnlineResource(url, protocol=protocol, name=stripped(resource.name))
    box = getattr(ident, "bbox", None)
    return Record(
        source=source,
        identifier=identifier,
        title=stripped(getattr(ident, "title", None)),
        abstract=stripped(getattr(ident, "abstract", None)),
        keywords=words(k.name for group in getattr(ident, "keywords", ()) for k in group.keywords),
        bbox=None if box is None else listed_bbox((box.minx, box.miny, box.maxx, box.maxy)),
        modified=parse_time(stripped(metadata.datestamp)),
        links=list(links.values()),
        extra={"schema": "iso19139", "type": stripped(metadata.hierarchy),
               "service_type": stripped(getattr(ident, "type", None))},  # SV_ServiceIdentification's serviceType
    )  # fmt: skip


@dataclass
class SearchPage:
    """One GetRecords answer: its records (identifiers not seen on earlier pages) and the paging figures."""

    start: int
    matched: int
    returned: int
    next_record: int
    incremental: bool  # filtered by modification date
    records: list[Record] = field(default_factory=list)
    skipped: int = 0  # entries without an identifier, or of a schema we do not read
    duplicates: int = 0  # identifiers an earlier page already had

    @property
    def last(self) -> bool:
        return self.next_record == 0 or self.returned == 0 or self.next_record > self.matched


def parse_page(body: bytes, source: str, start: int, incremental: bool) -> SearchPage:
    """A GetRecords response; raises ConnectorError for an exception report or anything that is not one."""
    try:
        results = search_results(parse_xml(body))
    except OGCExceptionReport:
        raise
    except GeowebError as exc:
        raise ConnectorError(f"{source}: records from {start}: {exc}") from None
    figures = {}
    for name in ("numberOfRecordsMatched", "nextRecord"):
        value = (results.get(name) or "").strip()
        figures[name] = int(value) if value.isdigit() else None
    if figures["numberOfRecordsMatched"] is None:
        raise ConnectorError(f"{source}: records from {start}: numberOfRecordsMatched is missing")
    entries = [e for e in results if isinstance(e.tag, str)]
    page = SearchPage(
        start=start,
        matched=figures["numberOfRecordsMatched"],
        returned=len(entries),
        # nextRecord is mandatory, but not every catalogue sends it
        next_record=figures["nextRecord"] if figures["nextRecord"] is not None else start + len(entries),
        incremental=incremental,
    )
    for entry in entries:
        name = etree.QName(entry).localname
        parse = dc_record if name in DC_RECORDS else iso_record if name in ISO_RECORDS else None
        record = parse(entry, source) if parse else None
        if record is None:
            page.skipped += 1
        else:
            page.records.append(record)
    if page.skipped:
        log.warning(
            "%s: %d entries from %d without an identifier or in another schema", source, page.skipped, start
        )
    return page


# --- the connector -----------------------------------------------------------------------------------------


class CSWConnector(Connector):
    """A CSW 2.0.2 catalogue. Config: ``url`` (the endpoint), ``schema`` (dc or iso, default dc), ``page_size``
    (default 100), ``timeout`` (seconds per page, default 120), ``max_pages``, ``allowed_hosts`` (hosts on
    private addresses that may be harvested: tests and local catalogues)."""

    name = "csw"
    required = ("url",)

    def __init__(self, config: Mapping[str, Any]):
        super().__init__(config)
        self.url = str(config["url"]).strip()
        self.schema = str(config.get("schema") or "dc")
        if self.schema not in SCHEMAS:
            raise ConfigError(f"csw: schema must be one of {', '.join(SCHEMAS)}, not {self.schema!r}")
        self.page_size = self.number_setting("page_size", int, DEFAULT_PAGE_SIZE, 1)
        self.max_pages = self.number_setting("max_pages", int, DEFAULT_MAX_PAGES, 1)
        timeout = self.number_setting("timeout", float, DEFAULT_TIMEOUT, 0.001)
        hosts = config.get("allowed_hosts") or ()
        hosts = hosts.split(",") if isinstance(hosts, str) else hosts
        # a slow catalogue may stay silent while it builds a page: the read timeout is the page's
        self.settings = Settings.from_env(
            total_timeout=timeout,
            read_timeout=timeout,
            allowed_hosts=frozenset(h.strip().lower() for h in hosts if h.strip()),
        )
        self.source = source_name(self.url)

    def records(self, since: datetime | None = None, **query: Any) -> Iterator[Record]:
        for page in self.pages(since):
            yield from page.records

    def pages(self, since: datetime | None = None) -> Iterator[SearchPage]:
        """The catalogue's records page by page, each identifier once. With ``since``, only records modified on
        or after its day; a catalogue that refuses the filter is harvested in full (``page.incremental``)."""
        with SyncFetcher(self.settings, self.source) as fetcher:
            seen: set[str] = set()
            start, count = 1, 0
            while True:
                try:
                    page = self._page(fetcher, start, since)
                except OGCExceptionReport as exc:
                    if since is None or start != 1:
                        raise ConnectorError(f"{self.source}: records from {start}: {exc}") from None
                    log.warning(
                        "%s refuses the modification-date filter (%s); harvesting in full", self.source, exc
                    )
                    since = None
                    continue
                fresh = [r for r in page.records if r.identifier not in seen]
                page.duplicates = len(page.records) - len(fresh)
                page.records = fresh
                seen.update(r.identifier for r in fresh)
                yield page
                count += 1
                if page.last:
                    return
                if page.next_record <= start:
                    raise ConnectorError(
                        f"{self.source}: nextRecord {page.next_record} does not advance past {start}"
                    )
                if count >= self.max_pages:
                    log.warning("%s: stopped after max_pages=%d pages", self.source, self.max_pages)
                    return
                start = page.next_record

    def _page(self, fetcher: SyncFetcher, start: int, since: datetime | None) -> SearchPage:
        response = fetcher.get(self.request_url(start, since), f"records from {start}")
        return parse_page(response.body, self.source, start, incremental=since is not None)

    def request_url(self, start: int, since: datetime | None) -> str:
        """The KVP GetRecords request of the page starting at ``start``."""
        output_schema, type_names, namespace, (queryable, prefix) = SCHEMAS[self.schema]
        query = {
            "service": "CSW",
            "version": "2.0.2",
            "request": "GetRecords",
            "typeNames": type_names,
            "namespace": namespace,
            "resultType": "results",
            "elementSetName": "full",
            "outputSchema": output_schema,
            "startPosition": str(start),
            "maxRecords": str(self.page_size),
        }
        if since is not None:
            # the day, not the instant: catalogues store dates as text and compare them as text
            query |= {
                "constraintLanguage": "FILTER",
                "constraint_language_version": "1.1.0",
                "constraint": (
                    f'<ogc:Filter xmlns:ogc="http://www.opengis.net/ogc" {prefix}>'
                    f"<ogc:PropertyIsGreaterThanOrEqualTo><ogc:PropertyName>{queryable}</ogc:PropertyName>"
                    f"<ogc:Literal>{since.astimezone(UTC).date().isoformat()}</ogc:Literal>"
                    "</ogc:PropertyIsGreaterThanOrEqualTo></ogc:Filter>"
                ),
            }
        return with_query(self.url, urlencode(query))


def source_name(url: str) -> str:
    """The store's name of the catalogue at ``url``."""
    return f"csw:{url}"
