"""OGC CSW catalogues: GetRecords page by page, Dublin Core or ISO 19139, incremental by modification date.

Requests are KVP GETs through the crawl's fetcher (``SyncFetcher``): the address guard, size caps, retries
and the broken gzip of pycsw 2.6 are handled there, and a catalogue the crawl discovered is a stranger's
server like any other. Every answer is parsed with ``geoweb.xmlsafe``.

``harvest_catalogue`` loads one catalogue into the store: each page is committed as it arrives, records gone
from a complete full harvest are withdrawn, and a failed or partial harvest withdraws nothing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from lxml import etree
from owslib import ows
from owslib.catalogue.csw2 import CswRecord
from owslib.iso import MD_Metadata

from geoweb.connectors.base import ConfigError, Connector, ConnectorError, QuotaExceeded
from geoweb.connectors.candidates import candidates
from geoweb.detect.ogc.common import OGCExceptionReport, clean, lat_first, listed_bbox, with_query
from geoweb.detect.ogc.csw import search_results
from geoweb.errors import FetchError, GeowebError
from geoweb.fetch.fetcher import Fetcher
from geoweb.fetch.response import Response
from geoweb.harvest import run
from geoweb.harvest.params import CRAWL_RUN_PREFIX, HarvestParams, param_specs
from geoweb.links.filters import URLFilters
from geoweb.models import BBox, OnlineResource, Record, union_bbox
from geoweb.settings import Settings
from geoweb.xmlsafe import parse_xml

if TYPE_CHECKING:
    from geoweb.store import Store

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
DC_RECORDS = frozenset({"Record", "SummaryRecord", "BriefRecord"})
ISO_RECORDS = frozenset({"MD_Metadata", "MI_Metadata"})

# Small page sizes and short timeouts are the classic harvest failures: catalogues answer slowly.
DEFAULT_PAGE_SIZE = 100
DEFAULT_TIMEOUT = 120.0  # seconds for one page
DEFAULT_MAX_PAGES = 10_000
DEFAULT_FULL_EVERY = timedelta(days=7)  # incremental harvests cannot see deletions; a full one can
# the most seeds one crawl run takes (its seeds param's limit)
MAX_SEEDS = next(schema["maxItems"] for name, _, _, schema in param_specs() if name == "seeds")


# --- fetching ----------------------------------------------------------------------------------------------


class SyncFetcher:
    """The crawl's ``Fetcher`` for synchronous paging: one event loop and one connection pool for a whole
    harvest. ``get`` returns a complete 2xx answer or raises ConnectorError naming the source and the page."""

    def __init__(self, settings: Settings, source: str):
        self.settings = settings
        self.source = source
        self._runner = asyncio.Runner()
        self._fetcher = Fetcher(settings)

    def __enter__(self) -> SyncFetcher:
        self._runner.run(self._fetcher.__aenter__())
        return self

    def __exit__(self, *exc_info) -> None:
        try:
            self._runner.run(self._fetcher.__aexit__(None, None, None))
        finally:
            self._runner.close()

    def get(self, url: str, what: str) -> Response:
        try:
            response = self._runner.run(self._fetcher.get(url, max_bytes=self.settings.max_xml_bytes))
        except FetchError as exc:
            raise ConnectorError(f"{self.source}: {what}: {exc.user_msg} ({exc.reason}: {exc})") from None
        if response.status in (403, 429):
            raise QuotaExceeded(f"{self.source}: {what}: refused with HTTP {response.status}")
        if response.status >= 400:
            raise ConnectorError(f"{self.source}: {what}: HTTP {response.status}")
        if not response.complete:
            raise ConnectorError(
                f"{self.source}: {what}: the answer was cut short (over {self.settings.max_xml_bytes} bytes, "
                "or the connection broke)"
            )
        return response


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


def _unique(values) -> list[str]:
    return list(dict.fromkeys(filter(None, map(clean, values))))


def _wgs84_box(box: ows.BoundingBox | None) -> BBox | None:
    """An OWSLib bounding box (axes already in x/y order) as a WGS84 box; None in a CRS that is not WGS84."""
    if box is None:
        return None
    if not isinstance(box, ows.WGS84BoundingBox) and lat_first(getattr(box.crs, "id", None)) is None:
        return None
    return listed_bbox((box.minx, box.miny, box.maxx, box.maxy))


def dc_record(elem: etree._Element, source: str) -> Record | None:
    """A ``csw:Record`` (or Summary/BriefRecord) as a Record; None without an identifier."""
    record = CswRecord(elem)
    identifier = clean(record.identifier)
    if identifier is None:
        return None
    links = [OnlineResource(url, protocol=clean(ref.get("scheme")) or clean(ref.get("protocol")),
                            name=clean(ref.get("name")) or clean(ref.get("description")))
             for ref in [*record.references, *record.uris] if (url := clean(ref.get("url")))]  # fmt: skip
    return Record(
        source=source,
        identifier=identifier,
        title=clean(record.title),
        abstract=clean(record.abstract),
        keywords=_unique(record.subjects),
        bbox=union_bbox((_wgs84_box(record.bbox), _wgs84_box(record.bbox_wgs84))),
        modified=parse_time(clean(record.modified) or clean(record.date)),
        links=links,
        extra={"schema": "dc", "type": clean(record.type),
               "formats": _unique([record.format])},
    )  # fmt: skip


def iso_record(elem: etree._Element, source: str) -> Record | None:
    """A ``gmd:MD_Metadata`` (ISO 19139) as a Record; None without a file identifier. Links are the online
    resources of the distribution and of a service's operations (contacts' web sites are not the data's)."""
    metadata = MD_Metadata(elem)
    identifier = clean(metadata.identifier)
    if identifier is None:
        return None
    ident = next(iter(metadata.identification or ()), None)
    distribution = metadata.distribution
    online = [*getattr(distribution, "online", ()),
              *(o for d in getattr(distribution, "distributor", ()) for o in d.online),
              *(c for op in getattr(ident, "operations", ()) for c in op.get("connectpoint", ()))]  # fmt: skip
    links: dict[tuple[str, str | None], OnlineResource] = {}
    for resource in online:
        url, protocol = clean(resource.url), clean(resource.protocol)
        if url and (url, protocol) not in links:  # each operation of a service repeats its endpoint
            links[url, protocol] = OnlineResource(url, protocol=protocol, name=clean(resource.name))
    box = getattr(ident, "bbox", None)
    return Record(
        source=source,
        identifier=identifier,
        title=clean(getattr(ident, "title", None)),
        abstract=clean(getattr(ident, "abstract", None)),
        keywords=_unique(k.name for group in getattr(ident, "keywords", ()) for k in group.keywords),
        bbox=None if box is None else listed_bbox((box.minx, box.miny, box.maxx, box.maxy)),
        modified=parse_time(clean(metadata.datestamp)),
        links=list(links.values()),
        extra={"schema": "iso19139", "type": clean(metadata.hierarchy),
               "service_type": clean(getattr(ident, "type", None))},  # SV_ServiceIdentification's serviceType
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
        self.page_size = _number(config, "page_size", int, DEFAULT_PAGE_SIZE)
        self.max_pages = _number(config, "max_pages", int, DEFAULT_MAX_PAGES)
        timeout = _number(config, "timeout", float, DEFAULT_TIMEOUT)
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


def _number(config: Mapping[str, Any], key: str, kind: type, default: Any) -> Any:
    """A positive number setting (numbers from the environment come as text)."""
    raw = config.get(key)
    if raw is None or raw == "":
        return default
    try:
        value = kind(raw)
    except (TypeError, ValueError):
        value = None
    if isinstance(raw, bool) or value is None or not value > 0:
        raise ConfigError(f"csw: setting {key} must be a positive number, not {raw!r}")
    return value


# --- the harvest -------------------------------------------------------------------------------------------


def harvest_catalogue(
    store: Store, connector: CSWConnector, *, full_every: timedelta = DEFAULT_FULL_EVERY, full: bool = False
) -> dict[str, Any]:
    """Load the catalogue's records into the store, page by page; returns the counts.

    Incremental from the source's watermark, unless ``full`` or the last complete full harvest is older than
    ``full_every``. Only a full harvest that ends normally with every matched record received withdraws the
    records it did not see. A failure is recorded with the source and raised: pages already committed stay,
    nothing is withdrawn and the watermark does not move."""
    with store.catalogue.harvesting(connector.source, "csw", connector.url) as harvest:
        state = harvest.state
        if not full and state.watermark is not None and state.last_full_harvest is not None:
            full = datetime.now(UTC) - state.last_full_harvest >= full_every
        since = None if full or state.watermark is None else state.watermark
        counts = harvest.counts
        counts |= dict.fromkeys(("pages", "received", "new", "updated", "unchanged", "refused", "skipped",
                                 "duplicates", "withdrawn"), 0)  # fmt: skip
        seen: set[str] = set()
        for page in connector.pages(since):  # at least one page, or an error
            for key, value in store.catalogue.upsert_records(connector.source, page.records).items():
                counts[key] += value
            counts["pages"] += 1
            counts["received"] += page.returned
            counts["skipped"] += page.skipped
            counts["duplicates"] += page.duplicates
            seen.update(r.identifier for r in page.records)
            harvest.advance(r.modified for r in page.records)
        complete = page.last and len(seen) + counts["skipped"] >= page.matched
        counts |= {
            "matched": page.matched,
            "mode": "incremental" if page.incremental else "full",
            "complete": complete,
        }
        if counts["mode"] == "full" and complete:
            counts["withdrawn"] = store.catalogue.mark_withdrawn(connector.source, seen)
            harvest.full = True
        elif counts["mode"] == "full":
            log.warning(
                "%s: full harvest incomplete (%d of %d records): nothing withdrawn",
                connector.source, len(seen), counts["matched"],
            )  # fmt: skip
    log.info("%s harvested: %s", connector.source, counts)
    return counts


# --- the deep-web path -------------------------------------------------------------------------------------


def catalogue_seeds(store: Store, kind: str = "csw", *, everything: bool = False) -> dict[str, str]:
    """The crawl's seeds from the catalogues of a kind: every link of an active record that looks like a
    service or a file (``candidates``), spelled as the crawl spells URLs, with its catalogue's URL; each URL
    once (the first catalogue by URL keeps it), in order. Unless ``everything``, a link an earlier catalogue
    crawl fetched after its record last changed is left out: what it proved is re-checked by the revisits."""
    filters = URLFilters.from_settings(Settings.from_env())
    validated = {} if everything else store.runs.validated_seeds(CRAWL_RUN_PREFIX)
    seeds: dict[str, str] = {}
    unchanged = 0
    for catalogue, links, changed_at in store.catalogue.active_record_links(kind):
        offered = [
            OnlineResource(link["url"], protocol=link.get("protocol"), name=link.get("name"))
            for link in links
            if isinstance(link, dict) and isinstance(link.get("url"), str)
        ]
        for url in candidates(offered):
            seed = filters(url)
            if seed is None:
                continue
            if seed in validated and validated[seed] >= changed_at:
                unchanged += 1
                continue
            seeds.setdefault(seed, catalogue)
    if unchanged:
        log.info(
            "%d catalogue links validated since their record last changed are not crawled again", unchanged
        )
    return seeds


def start_catalogue_crawl(
    store: Store, run_id: str, conf: Mapping[str, Any], kind: str = "csw", *, everything: bool = False
) -> int:
    """Begin (or resume) the crawl of the catalogues' candidate links: ``conf`` is the crawl's (a
    ``HarvestParams`` conf without seeds), the seeds are ``catalogue_seeds`` at level 0 with their catalogue as
    source page, and max_level is 0: the detectors validate each link, nothing beyond it is followed. The run
    id must start with ``CRAWL_RUN_PREFIX``. Returns the number of seeds (0: no run is begun)."""
    seeds = catalogue_seeds(store, kind, everything=everything)
    if not seeds:
        log.info("run %s: the catalogues offer no service or file to crawl", run_id)
        return 0
    if len(seeds) > MAX_SEEDS:
        log.warning("run %s: %d catalogue links; the first %d are crawled", run_id, len(seeds), MAX_SEEDS)
        seeds = dict(list(seeds.items())[:MAX_SEEDS])
    params = HarvestParams.from_conf({**conf, "seeds": list(seeds), "max_level": 0})
    run.start_run(store, run_id, params)
    store.runs.set_seed_sources(run_id, seeds)
    log.info("run %s: %d catalogue links to validate", run_id, len(seeds))
    return len(seeds)
