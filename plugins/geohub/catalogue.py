"""The catalogue at ``/csw`` (CSW 2.0.2) and ``/records`` (OGC API - Records): GET and POST forwarded to the
catalogue's own process (catalogue/, pycsw and pygeoapi, whose dependencies cannot share Airflow's), as
docs/catalogue.md describes. Open to anyone with ``GEOWEB_CATALOGUE_PUBLIC=yes``; otherwise behind the
Airflow login, as the rest of GeoHub.

Bounded like every input path: the request body and the answer by size, the whole exchange by time. Only
the method, path, query and the headers that say what is sent and wanted go upstream, never the user's
cookies or token; only the status and the content type come back.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated, Any
from urllib.parse import quote

import httpx
from fastapi import APIRouter, Depends, HTTPException, Request, status
from fastapi.responses import Response
from fastapi.security import HTTPAuthorizationCredentials

from geohub.access import bearer, geohub_user
from geohub.settings import GeoHubSettings, settings  # noqa: F401  (its tests read and reset it here)
from geoweb.settings import Settings

log = logging.getLogger("geoweb.geohub.catalogue")

FORWARDED_REQUEST_HEADERS = ("accept", "accept-language", "content-type")
METHODS = ["GET", "POST"]


async def catalogue_reader(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    config: GeoHubSettings,
) -> Any:
    """Anyone when the catalogue is public, else the GeoHub user (401 without a login, 403 without GeoHub)."""
    if config.catalogue_public:
        return None
    return await geohub_user(request, credentials)


Reader = Annotated[object, Depends(catalogue_reader)]
router = APIRouter(include_in_schema=False)


async def _body(request: Request, limit: int) -> bytes:
    """The request's body, refused with 413 past ``limit`` bytes (announced or streamed)."""
    too_large = HTTPException(
        status.HTTP_413_CONTENT_TOO_LARGE, f"a catalogue request is at most {limit} bytes"
    )
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise too_large
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise too_large
    return bytes(body)


async def forward(request: Request, path: str, config: Settings) -> Response:
    """``path`` of the catalogue process, with the request's method, query and body."""
    if ".." in path.split("/"):
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such catalogue path")
    body = await _body(request, config.catalogue_max_request_bytes)
    headers = {name: request.headers[name] for name in FORWARDED_REQUEST_HEADERS if name in request.headers}
    url = config.catalogue_upstream.rstrip("/") + quote(path)
    if request.url.query:
        url += f"?{request.url.query}"
    limit = config.catalogue_max_response_bytes
    try:
        async with (
            asyncio.timeout(config.catalogue_timeout),  # the whole exchange; httpx's is per read
            httpx.AsyncClient(timeout=config.catalogue_timeout, trust_env=False) as client,
            client.stream(request.method, url, content=body, headers=headers) as answer,
        ):
            content = bytearray()
            async for chunk in answer.aiter_bytes():
                content += chunk
                if len(content) > limit:
                    log.error("catalogue %s: the answer exceeds %d bytes", path, limit)
                    raise HTTPException(status.HTTP_502_BAD_GATEWAY, "the catalogue's answer is too large")
    except (TimeoutError, httpx.TimeoutException):
        log.error("catalogue %s: no answer within %.0f s", path, config.catalogue_timeout)
        raise HTTPException(status.HTTP_504_GATEWAY_TIMEOUT, "the catalogue did not answer in time") from None
    except httpx.HTTPError as exc:
        log.error("catalogue %s: %s: %s", path, type(exc).__name__, exc)
        raise HTTPException(status.HTTP_502_BAD_GATEWAY, "the catalogue is not reachable") from None
    media_type = answer.headers.get("content-type")
    return Response(bytes(content), answer.status_code, media_type=media_type)


@router.api_route("/csw", methods=METHODS)
async def csw(request: Request, reader: Reader, config: GeoHubSettings) -> Response:
    return await forward(request, "/csw", config)


@router.api_route("/records", methods=METHODS)
async def records_landing(request: Request, reader: Reader, config: GeoHubSettings) -> Response:
    return await forward(request, "/records", config)


@router.api_route("/records/{path:path}", methods=METHODS)
async def records(path: str, request: Request, reader: Reader, config: GeoHubSettings) -> Response:
    return await forward(request, f"/records/{path}", config)
