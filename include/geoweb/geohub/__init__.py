"""GeoHub's backend: full-text, type, box, run, level, concept, provider and conformance searches of the
harvest database with their totals and facets, a resource's detail with its datasets, and the runs, types and
concepts to filter by. Airflow-free: the GeoHub plugin (``plugins/geohub``) serves these over HTTP, the
benchmark and the tests call them directly."""

from geoweb.geohub.database import SearchDatabase, SearchUnavailable
from geoweb.geohub.query import InvalidSearch, SearchQuery
from geoweb.geohub.searches import (
    ConceptCount,
    DatasetEntry,
    FacetCount,
    Facets,
    Hit,
    LevelCount,
    ResourceDetail,
    RunEntry,
    SearchPage,
    Sighting,
    TypeCount,
    concept_counts,
    resource_detail,
    runs,
    search,
    type_counts,
)

__all__ = [
    "ConceptCount",
    "DatasetEntry",
    "FacetCount",
    "Facets",
    "Hit",
    "InvalidSearch",
    "LevelCount",
    "ResourceDetail",
    "RunEntry",
    "SearchDatabase",
    "SearchPage",
    "SearchQuery",
    "SearchUnavailable",
    "Sighting",
    "TypeCount",
    "concept_counts",
    "resource_detail",
    "runs",
    "search",
    "type_counts",
]
