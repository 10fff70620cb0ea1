"""GeoHub's routes that take results out as files: a search's matches in the formats of ``geoweb export``,
and QGIS connection files of a service or of a search's services."""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, BinaryIO, Literal

from fastapi import APIRouter, HTTPException, Query, status
from fastapi.responses import Response, StreamingResponse

from geohub.access import User
from geohub.filters import Filters, ResourceId
from geohub.harvest_db import HarvestDatabase
from geohub.settings import GeoHubSettings
from geoweb.geohub import SearchDatabase, SearchQuery, resource_detail
from geoweb.geohub.exports import MEDIA_TYPES, export_search
from geoweb.geohub.qgis import KIND_OF, Service, connections_xml, search_services
from geoweb.harvest.export import FORMATS, LAYERS, layers_of

EXPORTS_AT_ONCE = 2  # per process: each holds one of the search pool's connections while it writes
CHUNK = 1024 * 1024  # bytes of a file sent at a time
XML = "application/xml"

router = APIRouter()
exporting = threading.BoundedSemaphore(EXPORTS_AT_ONCE)


@router.get(
    "/api/export",
    summary="The search's matches as a file",
    response_class=Response,
    responses={
        200: {"content": {t.split(";")[0]: {} for t in MEDIA_TYPES.values()}},
        429: {"description": "Other exports are being written"},
    },
)
def export(
    user: User,
    db: HarvestDatabase,
    config: GeoHubSettings,
    filters: Filters,
    format: Annotated[Literal[FORMATS], Query(description="The file's format, as `geoweb export` writes it.")],
    layer: Annotated[
        Literal[LAYERS] | None,
        Query(description="The table of a one-table format: `resources` (default) or `datasets`; a "
              "GeoPackage holds both unless one is asked for; none for `jsonl`."),
    ] = None,
) -> StreamingResponse:  # fmt: skip
    """The resources matching the filters (as `/api/search` takes them; no page: the first
    `export_max_resources` by rank, or newest first) with their datasets and footprints, as `geoweb
    export` writes a run: GeoPackage (layers `resources` and `datasets`), GeoJSON, CSV (the geometry as
    WKT), GeoParquet or JSON lines. `X-Export-Rows` says how many rows each layer has, and
    `X-Export-Limit` the most resources an export holds."""
    query = SearchQuery.checked(**filters)
    try:
        layers_of(format, layer)
    except ValueError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from None
    if not exporting.acquire(blocking=False):
        raise HTTPException(
            status.HTTP_429_TOO_MANY_REQUESTS, "other exports are being written: try again in a minute",
            headers={"Retry-After": "30"},
        )  # fmt: skip
    name = f"geohub-search-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.{format}"
    max_resources = config.export_max_resources
    try:
        handle, size, rows = _written(db, query, name, format, layer, max_resources)
    finally:
        exporting.release()
    headers = {
        "Content-Disposition": f'attachment; filename="{name}"',
        "Content-Length": str(size),
        "X-Export-Rows": ", ".join(f"{layer}={n}" for layer, n in rows.items()),
        "X-Export-Limit": str(max_resources),
    }
    return StreamingResponse(_chunks(handle), media_type=MEDIA_TYPES[format], headers=headers)


def _written(
    db: SearchDatabase, query: SearchQuery, name: str, format: str, layer: str | None, max_resources: int
) -> tuple[BinaryIO, int, dict[str, int]]:
    """The export written to a file of its own: the open file, its size and the rows of each layer."""
    folder = Path(tempfile.mkdtemp(prefix="geohub-export-"))
    try:
        with db.connection() as conn:
            rows = export_search(conn, query, folder / name, format, layer, max_resources)
        size = (folder / name).stat().st_size
        # The open file stays readable once its name is gone: nothing is left on disk, whether the
        # download ends or is dropped.
        return (folder / name).open("rb"), size, rows
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@router.get(
    "/api/resources/{resource_id}/qgis-connection.xml",
    summary="A QGIS connection file of a WMS, WMTS, WFS or WCS",
    response_class=Response,
    responses={200: {"content": {XML: {}}}, 404: {"description": "No such service"}},
)
def qgis_connection(resource_id: ResourceId, user: User, db: HarvestDatabase) -> Response:
    """The service as a QGIS connection (QGIS's own XML: Data Source Manager, WMS/WMTS, WFS or WCS,
    "Load Connections"), named by its title."""
    with db.connection() as conn:
        detail = resource_detail(conn, resource_id)
    if detail is None or detail.type not in KIND_OF:
        what = "resource" if detail is None else f"WMS, WMTS, WFS or WCS (it is a {detail.type})"
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no {what} {resource_id}")
    kind = KIND_OF[detail.type]
    body = connections_xml(kind, [Service(detail.url, detail.type, detail.version, detail.title)])
    return _attachment(body, f"geohub-{resource_id}-{kind.lower()}.xml")


@router.get(
    "/api/qgis-connections.xml",
    summary="A QGIS connection file of a search's services",
    response_class=Response,
    responses={200: {"content": {XML: {}}}},
)
def qgis_connections(
    user: User,
    db: HarvestDatabase,
    filters: Filters,
    service: Annotated[
        Literal["WMS", "WFS", "WCS"],
        Query(description="The kind of connections: a file holds one (WMS holds WMTS services too)."),
    ],
) -> Response:
    """The services of one kind matching the filters (as `/api/search` takes them; the first 1,000), as
    QGIS connections in one file."""
    query = SearchQuery.checked(**filters)
    with db.connection() as conn:
        services = search_services(conn, query, service)
    return _attachment(connections_xml(service, services), f"geohub-search-{service.lower()}.xml")


def _attachment(body: bytes, name: str) -> Response:
    return Response(body, media_type=XML, headers={"Content-Disposition": f'attachment; filename="{name}"'})


def _chunks(handle: BinaryIO) -> Iterator[bytes]:
    with handle:
        while chunk := handle.read(CHUNK):
            yield chunk
