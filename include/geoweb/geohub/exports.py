"""A search's matches taken out of GeoHub: written to a file as ``geoweb export`` writes a run's resources
(the same writers, ``geoweb.harvest.export``), and as connection files QGIS loads (``geoweb.geohub.qgis``)."""

from __future__ import annotations

from pathlib import Path

from geoweb.geohub.query import SearchQuery
from geoweb.geohub.sql import chosen_statement
from geoweb.harvest.export import export_chosen
from geoweb.store.resources import Chosen, Resources

# What each format is sent as; the file name's extension is the format's name
MEDIA_TYPES = {
    "jsonl": "application/jsonl",
    "csv": "text/csv; charset=utf-8",
    "geojson": "application/geo+json",
    "gpkg": "application/geopackage+sqlite3",
    "parquet": "application/vnd.apache.parquet",
}


def export_search(
    conn, query: SearchQuery, output: Path, fmt: str, layer: str | None, max_resources: int
) -> dict[str, int]:
    """Write the first ``max_resources`` matches of ``query`` (ranked; its page is ignored) with their datasets
    to ``output`` in format ``fmt`` (``geoweb.harvest.export.FORMATS``, ``layer`` as there); the rows written
    per layer. ``conn`` is a connection of ``SearchDatabase``: left out of autocommit, since the export reads
    one snapshot through server-side cursors (the pool puts it back in autocommit for the next search)."""
    conn.autocommit = False
    chosen = Chosen(*chosen_statement(query, max_resources))
    return export_chosen(Resources(conn), chosen, output, fmt, layer)
