"""The ArcGIS Server stand-in: Esri's ArcGIS REST API formats, served from the documents in tests/data/arcgis.

No ArcGIS Server can run here, so this aiohttp app answers the way one does, from the JSON documents the
detector's tests read (one file per resource, the path of the file is the path of the resource):

- ``<instance>/rest/services[/<folder>]`` (the Catalog resource): ``currentVersion``, ``folders``,
  ``services`` [{name, type}], names of services in folders written ``folder/name``;
- ``.../<name>/MapServer``, ``FeatureServer``, ``ImageServer`` (the service resources), ``.../layers``
  (All Layers and Tables, the layers with their extents) and ``.../<Type>/<id>`` (one layer or table, the
  entry of ``/layers`` with that id);
- ``f=json`` (compact), ``f=pjson`` (the stored file: indented by one space, as ArcGIS does), and the HTML
  Services Directory pages otherwise (breadcrumbs, folder, service and layer links, the JSON link);
- errors as JSON with HTTP 200: 499 Token Required below a secured folder, 400 Invalid URL elsewhere.

Two instances show the two generations: ``/arcgis`` answers as ArcGIS Server 10.9.1 (``currentVersion``
10.91, JSON labelled ``text/plain``, as 10.x does), ``/server`` as ArcGIS Enterprise 11.3 (``cimVersion``,
``type`` on layer stubs, ``application/json``). Where the shapes come from: Esri's REST API reference
(developers.arcgis.com/rest/services-reference/enterprise: Catalog, Map Service, All Layers and Tables,
Feature Service, Image Service, Error handling); published responses: the CharlotteLAS ImageServer of
sampleserver6 (10.91) and an 11.1 MapServer with a group layer, both quoted in QGIS's provider tests
(python/tests/test_provider_imageserver.py), the 499 answer in Esri's arcgis-rest-js test mocks
(``ArcGISServerTokenRequired``), folder listings with ``folder/name`` services as sampleserver6 answers them.
The HTML pages follow the 10.x Services Directory markup, without its stylesheet and external links (the
test web links nothing outside itself).

Decoys: ``/gis/rest/services`` answers a JSON with ``currentVersion`` only, ``/blog/tag/rest/services/`` is
a blog page about services directories that ignores ``f=``.

Run: ``python -m testweb.arcgis --port 18043 --access-log FILE``.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
from html import escape
from pathlib import Path
from typing import Any

from aiohttp import web

from testweb.decoys import COMBINED_LOG_FORMAT
from testweb.layout import ARCGIS, REPO, origin
from testweb.model import Decoy, Planted

DOCUMENTS = REPO / "tests" / "data" / "arcgis"
INSTANCES = {  # instance -> media type of its JSON answers
    "arcgis": "text/plain",  # ArcGIS Server 10.x labels JSON as text
    "server": "application/json",
}
SECURED = ("arcgis/rest/services/Secure",)  # folders whose every resource needs a token
TOKEN_REQUIRED = "errors/token-required"
INVALID_URL = "errors/invalid-url"
_LAYER = re.compile(r"^(?P<service>.+/(?:MapServer|FeatureServer))/(?P<id>\d+)$")

HOST = origin(ARCGIS)
DIRECTORY_10 = f"{HOST}/arcgis/rest/services"
DIRECTORY_11 = f"{HOST}/server/rest/services"
RIVERS_MAP = f"{DIRECTORY_10}/Hydro/Rivers/MapServer"
RIVERS_FEATURES = f"{DIRECTORY_10}/Hydro/Rivers/FeatureServer"
ELEVATION = f"{DIRECTORY_10}/Imagery/CharlotteLAS/ImageServer"
LANDUSE = f"{DIRECTORY_11}/Planning/Landuse/MapServer"
PARKS = f"{DIRECTORY_11}/Planning/Parks/FeatureServer"
PARKS_LAYER = f"{PARKS}/0"  # the URL a page links: a layer, which leads to its service
SECURED_SERVICE = f"{DIRECTORY_10}/Secure/Parcels/MapServer"
VERSION_ONLY = f"{HOST}/gis/rest/services?f=json"
BLOG = f"{HOST}/blog/tag/rest/services/"

DECOYS = (
    Decoy(SECURED_SERVICE, "an ArcGIS map service that answers every request with error 499, Token Required"),
    Decoy(VERSION_ONLY, "JSON at a rest/services path holding only currentVersion: no services directory"),
    Decoy(BLOG, "a blog page under a rest/services path, about services directories"),
)


def planted() -> list[Planted]:
    """The directories, each with its services as datasets, and the services with their layers."""
    rivers = ("Gauges", "Rivers")
    return [
        Planted(
            DIRECTORY_10,
            {"ARCGIS-DIRECTORY": ("Hydro/Rivers/MapServer", "Hydro/Rivers/FeatureServer", "Imagery/CharlotteLAS/ImageServer")},
            "ArcGIS Server 10.9.1 stand-in: services in folders, one folder secured",
        ),
        Planted(RIVERS_MAP, {"ARCGIS-MAPSERVER": (*rivers, "Catchments")}, "layers in Web Mercator and UTM 33N"),
        Planted(RIVERS_FEATURES, {"ARCGIS-FEATURESERVER": rivers}),
        Planted(ELEVATION, {"ARCGIS-IMAGESERVER": ("Imagery/CharlotteLAS",)}, "extent in NC State Plane feet"),
        Planted(DIRECTORY_11, {"ARCGIS-DIRECTORY": ("Planning/Landuse/MapServer", "Planning/Parks/FeatureServer")}),
        Planted(LANDUSE, {"ARCGIS-MAPSERVER": ("Land use", "Zoning", "Buildings")}, "ArcGIS Enterprise 11.3"),
        Planted(PARKS, {"ARCGIS-FEATURESERVER": ("Parks", "Playgrounds")}, "ArcGIS Enterprise 11.3"),
    ]  # fmt: skip


# Which planted resource is found from which other one, and how many link hops later: the services a
# directory describes are found with it; a service page's breadcrumbs link its directory.
REACHED_FROM = (
    (RIVERS_MAP, DIRECTORY_10, 0),
    (RIVERS_FEATURES, DIRECTORY_10, 0),
    (ELEVATION, DIRECTORY_10, 0),
    (LANDUSE, DIRECTORY_11, 0),
    (PARKS, DIRECTORY_11, 0),
    (DIRECTORY_11, LANDUSE, 1),
    (DIRECTORY_11, PARKS, 1),
)
ALIASES = {PARKS_LAYER: PARKS}  # URLs written in pages -> the planted resource they lead to


# --- documents -------------------------------------------------------------------------------------------


def load(name: str) -> Any:
    """A stored document by its path without ``.json``; read at each request, so edits show at once."""
    return json.loads((DOCUMENTS / f"{name}.json").read_text())


def resolve(path: str) -> tuple[str, Any]:
    """(kind, document) of a resource path such as ``arcgis/rest/services/Hydro``: kind is directory,
    service, layers, layer or error."""
    if any(path == s or path.startswith(s + "/") for s in SECURED):
        return "error", load(TOKEN_REQUIRED)
    stored = DOCUMENTS / f"{path}.json"
    if stored.is_file() and DOCUMENTS in stored.resolve().parents:
        kind = "layers" if path.endswith("/layers") else "service" if path.endswith("Server") else "directory"
        return kind, load(path)
    match = _LAYER.match(path)
    if match and (DOCUMENTS / f"{match['service']}/layers.json").is_file():
        everything = load(f"{match['service']}/layers")
        for entry in everything["layers"] + everything["tables"]:
            if entry["id"] == int(match["id"]):
                return "layer", entry
    return "error", load(INVALID_URL)


# --- HTML ------------------------------------------------------------------------------------------------


def _breadcrumbs(path: str) -> str:
    """Home > services > folder > service (Type) > layer, each a link, as the Services Directory writes."""
    instance, _, rest = path.partition("/rest/services")
    root = f"/{instance}/rest/services"
    crumbs = [f'<a href="{root}">Home</a>', f'<a href="{root}">services</a>']
    href = root
    segments = [s for s in rest.split("/") if s]
    for i, segment in enumerate(segments):
        if segment.endswith("Server"):
            continue
        href += f"/{segment}"
        kind = segments[i + 1] if i + 1 < len(segments) and segments[i + 1].endswith("Server") else None
        if kind:
            href += f"/{kind}"
        label = f"{segment} ({kind})" if kind else segment
        crumbs.append(f'<a href="{escape(href)}">{escape(label)}</a>')
    return "\n&gt; ".join(crumbs)


def _extent(extent: dict | None) -> str:
    if not extent:
        return ""
    sr = extent.get("spatialReference", {})
    lines = "".join(
        f"{k.upper()[:1]}{k[1:3].capitalize()}{k[3:]}: {extent[k]}<br/>"
        for k in ("xmin", "ymin", "xmax", "ymax")
    )
    return f"<ul>{lines}Spatial Reference: {sr.get('wkid')}  ({sr.get('latestWkid')})<br/></ul>"  # fmt: skip


def _links(items: list[tuple[str, str, str]]) -> str:
    """A list of (href, label, what follows the link: ``(MapServer)``, ``(3)``)."""
    lines = [f'<li><a href="{escape(h)}">{escape(t)}</a> {escape(after)}</li>' for h, t, after in items]
    return "<ul>\n" + "\n".join(lines) + "\n</ul>"


def _body(kind: str, path: str, document: dict) -> tuple[str, str]:
    """(heading, body) of the HTML form of a resource."""
    base = f"/{path}"
    if kind == "directory":
        folder = path.partition("/rest/services")[2].strip("/") or "/"
        root = f"/{path.partition('/rest/services')[0]}/rest/services"
        folders = [(f"{root}/{f}", f, "") for f in document.get("folders", [])]
        services = [
            (f"{root}/{s['name']}/{s['type']}", s["name"], f"({s['type']})") for s in document["services"]
        ]
        body = f"<b>Current Version: </b>{document['currentVersion']}<br/><br/>\n"
        body += f"<b>Folders:</b><br/>\n{_links(folders)}\n" if folders else ""
        body += f"<b>Services:</b><br/>\n{_links(services)}\n" if services else ""
        return f"Folder: {escape(folder)}", body
    if kind == "service":
        name, _, service_type = path.partition("/rest/services/")[2].rpartition("/")
        body = f"<b>Service Description: </b>{escape(document.get('serviceDescription', ''))}<br/><br/>\n"
        if document.get("mapName"):
            body += f"<b>Map Name: </b>{escape(document['mapName'])}<br/><br/>\n"
        layers = [
            (f"{base}/{item['id']}", item["name"], f"({item['id']})") for item in document.get("layers", [])
        ]
        tables = [
            (f"{base}/{item['id']}", item["name"], f"({item['id']})") for item in document.get("tables", [])
        ]
        body += f"<b>Layers: </b>\n{_links(layers)}\n" if layers else ""
        body += f"<b>Tables: </b>\n{_links(tables)}\n" if tables else ""
        body += f"<b>Copyright Text: </b>{escape(document.get('copyrightText', ''))}<br/><br/>\n"
        body += f"<b>Full Extent: </b>{_extent(document.get('fullExtent') or document.get('extent'))}\n"
        keywords = document.get("documentInfo", {}).get("Keywords", "")
        body += f"<b>Document Info: </b><ul>Keywords: {escape(keywords)}<br/></ul>\n"
        return f"{escape(name)} ({service_type})", body
    if kind == "layer":
        service = base.rpartition("/")[0]
        body = (
            f"<b>Name: </b>{escape(document['name'])}<br/><br/>\n<b>Type: </b>{document['type']}<br/><br/>\n"
        )
        body += f"<b>Geometry Type: </b>{document.get('geometryType') or ''}<br/><br/>\n"
        body += f"<b>Description: </b>{escape(document.get('description', ''))}<br/><br/>\n"
        sublayers = [(f"{service}/{s['id']}", s["name"], "") for s in document.get("subLayers") or []]
        body += f"<b>Sub Layers: </b>\n{_links(sublayers)}\n" if sublayers else ""
        body += f"<b>Extent: </b>{_extent(document.get('extent'))}\n"
        return f"Layer: {escape(document['name'])} (ID: {document['id']})", body
    error = document["error"]
    return f"Error: {escape(error['message'])}", f"<b>Code: </b>{error['code']}<br/>\n"


def render_html(kind: str, path: str, document: dict) -> str:
    heading, body = _body(kind, path, document)
    return (
        f'<html lang="en">\n<head>\n<title>{heading}</title>\n</head>\n<body>\n'
        '<table width="100%" class="userTable"><tr><td class="titlecell">ArcGIS REST Services Directory</td>'
        "</tr></table>\n"
        f'<table width="100%" class="navTable"><tr valign="top"><td class="breadcrumbs">\n{_breadcrumbs(path)}\n'
        "</td></tr></table>\n"
        f'<table><tr><td class="apiref"><a href="/{escape(path)}?f=pjson" target="_blank">JSON</a></td></tr></table>\n'
        f'<h2>{heading}</h2>\n<div class="rbody">\n{body}</div>\n</body>\n</html>\n'
    )  # fmt: skip


# --- the app ---------------------------------------------------------------------------------------------


async def rest(request: web.Request) -> web.Response:
    instance = request.match_info["instance"]
    tail = request.match_info["tail"].strip("/")
    path = f"{instance}/rest/services" + (f"/{tail}" if tail else "")
    kind, document = resolve(path)
    form = request.query.get("f", "html").lower()
    if form in ("json", "pjson"):
        if form == "json":
            text = json.dumps(document, separators=(",", ":"), ensure_ascii=False)
        else:
            text = json.dumps(document, indent=1, ensure_ascii=False) + "\n"
        return web.Response(text=text, content_type=INSTANCES[instance], charset="utf-8")
    return web.Response(text=render_html(kind, path, document), content_type="text/html", charset="utf-8")


async def version_only(request: web.Request) -> web.Response:
    """A services directory stub that answers only its version, whatever is asked."""
    return web.json_response(load("gis/rest/services"))


async def blog(request: web.Request) -> web.Response:
    """A blog tag page (WordPress-style URL) that mentions services directories; it ignores ``f=``."""
    text = (
        "<!DOCTYPE html>\n<html><head><title>Posts tagged rest/services</title></head><body>\n"
        "<h1>Posts tagged: rest/services</h1>\n"
        "<article><h2>Finding the services directory of a city</h2>\n"
        "<p>Most city GIS servers publish their maps under <code>/arcgis/rest/services</code>. Add "
        "<code>?f=pjson</code> to any folder or MapServer URL to read it as JSON.</p></article>\n"
        "</body></html>\n"
    )
    return web.Response(text=text, content_type="text/html", charset="utf-8")


def make_app() -> web.Application:
    app = web.Application()
    instances = "|".join(INSTANCES)
    app.router.add_get(rf"/{{instance:{instances}}}/rest/services{{tail:(/.*)?}}", rest)
    app.router.add_get(r"/gis/rest/services{tail:/?}", version_only)
    app.router.add_get(r"/blog/{tail:.*}", blog)
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--access-log", type=Path, required=True)
    args = parser.parse_args()
    access = logging.getLogger("aiohttp.access")
    access.setLevel(logging.INFO)
    access.addHandler(logging.FileHandler(args.access_log))
    web.run_app(
        make_app(),
        host="127.0.0.1",
        port=args.port,
        access_log=access,
        access_log_format=COMBINED_LOG_FORMAT,
        shutdown_timeout=0.5,
        print=None,
    )


if __name__ == "__main__":
    main()
