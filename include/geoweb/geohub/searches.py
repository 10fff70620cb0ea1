"""Searches and look-ups of what the harvest found, as result records (dataclasses the API returns as
JSON). Each function takes a psycopg2 connection (``SearchDatabase.connection()``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from geoweb.detect.ogc.common import capabilities_url
from geoweb.geohub.query import SearchQuery
from geoweb.geohub.sql import EXACT_FACETS, GEOJSON_DIGITS, search_statement
from geoweb.models import OGC_TYPES
from geoweb.semantic import default_ontology

MAX_DATASETS = 1000  # datasets listed in a resource's detail; datasets_total says how many it has
MAX_SIGHTINGS = 100  # runs listed in a resource's detail, newest first
MAX_RUNS = 200  # runs offered as a filter, newest first
MAX_CHECKS = 2000  # checks of a resource's last 30 days listed for its chart, the newest (hourly: 720)

Geometry = dict[str, Any]  # GeoJSON, WGS84


@dataclass(slots=True)
class Quality:
    """How a resource answered its revisits' checks of the last 30 days, as of its last check (migration
    0023): the share that succeeded, the median time of its own request, and for a WMS the INSPIRE
    view-service verdicts (met, not met, not enough checks): availability, GetMap performance, and both."""

    checks_30d: int  # 0: no check in 30 days
    availability_30d_percent: float | None  # None without checks
    response_median_seconds: float | None  # total time of GetCapabilities (a service) or GetResource
    inspire_availability: str | None  # WMS only
    inspire_getmap: str | None
    inspire: str | None  # met when both are, not met when either is not


@dataclass(slots=True)
class Hit:
    """A resource in a page of results."""

    id: int
    url: str
    type: str
    version: str | None
    title: str | None
    abstract: str | None  # its beginning; the detail has all of it
    provider: str | None
    keywords: list[str]
    datasets: int
    level: int | None  # of its first sighting
    source_page: str | None
    keyword: str | None  # the search keyword that led to it
    capabilities_url: str | None  # the capabilities document of a service, the file itself for a file
    footprint: Geometry | None  # its box, else the extent of its datasets
    rank: float | None  # text relevance; None without text
    status: str  # ok; failed or dead after failed revisits (geoweb.harvest.revisit)
    concepts: list[str]  # the most frequent concept ids of its datasets; /api/concepts has their labels
    conformance: str | None  # of an OGC service's capabilities (Conformance); None where nothing judges it
    defects: list[str]  # what its capabilities lack or get wrong, when read with defects
    quality: Quality


@dataclass(slots=True)
class FacetCount:
    value: str
    resources: int


@dataclass(slots=True)
class LevelCount:
    level: int
    resources: int


@dataclass(slots=True)
class ConceptCount:
    """A concept with the number of resources having a dataset about it or about a concept below it."""

    id: str
    label: str
    broader: list[str]
    resources: int


@dataclass(slots=True)
class Facets:
    """The matches of a search counted by type, provider (the most frequent), concept (a resource counts for
    each concept its datasets are about and every concept above those), level (at which the runs found it:
    one resource may count at several), status, conformance (of the OGC services judged, conformant
    first) and inspire (the WMS by their verdict on both INSPIRE criteria, met first)."""

    type: list[FacetCount]
    provider: list[FacetCount]
    concept: list[ConceptCount]
    level: list[LevelCount]
    status: list[FacetCount]
    conformance: list[FacetCount]
    inspire: list[FacetCount]


@dataclass(slots=True)
class SearchPage:
    results: list[Hit]
    offset: int
    limit: int
    next_offset: int | None  # None on the last page
    total: int  # every match (in the box, when there is one)
    outside_box: int  # would match but for the box; 0 without one
    no_footprint: int  # match every filter but the box and have no footprint, so no box finds them
    facets: Facets
    facets_estimated: bool  # counted on a sample of the matches, there being many; the total is exact


@dataclass(slots=True)
class DatasetEntry:
    position: int
    name: str | None
    title: str | None
    keywords: list[str]
    footprint: Geometry | None
    extra: dict[str, Any]
    concepts: list[str]  # ids of the ontology's concepts; /api/concepts has their labels


@dataclass(slots=True)
class Sighting:
    """A run that found the resource: at which level and from which page."""

    run_id: str
    level: int
    source_page: str | None
    discovered_at: datetime


@dataclass(slots=True)
class QualityDetail:
    """A resource's ``resource_quality`` row (migration 0020), read when asked for: availability over 7 and 30
    days, per operation the checks and times of 30 days, the last success, and for a WMS the INSPIRE
    view-service verdicts, each with the rule it applies."""

    checks_7d: int
    availability_7d_percent: float | None
    checks_30d: int
    availability_30d_percent: float | None
    last_success_at: datetime | None
    operations_30d: dict[str, dict[str, Any]]  # operation -> checks, successes, first_byte_*, total_* (s)
    inspire_availability: str | None
    inspire_availability_rule: str | None
    inspire_getmap: str | None
    inspire_getmap_rule: str | None


@dataclass(slots=True)
class Check:
    """One check of a resource: when, which request, its total time (None without an answer), its outcome."""

    checked_at: datetime
    operation: str
    total_seconds: float | None
    outcome: str


@dataclass(slots=True)
class ResourceDetail:
    id: int
    url: str
    type: str
    version: str | None
    title: str | None
    abstract: str | None
    keywords: list[str]
    provider: str | None
    bbox: Geometry | None
    extra: dict[str, Any]
    level: int | None
    source_page: str | None
    keyword: str | None
    first_seen: datetime
    last_seen: datetime
    last_status: str
    capabilities_url: str | None
    datasets_total: int
    datasets: list[DatasetEntry]  # the first MAX_DATASETS, in document order
    runs: list[Sighting]
    conformance: str | None  # of an OGC service's capabilities (Conformance); None where nothing judges it
    defects: list[str]  # what its capabilities lack or get wrong
    owslib_error: str | None  # why OWSLib could not read them, where it failed
    quality: QualityDetail


@dataclass(slots=True)
class RunEntry:
    run_id: str
    status: str
    started_at: datetime
    finished_at: datetime | None
    resources: int


@dataclass(slots=True)
class TypeCount:
    type: str
    resources: int


def document_url(url: str, type_: str) -> str | None:
    """Where a resource's own description is: GetCapabilities of a service, the file of a file. Only http(s)
    addresses are offered as links; anything else stays text."""
    if not url.lower().startswith(("http://", "https://")):
        return None
    return capabilities_url(url, type_) if type_ in OGC_TYPES else url


def search(conn, query: SearchQuery, exact_facets: int = EXACT_FACETS) -> SearchPage:
    """A page of results with the numbers of the whole answer: its total and facets, counted on a sample of
    the matches when there are more than ``exact_facets`` (the total stays exact)."""
    with conn.cursor() as cur:
        cur.execute(*search_statement(query, exact_facets))
        total, (unboxed, no_footprint), *facets, rows = cur.fetchone()
    rows = rows or []
    outside_box = 0 if unboxed is None else unboxed - no_footprint - total
    hits = [
        Hit(*row[:12], document_url(row[1], row[2]), *row[12:-1], Quality(**row[-1]))
        for row in rows[: query.limit]
    ]
    more = len(rows) > query.limit
    next_offset = query.offset + query.limit if more else None
    facets_estimated = total > exact_facets
    numbers = (total, outside_box, no_footprint, _facets(*facets), facets_estimated)
    return SearchPage(hits, query.offset, query.limit, next_offset, *numbers)


def _facets(types, providers, concepts, levels, statuses, conformance, inspire) -> Facets:
    """The facets of the search statement's arrays of [value, count]."""
    return Facets(
        type=_counts(types),
        provider=_counts(providers),
        concept=_concepts((cid, int(n)) for cid, n in concepts),
        level=[LevelCount(level, n) for level, n in levels],
        status=_counts(statuses),
        conformance=_counts(conformance),
        inspire=_counts(inspire),
    )


def _counts(values: list[list[str]]) -> list[FacetCount]:
    """A facet of the statement's [value, count] pairs, the count as text."""
    return [FacetCount(value, int(n)) for value, n in values]


def _concepts(counts: Iterable[tuple[str, int]]) -> list[ConceptCount]:
    """The counted concepts the ontology knows (a dataset may keep the id of a concept since removed)."""
    ontology = default_ontology()
    return [
        ConceptCount(cid, ontology.concepts[cid].label, list(ontology.concepts[cid].broader), n)
        for cid, n in counts
        if cid in ontology
    ]


_DETAIL = f"""
SELECT id, url, type, version, title, abstract, keywords, provider, ST_AsGeoJSON(bbox, {GEOJSON_DIGITS})::json,
       extra, level, source_page, keyword, first_seen, last_seen, last_status,
       (SELECT count(*) FROM datasets WHERE resource_id = r.id), conformance, defects, owslib_error
FROM resources r WHERE id = %s
"""
_DATASETS = f"""
SELECT position, name, title, keywords, ST_AsGeoJSON(footprint, {GEOJSON_DIGITS})::json, extra, concepts
FROM datasets WHERE resource_id = %s ORDER BY position LIMIT {MAX_DATASETS}
"""
_QUALITY = """
SELECT coalesce(checks_7d, 0), availability_7d_percent, coalesce(checks_30d, 0), availability_30d_percent,
       last_success_at, coalesce(operations_30d, '{}'), inspire_availability, inspire_availability_rule,
       inspire_getmap, inspire_getmap_rule
FROM resource_quality WHERE resource_id = %s
"""
# The newest checks of 30 days, in time order.
_CHECKS = f"""
SELECT checked_at, operation, total_seconds, outcome FROM (
    SELECT checked_at, operation, total_seconds, outcome, id FROM resource_checks
    WHERE resource_id = %s AND checked_at > now() - interval '30 days'
    ORDER BY checked_at DESC, id DESC LIMIT {MAX_CHECKS}
) newest ORDER BY checked_at, id
"""
_SIGHTINGS = f"""
SELECT run_id, level, source_page, discovered_at FROM run_resources
WHERE resource_id = %s ORDER BY discovered_at DESC, run_id LIMIT {MAX_SIGHTINGS}
"""


def resource_detail(conn, resource_id: int) -> ResourceDetail | None:
    """A resource with its datasets (and their footprints) and the runs that found it; None if unknown."""
    with conn.cursor() as cur:
        cur.execute(_DETAIL, (resource_id,))
        row = cur.fetchone()
        if row is None:
            return None
        cur.execute(_DATASETS, (resource_id,))
        datasets = [DatasetEntry(*r) for r in cur.fetchall()]
        cur.execute(_SIGHTINGS, (resource_id,))
        runs = [Sighting(*r) for r in cur.fetchall()]
        cur.execute(_QUALITY, (resource_id,))
        quality = QualityDetail(*cur.fetchone())
    return ResourceDetail(
        *row[:16], document_url(row[1], row[2]), row[16], datasets, runs, *row[17:], quality
    )


def resource_checks(conn, resource_id: int) -> list[Check] | None:
    """The resource's newest checks of the last 30 days (at most MAX_CHECKS), oldest first; None if unknown."""
    with conn.cursor() as cur:
        cur.execute("SELECT 1 FROM resources WHERE id = %s", (resource_id,))
        if cur.fetchone() is None:
            return None
        cur.execute(_CHECKS, (resource_id,))
        return [Check(*r) for r in cur.fetchall()]


def runs(conn) -> list[RunEntry]:
    """The newest runs with the number of resources each found."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT c.run_id, c.status, c.started_at, c.finished_at, "
            "(SELECT count(*) FROM run_resources rr WHERE rr.run_id = c.run_id) "
            f"FROM crawl_runs c ORDER BY c.started_at DESC, c.run_id LIMIT {MAX_RUNS}"
        )
        return [RunEntry(*r) for r in cur.fetchall()]


def type_counts(conn) -> list[TypeCount]:
    with conn.cursor() as cur:
        cur.execute("SELECT type, count(*) FROM resources GROUP BY type ORDER BY type")
        return [TypeCount(*r) for r in cur.fetchall()]


def concept_counts(conn) -> list[ConceptCount]:
    """The concepts some dataset is about (itself or below it), by label, with their resource counts: a
    resource's `about` holds its datasets' concepts with every concept above them (migration 0012)."""
    with conn.cursor() as cur:
        cur.execute("SELECT c, count(*) FROM resources, unnest(about) c GROUP BY c")
        counts = cur.fetchall()
    return sorted(_concepts(counts), key=lambda c: c.label)
