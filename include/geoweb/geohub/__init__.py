"""GeoHub's backend: full-text, type, box, run, level, concept, provider, conformance and quality searches of
the harvest database with their totals and facets, a resource's detail with its datasets and quality figures,
its checks, and the runs, types and concepts to filter by. Airflow-free: the GeoHub plugin
(``plugins/geohub``) serves these over HTTP, the benchmark and the tests call them directly."""

from geoweb.geohub.database import SearchDatabase, SearchUnavailable
from geoweb.geohub.query import InvalidSearch, SearchQuery
from geoweb.geohub.searches import (
    Check,
    ConceptCount,
    DatasetEntry,
    FacetCount,
    Facets,
    Hit,
    LevelCount,
    Quality,
    QualityDetail,
    ResourceDetail,
    RunEntry,
    SearchPage,
    Sighting,
    TypeCount,
    concept_counts,
    resource_checks,
    resource_detail,
    runs,
    search,
    type_counts,
)

__all__ = [
    "Check",
    "ConceptCount",
    "DatasetEntry",
    "FacetCount",
    "Facets",
    "Hit",
    "InvalidSearch",
    "LevelCount",
    "Quality",
    "QualityDetail",
    "ResourceDetail",
    "RunEntry",
    "SearchDatabase",
    "SearchPage",
    "SearchQuery",
    "SearchUnavailable",
    "Sighting",
    "TypeCount",
    "concept_counts",
    "resource_checks",
    "resource_detail",
    "runs",
    "search",
    "type_counts",
]
