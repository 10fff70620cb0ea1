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

Geometry = dict[str, Any]  # GeoJSON, WGS84


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
    one resource may count at several), status and conformance (of the OGC services judged, conformant
    first)."""

    type: list[FacetCount]
    provider: list[FacetCount]
    concept: list[ConceptCount]
    level: list[LevelCount]
    status: list[FacetCount]
    conformance: list[FacetCount]


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
    hits = [Hit(*row[:12], document_url(row[1], row[2]), *row[12:]) for row in rows[: query.limit]]
    more = len(rows) > query.limit
    next_offset = query.offset + query.limit if more else None
    facets_estimated = total > exact_facets
    numbers = (total, outside_box, no_footprint, _facets(*facets), facets_estimated)
    return SearchPage(hits, query.offset, query.limit, next_offset, *numbers)


def _facets(types, providers, concepts, levels, statuses, conformance) -> Facets:
    """The facets of the search statement's arrays of [value, count]."""
    return Facets(
        type=_counts(types),
        provider=_counts(providers),
        concept=_concepts((cid, int(n)) for cid, n in concepts),
        level=[LevelCount(level, n) for level, n in levels],
        status=_counts(statuses),
        conformance=_counts(conformance),
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
    return ResourceDetail(*row[:16], document_url(row[1], row[2]), row[16], datasets, runs, *row[17:])


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
