"""The catalogue's WSGI application: pycsw at ``/csw``, pygeoapi's OGC API - Records under ``/records``;
anything else is a 404. Run by gunicorn in .venv-catalogue (``catalogue.wsgi:application``).

Settings (environment): GEOWEB_CATALOGUE_DB, the harvest database as an SQLAlchemy URL; GEOWEB_CATALOGUE_URL,
the public address both advertise (GeoHub's ``.../geohub``); GEOWEB_CATALOGUE_PORT, this process's port;
PYGEOAPI_OPENAPI, where the OpenAPI document pygeoapi serves is written at start.
"""

from __future__ import annotations

import os
from pathlib import Path

from pycsw.server import Csw

from catalogue.quality import use_harvest_profile

HERE = Path(__file__).parent
PYCSW_CONFIG = str(HERE / "pycsw.cfg")
SETTINGS = ("GEOWEB_CATALOGUE_DB", "GEOWEB_CATALOGUE_URL", "GEOWEB_CATALOGUE_PORT", "PYGEOAPI_OPENAPI")

missing = [name for name in SETTINGS if not os.environ.get(name)]
if missing:  # pycsw would advertise "${GEOWEB_CATALOGUE_URL}" and fail only at the first query
    raise RuntimeError(
        f"the catalogue needs the environment variables {', '.join(missing)} (docs/catalogue.md)"
    )
os.environ["PYGEOAPI_CONFIG"] = str(HERE / "pygeoapi.yml")
use_harvest_profile()  # ISO records with the conformance level


def _write_openapi() -> None:
    """pygeoapi reads its OpenAPI document from a file when imported: generated from its configuration."""
    from pygeoapi.openapi import generate_openapi_document

    document = generate_openapi_document(Path(os.environ["PYGEOAPI_CONFIG"]), "yaml")
    target = Path(os.environ["PYGEOAPI_OPENAPI"])
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(document, encoding="utf-8")
    partial.replace(target)  # gunicorn's workers may write it at once


_write_openapi()
import pygeoapi.flask_app  # noqa: E402  (reads PYGEOAPI_CONFIG and PYGEOAPI_OPENAPI when imported)

RECORDS = pygeoapi.flask_app.APP


def csw(environ, start_response):
    """pycsw's own WSGI wrapper without its quirks: no gzip (it sent the length of the uncompressed body), no
    configuration named by the request's query string."""
    server = Csw(PYCSW_CONFIG, environ)
    # the SQL dialect of its filters: pycsw takes a repository named by `source` for a Django one
    server.orm = "sqlalchemy"
    status, contents = server.dispatch_wsgi()
    start_response(
        status, [("Content-Type", str(server.contenttype)), ("Content-Length", str(len(contents)))]
    )
    return [contents]


def not_found(environ, start_response):
    start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
    return [b"Not found\n"]


def application(environ, start_response):
    path = environ.get("PATH_INFO", "")
    if path.rstrip("/") == "/csw":
        return csw(environ, start_response)
    if path == "/records" or path.startswith("/records/"):
        environ["SCRIPT_NAME"] = environ.get("SCRIPT_NAME", "") + "/records"
        environ["PATH_INFO"] = path[len("/records") :] or "/"
        return RECORDS(environ, start_response)
    return not_found(environ, start_response)
