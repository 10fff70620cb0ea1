"""GeoHub search: full-text, type, box, run, level and concept searches of the harvest database, a resource's detail
with its datasets, and the runs and types to filter by. Airflow-free: the GeoHub plugin (``plugins/geohub``)
serves these over HTTP, the benchmark and the tests call them directly."""

from geoweb.search.catalogue import (
    ConceptCount,
    DatasetEntry,
    Hit,
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
from geoweb.search.database import SearchDatabase, SearchUnavailable
from geoweb.search.query import InvalidSearch, SearchQuery

__all__ = [
    "ConceptCount",
    "DatasetEntry",
    "Hit",
    "InvalidSearch",
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
