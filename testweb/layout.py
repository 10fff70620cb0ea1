"""Where everything lives: ports, origins and the generated tree under <repo>/var/testweb."""

from __future__ import annotations

import sys
from pathlib import Path

HOST = "127.0.0.1"

# Web sites of HTML pages and files (lighttpd)
PORTAL = 18000
AGENCY = 18001
UNIVERSITY = 18002
BLOG = 18003
DOWNLOADS = 18004
# Servers
MAPSERVER = 18010  # lighttpd + MapServer (FastCGI)
DECOYS = 18020  # our aiohttp decoy server
PYCSW = 18030
PYWPS = 18031
MAPPROXY = 18032
OGCAPI = 18040  # pygeoapi
STAC_CATALOG = 18041  # lighttpd: a static STAC catalog with COG assets
STAC_API = 18042  # stac-fastapi-static over that catalog
ARCGIS = 18043  # our aiohttp stand-in of ArcGIS Server's REST API (testweb/arcgis.py)

SITE_PORTS = (PORTAL, AGENCY, UNIVERSITY, BLOG, DOWNLOADS, MAPSERVER, STAC_CATALOG)
SOFTWARE = {  # what answers on each port
    PORTAL: "lighttpd",
    AGENCY: "lighttpd",
    UNIVERSITY: "lighttpd",
    BLOG: "lighttpd",
    DOWNLOADS: "lighttpd",
    MAPSERVER: "MapServer",
    DECOYS: "decoys",
    PYCSW: "pycsw",
    PYWPS: "PyWPS",
    MAPPROXY: "MapProxy",
    OGCAPI: "pygeoapi",
    STAC_CATALOG: "lighttpd",
    STAC_API: "stac-fastapi-static",
    ARCGIS: "ArcGIS Server stand-in",
}

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "testweb"
TEMPLATES = SOURCE / "templates"
VAR = REPO / "var" / "testweb"
DATA = VAR / "data"  # vector and raster data the servers serve
SITES = VAR / "sites"  # one document root per port
CONF = VAR / "conf"  # generated server configuration
LOGS = VAR / "logs"
RUN = VAR / "run"  # pid files
MANIFEST = VAR / "manifest.json"
BUILD_STAMP = VAR / "build.sha256"
SERVER_VENV = REPO / ".venv-testweb"
CORPUS = REPO / "tests" / "data" / "corpus"
MAIN_PYTHON = Path(sys.executable)


def origin(port: int) -> str:
    return f"http://{HOST}:{port}"


def site_root(port: int) -> Path:
    return SITES / str(port)
