"""The GeoHub app: the search page (``/``), its static files, and the JSON API under ``/api``, every route
behind Airflow's authentication. OpenAPI at ``/openapi.json``.

Titles and abstracts come from strangers' servers: the API returns them as JSON data and the page inserts
them as text only; a strict Content-Security-Policy forbids inline and foreign scripts, styles and
connections, so even a slip could not run a script or send data elsewhere.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Annotated

from fastapi import Depends, FastAPI, HTTPException, Query, Request, status
from fastapi import Path as PathParam
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from geohub.access import geohub_user, login_url
from geohub.catalogue import router as catalogue_router
from geohub.downloads import downloads_router
from geohub.filters import Filters
from geohub.harvest_db import database
from geohub.reports import render, run_report
from geoweb.geohub import (
    ConceptCount,
    InvalidSearch,
    ResourceDetail,
    RunEntry,
    SearchPage,
    SearchQuery,
    SearchUnavailable,
    TypeCount,
    concept_counts,
    resource_detail,
    runs,
    search,
    type_counts,
)
from geoweb.geohub.query import DEFAULT_LIMIT, MAX_LIMIT, MAX_NAME, MAX_OFFSET
from geoweb.geohub.reports import crawl_run_plot
from geoweb.settings import Settings

log = logging.getLogger("geoweb.geohub")

STATIC = Path(__file__).parent / "static"
MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".png": "image/png",
    ".svg": "image/svg+xml",
    ".geojson": "application/geo+json",
    ".txt": "text/plain; charset=utf-8",
}
# Scripts, styles and requests from GeoHub itself only; no inline code, no plugins, no foreign framing (the
# Airflow UI on the same origin embeds the page). Images also from any http(s) origin: a WMS preview is the
# GetMap of the service's own server, loaded by the browser when the user asks for it. An image runs no
# code and reads nothing back into the page, and no-referrer keeps the page's address from the server;
# fetching the GetMap through GeoHub instead would let anyone who can log in make GeoHub fetch any URL.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: http: https:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'self'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "private, no-store",  # search results are behind a login; the files are small
}
MAX_ID = 2**63 - 1  # resource ids are bigint
# Concept counts walk every tagged dataset (1.6 s at 300,000 of them): they change only when a harvest loads,
# so each process recomputes them at most this often.
CONCEPT_COUNTS_SECONDS = 300.0

User = Annotated[object, Depends(geohub_user)]
RunId = Annotated[str, PathParam(max_length=MAX_NAME)]  # a DAG's or a DAG run's id


def _static_files() -> dict[str, Path]:
    """The files the page may load, by their path under static/: nothing else can be asked for."""
    return {
        p.relative_to(STATIC).as_posix(): p
        for p in STATIC.rglob("*")
        if p.is_file() and p.suffix in MEDIA_TYPES
    }


def create_app() -> FastAPI:
    app = FastAPI(
        title="GeoHub",
        version="1",
        description="Search the OGC services, KML files and shapefiles GeoWeb Harvester discovered. Every "
        "route needs an Airflow login: the UI's session cookie, or `Authorization: Bearer` with a token "
        "from Airflow's `POST /auth/token`.",
        docs_url=None,  # Swagger UI would load its scripts from a CDN
        redoc_url=None,
        openapi_url=None,  # served below, behind the login
    )
    files = _static_files()
    counted: dict[str, tuple[float, list[ConceptCount]]] = {}
    counting = threading.Lock()

    @app.middleware("http")
    async def security_headers(request: Request, call_next) -> Response:
        response = await call_next(request)
        response.headers.update(SECURITY_HEADERS)
        return response

    @app.exception_handler(StarletteHTTPException)
    async def login_first(request: Request, exc: StarletteHTTPException) -> Response:
        """A browser opening the page without a login goes to Airflow's login page and comes back."""
        if exc.status_code == status.HTTP_401_UNAUTHORIZED and request.scope.get("endpoint") in (
            page,
            report_page,
        ):
            return RedirectResponse(login_url(request.url.path), status.HTTP_303_SEE_OTHER)
        return await http_exception_handler(request, exc)

    @app.exception_handler(InvalidSearch)
    async def invalid_search(request: Request, exc: InvalidSearch) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status.HTTP_422_UNPROCESSABLE_CONTENT)

    @app.exception_handler(SearchUnavailable)
    async def unavailable(request: Request, exc: SearchUnavailable) -> JSONResponse:
        log.error("GeoHub %s: %s", request.url.path, exc)
        return JSONResponse({"detail": exc.user_msg}, status.HTTP_503_SERVICE_UNAVAILABLE)

    @app.get("/", include_in_schema=False)
    def page(user: User) -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type=MEDIA_TYPES[".html"])

    @app.get("/static/{name:path}", include_in_schema=False)
    def static(name: str, user: User) -> FileResponse:
        path = files.get(name)
        if path is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, "no such file")
        return FileResponse(path, media_type=MEDIA_TYPES[path.suffix])

    @app.get("/runs/{dag_id}/{run_id}", include_in_schema=False)
    def report_page(dag_id: RunId, run_id: RunId, request: Request, user: User) -> HTMLResponse:
        """The GeoWeb report tab of a DAG run's page in the Airflow UI."""
        with database.connection() as conn:
            report = run_report(conn, dag_id, run_id)
        return HTMLResponse(render(report, request.scope.get("root_path", "")))

    @app.get("/runs/plot.png", include_in_schema=False)
    def report_plot(run: Annotated[str, Query(max_length=MAX_NAME)], user: User) -> Response:
        with database.connection() as conn:
            png = crawl_run_plot(conn, run)
        if png is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"no plot for run {run}")
        return Response(png, media_type="image/png")

    @app.get("/api/runs/{dag_id}/{run_id}", summary="The report of a DAG run")
    def run_report_json(dag_id: RunId, run_id: RunId, user: User) -> dict:
        """A crawl run's per-level figures, resources per type and recall curve (the validation crawl for a
        catalogue run), the per-source counts of a catalogue or archive run, the checks of a revisit run."""
        with database.connection() as conn:
            return run_report(conn, dag_id, run_id).as_json()

    @app.get("/openapi.json", include_in_schema=False)
    def openapi(user: User) -> dict:
        return app.openapi()

    @app.get("/api/search", response_model=SearchPage, summary="Search the discovered resources")
    def search_resources(
        user: User,
        filters: Filters,
        limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT,
        offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
    ) -> SearchPage:
        """A page of resources matching every filter given, with the numbers of the whole answer: `total`
        matches, `outside_box` (would match but for the box), `no_footprint` (match every filter but the
        box and have no footprint) and `facets` counting the matches by type, provider, concept, level, status
        and conformance (with a `level` chosen, the level facet counts every level, so that the others stay on
        offer); above 5,000 matches the facets are counted on a sample of about 5,000 and scaled to the total
        (`facets_estimated` is true; the total stays exact). `next_offset` is null on the last page."""
        query = SearchQuery.checked(**filters, limit=limit, offset=offset)
        with database.connection() as conn:
            return search(conn, query)

    @app.get(
        "/api/resources/{resource_id}",
        response_model=ResourceDetail,
        summary="A resource with its datasets",
        responses={404: {"description": "No such resource"}},
    )
    def resource(resource_id: Annotated[int, PathParam(ge=1, le=MAX_ID)], user: User) -> ResourceDetail:
        """The resource, its datasets in document order with their footprints (GeoJSON), the runs that
        found it, and for an OGC service its conformance level, defects and OWSLib's reason where it failed."""
        with database.connection() as conn:
            detail = resource_detail(conn, resource_id)
        if detail is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"no resource {resource_id}")
        return detail

    @app.get("/api/runs", response_model=list[RunEntry], summary="The harvest runs, newest first")
    def list_runs(user: User) -> list[RunEntry]:
        with database.connection() as conn:
            return runs(conn)

    @app.get("/api/types", response_model=list[TypeCount], summary="Resource types with their counts")
    def list_types(user: User) -> list[TypeCount]:
        with database.connection() as conn:
            return type_counts(conn)

    @app.get(
        "/api/concepts",
        response_model=list[ConceptCount],
        summary="The concepts datasets are about, with resource counts",
    )
    def list_concepts(user: User) -> list[ConceptCount]:
        """Concepts of the ontology that some dataset is about (itself or a concept below it), by label;
        recounted at most every five minutes."""
        with counting:
            cached = counted.get("concepts")
            if cached is None or time.monotonic() - cached[0] > CONCEPT_COUNTS_SECONDS:
                with database.connection() as conn:
                    cached = counted["concepts"] = (time.monotonic(), concept_counts(conn))
        return cached[1]

    app.include_router(downloads_router(Settings.from_env().export_max_resources))
    app.include_router(catalogue_router)
    return app
