"""The GeoHub app: the search page (``/``), its static files, and the JSON API under ``/api``, every route
behind Airflow's authentication. OpenAPI at ``/openapi.json``. Each concern is a router of its own module:
``pages`` (the page, its files, the OpenAPI), ``reports`` (a DAG run's report), ``search`` (the search API),
``downloads`` (exports and QGIS connections) and ``catalogue`` (CSW and OGC API - Records).

Titles and abstracts come from strangers' servers: the API returns them as JSON data and the page inserts
them as text only; a strict Content-Security-Policy forbids inline and foreign scripts, styles and
connections, so even a slip could not run a script or send data elsewhere.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request, status
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import JSONResponse, RedirectResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from geohub import catalogue, downloads, pages, reports, search
from geohub.access import login_url
from geoweb.geohub import InvalidSearch, SearchUnavailable

log = logging.getLogger("geoweb.geohub")

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
# The pages a browser opens: without a login it goes to Airflow's login page and comes back.
LOGIN_PAGES = (pages.page, reports.report_page)


def create_app() -> FastAPI:
    app = FastAPI(
        title="GeoHub",
        version="1",
        description="Search the OGC services, KML files and shapefiles GeoWeb Harvester discovered. Every "
        "route needs an Airflow login: the UI's session cookie, or `Authorization: Bearer` with a token "
        "from Airflow's `POST /auth/token`.",
        docs_url=None,  # Swagger UI would load its scripts from a CDN
        redoc_url=None,
        openapi_url=None,  # served by pages, behind the login
    )
    app.middleware("http")(security_headers)
    app.add_exception_handler(StarletteHTTPException, login_first)
    app.add_exception_handler(InvalidSearch, invalid_search)
    app.add_exception_handler(SearchUnavailable, unavailable)
    for module in (pages, reports, search, downloads, catalogue):
        app.include_router(module.router)
    return app


async def security_headers(request: Request, call_next) -> Response:
    response = await call_next(request)
    response.headers.update(SECURITY_HEADERS)
    return response


async def login_first(request: Request, exc: StarletteHTTPException) -> Response:
    if exc.status_code == status.HTTP_401_UNAUTHORIZED and request.scope.get("endpoint") in LOGIN_PAGES:
        return RedirectResponse(login_url(request.url.path), status.HTTP_303_SEE_OTHER)
    return await http_exception_handler(request, exc)


async def invalid_search(request: Request, exc: InvalidSearch) -> JSONResponse:
    return JSONResponse({"detail": str(exc)}, status.HTTP_422_UNPROCESSABLE_CONTENT)


async def unavailable(request: Request, exc: SearchUnavailable) -> JSONResponse:
    log.error("GeoHub %s: %s", request.url.path, exc)
    return JSONResponse({"detail": exc.user_msg}, status.HTTP_503_SERVICE_UNAVAILABLE)
