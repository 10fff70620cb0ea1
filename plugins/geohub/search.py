"""The JSON API of what the harvest found: the search, a resource's detail and its checks, and what a search
filters by (the runs, the resource types, the concepts)."""

from __future__ import annotations

import threading
import time
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, status

from geohub.access import User
from geohub.filters import Filters, ResourceId
from geohub.harvest_db import HarvestDatabase
from geoweb.geohub import SearchDatabase, SearchQuery, searches
from geoweb.geohub.query import DEFAULT_LIMIT, MAX_LIMIT, MAX_OFFSET

# Concept counts walk every tagged dataset (1.6 s at 300,000 of them): they change only when a harvest loads,
# so each process recomputes them at most this often.
CONCEPT_COUNTS_SECONDS = 300.0

router = APIRouter()


class ConceptCounts:
    """The concept counts of the process, recounted when older than ``CONCEPT_COUNTS_SECONDS``."""

    def __init__(self) -> None:
        self._counted: tuple[float, list[searches.ConceptCount]] | None = None
        self._lock = threading.Lock()  # one recount at a time; the other requests wait for its answer

    def get(self, db: SearchDatabase) -> list[searches.ConceptCount]:
        with self._lock:
            if self._counted is None or time.monotonic() - self._counted[0] > CONCEPT_COUNTS_SECONDS:
                with db.connection() as conn:
                    self._counted = (time.monotonic(), searches.concept_counts(conn))
            return self._counted[1]


concepts = ConceptCounts()


@router.get("/api/search", response_model=searches.SearchPage, summary="Search the discovered resources")
def search_resources(
    user: User,
    db: HarvestDatabase,
    filters: Filters,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
) -> searches.SearchPage:
    """A page of resources matching every filter given, with the numbers of the whole answer: `total`
    matches, `outside_box` (would match but for the box), `no_footprint` (match every filter but the
    box and have no footprint) and `facets` counting the matches by type, provider, concept, level, status,
    conformance and INSPIRE verdict (with a `level` chosen, the level facet counts every level, so that the others stay on
    offer); above 5,000 matches the facets are counted on a sample of about 5,000 and scaled to the total
    (`facets_estimated` is true; the total stays exact). `next_offset` is null on the last page."""
    query = SearchQuery.checked(**filters, limit=limit, offset=offset)
    with db.connection() as conn:
        return searches.search(conn, query)


@router.get(
    "/api/resources/{resource_id}",
    response_model=searches.ResourceDetail,
    summary="A resource with its datasets",
    responses={404: {"description": "No such resource"}},
)
def resource(resource_id: ResourceId, user: User, db: HarvestDatabase) -> searches.ResourceDetail:
    """The resource, its datasets in document order with their footprints (GeoJSON), the runs that
    found it, for an OGC service its conformance level, defects and OWSLib's reason where it failed, and its
    quality figures (`quality`: availability, times per operation, INSPIRE verdicts with their rules)."""
    with db.connection() as conn:
        detail = searches.resource_detail(conn, resource_id)
    if detail is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no resource {resource_id}")
    return detail


@router.get(
    "/api/resources/{resource_id}/checks",
    response_model=list[searches.Check],
    summary="A resource's checks of the last 30 days",
    responses={404: {"description": "No such resource"}},
)
def resource_checks(resource_id: ResourceId, user: User, db: HarvestDatabase) -> list[searches.Check]:
    """The revisits' checks of the resource in the last 30 days, oldest first (the newest 2,000 at most): when,
    the request measured, its total time in seconds (null without an answer) and the outcome."""
    with db.connection() as conn:
        checks = searches.resource_checks(conn, resource_id)
    if checks is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no resource {resource_id}")
    return checks


@router.get("/api/runs", response_model=list[searches.RunEntry], summary="The harvest runs, newest first")
def list_runs(user: User, db: HarvestDatabase) -> list[searches.RunEntry]:
    with db.connection() as conn:
        return searches.runs(conn)


@router.get("/api/types", response_model=list[searches.TypeCount], summary="Resource types with their counts")
def list_types(user: User, db: HarvestDatabase) -> list[searches.TypeCount]:
    with db.connection() as conn:
        return searches.type_counts(conn)


@router.get(
    "/api/concepts",
    response_model=list[searches.ConceptCount],
    summary="The concepts datasets are about, with resource counts",
)
def list_concepts(user: User, db: HarvestDatabase) -> list[searches.ConceptCount]:
    """Concepts of the ontology that some dataset is about (itself or a concept below it), by label;
    recounted at most every five minutes."""
    return concepts.get(db)
