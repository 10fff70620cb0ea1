"""The search page (``/``), the files it loads (``/static/...``) and the API's description (``/openapi.json``),
each behind the login."""

from __future__ import annotations

import functools
from pathlib import Path

from fastapi import APIRouter, HTTPException, Request, status
from fastapi.responses import FileResponse

from geohub.access import User

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

router = APIRouter(include_in_schema=False)


@functools.cache
def static_files() -> dict[str, Path]:
    """The files the page may load, by their path under static/: nothing else can be asked for."""
    return {
        p.relative_to(STATIC).as_posix(): p
        for p in STATIC.rglob("*")
        if p.is_file() and p.suffix in MEDIA_TYPES
    }


@router.get("/")
def page(user: User) -> FileResponse:
    return FileResponse(STATIC / "index.html", media_type=MEDIA_TYPES[".html"])


@router.get("/static/{name:path}")
def static(name: str, user: User) -> FileResponse:
    path = static_files().get(name)
    if path is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such file")
    return FileResponse(path, media_type=MEDIA_TYPES[path.suffix])


@router.get("/openapi.json")
def openapi(request: Request, user: User) -> dict:
    return request.app.openapi()
