"""ArcGIS REST services (Esri's ArcGIS Server REST API): services directories and MapServer, FeatureServer and
ImageServer endpoints, confirmed by their JSON (``?f=json``).

Every ArcGIS Server URL lies under a site's ``<instance>/rest/services``: that path is the services directory,
a path ending in ``<folder>/<name>/<Type>Server`` is a service, and whatever lies below a service (a layer
``/MapServer/3``, ``/query``, ``/export``) belongs to it. So any response under ``/rest/services`` (the HTML
directory, a layer page, a JSON answer) leads to one target, its service or its site's directory, which is
read from the response when it is that target's JSON and otherwise asked for with ``f=json``, once per run.

A directory walks its folders and describes its map, feature and image services (bounded by settings): each
becomes a dataset of the directory, with its extent, and a resource of its own. A map or feature service's
layers, with their extents, come from its ``/layers`` resource in one request; an image service is its own
dataset. Extents carry an Esri ``spatialReference`` (``latestWkid``, ``wkid`` or ``wkt``) and are reprojected
to WGS84. An error answer (``{"error": {"code": 499}}``, often with HTTP 200) is a miss with its reason.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import quote, urlsplit

from pyproj import CRS
from pyproj.exceptions import CRSError

from geoweb.detect.base import DetectContext, Detector
from geoweb.detect.crs import reprojected_bbox
from geoweb.errors import GeowebError, HTTPStatusError, MalformedContent
from geoweb.fetch.response import Response
from geoweb.jsonsafe import lonlat_bbox, looks_like_json, number, objects, parse_json, text
from geoweb.links.normalize import normalize_url
from geoweb.models import ARCGIS_TYPES, BBox, Dataset, Resource, union_bbox

log = logging.getLogger(__name__)

# The service types reported, by the canonical spelling of their URL segment.
RESOURCE_TYPES = {
    "MapServer": "ARCGIS-MAPSERVER",
    "FeatureServer": "ARCGIS-FEATURESERVER",
    "ImageServer": "ARCGIS-IMAGESERVER",
}
_CANONICAL_KIND = {kind.lower(): kind for kind in RESOURCE_TYPES}
WITH_LAYERS = ("MapServer", "FeatureServer")  # their layers and extents are in one /layers answer
TOKEN_CODES = (498, 499)  # invalid token, token required
MAX_FOLDER_DEPTH = 3  # ArcGIS Server nests no folders; deeper paths are a broken or hostile listing
MAX_WKT_CHARS = 20_000  # Esri WKT of real coordinate systems is below 2,000 characters
FILE_TITLES = (".mxd", ".aprx", ".msd", ".mapx")  # a document name is no title ("Untitled.aprx")
DEFAULT_MAP_NAME = "Layers"  # ArcMap's name of an unnamed map

_SITE = re.compile(r"^(?P<site>.*?/rest/services)(?:/(?P<rest>.*))?$", re.I)
_KIND = re.compile(r"^[A-Za-z0-9]+Server$", re.I)  # MapServer, GPServer, VectorTileServer...
_NAME_SEGMENT = re.compile(r"^[^/?#\\\s][^/?#\\]*$")
_CURRENT_VERSION = re.compile(rb'"currentVersion"\s*:')


class NotArcGIS(MalformedContent):
    """Raised for a response that is not the JSON of an ArcGIS services directory or service."""

    reason = "not_arcgis"
    user_msg = "The document is not an ArcGIS REST services directory or service"


class ArcGISErrorAnswer(GeowebError):
    """Raised for the error JSON ArcGIS Server answers instead of a resource (often with HTTP 200)."""

    reason = "arcgis_error"
    user_msg = "The ArcGIS server answered with an error"


class TokenRequired(ArcGISErrorAnswer):
    """Raised for error 499 (token required) or 498 (invalid token): a secured service or folder."""

    reason = "token_required"
    user_msg = "The ArcGIS service requires a token"


@dataclass(frozen=True, slots=True)
class Place:
    """Where a URL lies on an ArcGIS site: the site's directory, and the service it belongs to, if any."""

    directory: str  # canonical URL of <instance>/rest/services
    service: str | None = None  # canonical URL of the service, without query or trailing slash
    kind: str | None = None  # MapServer, FeatureServer, ImageServer, or another *Server type
    at_target: bool = False  # the URL's path is the target's own (not a layer, folder or operation)

    @property
    def target(self) -> str:
        return self.service or self.directory


def locate(url: str) -> Place | None:
    """The place of ``url`` on an ArcGIS site; None when its path has no ``/rest/services``."""
    normalized = normalize_url(url)
    if normalized is None:
        return None
    parts = urlsplit(normalized)
    match = _SITE.match(parts.path)
    if match is None:
        return None
    directory = f"{parts.scheme}://{parts.netloc}{match['site'][: -len('rest/services')]}rest/services"
    segments = [s for s in (match["rest"] or "").split("/") if s]
    for i, segment in enumerate(segments):
        if i and _KIND.match(segment):
            kind = _CANONICAL_KIND.get(segment.lower(), segment)
            service = f"{directory}/{'/'.join(segments[:i])}/{kind}"
            return Place(directory, service, kind, at_target=i == len(segments) - 1)
    return Place(directory, at_target=not segments)


def json_url(url: str) -> str:
    return f"{url}?f=json"


# --- reading documents -----------------------------------------------------------------------------------


def read_document(response: Response, max_bytes: int) -> dict:
    """The JSON object of an ArcGIS answer; raises the ArcGIS error it holds, or why it is none."""
    document = None
    if response.complete and looks_like_json(response.body[:64]):
        try:
            document = parse_json(response.body, max_bytes=max_bytes, invalid=NotArcGIS)
        except NotArcGIS:
            if 200 <= response.status < 300:
                raise
    error = document.get("error") if isinstance(document, dict) else None
    if error is not None:
        raise error_answer(error)
    if not 200 <= response.status < 300:
        raise HTTPStatusError(response.status, url=response.final_url)
    if not response.complete:
        raise MalformedContent(f"body cut at {len(response.body)} bytes")
    if document is None:
        raise NotArcGIS(f"not JSON ({response.content_type or 'no content type'})")
    if not isinstance(document, dict):
        raise NotArcGIS("the JSON document is not an object")
    return document


def error_answer(error: Any) -> ArcGISErrorAnswer:
    """The exception an ArcGIS ``error`` member stands for, with its code and message."""
    code = number(error, "code")
    message = (text(error, "message") or "no message")[:200]
    if code in TOKEN_CODES:
        return TokenRequired(f"ArcGIS error {code:g}: {message}: the resource needs a token")
    return ArcGISErrorAnswer(f"ArcGIS error {'no code' if code is None else f'{code:g}'}: {message}")


async def fetch_document(ctx: DetectContext, url: str) -> dict:
    """``url?f=json`` as a JSON object; raises what ``read_document`` raises, or the fetch's error."""
    ctx.stats["arcgis/requests"] += 1
    response = await ctx.fetch(json_url(url), max_bytes=ctx.settings.max_body_bytes)
    return read_document(response, ctx.settings.max_body_bytes)


def digest(document: dict) -> str:
    """The SHA-256 of a document's content, the same for its ``json`` and ``pjson`` spellings."""
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def integer(obj: Any, key: str) -> int | None:
    """``obj[key]`` as an integer when it is a whole number (JSON integers are parsed as floats)."""
    value = number(obj, key)
    return int(value) if value is not None and value.is_integer() else None


def version(document: dict) -> str | None:
    """``currentVersion`` as text: a number at ArcGIS Server (10.91), a string at some portals."""
    value = number(document, "currentVersion")
    return f"{value:g}" if value is not None else text(document, "currentVersion")


# --- extents ---------------------------------------------------------------------------------------------


def esri_crs(spatial_reference: Any) -> str | None:
    """The CRS of an Esri spatialReference for pyproj: its ``latestWkid`` or ``wkid`` (EPSG or Esri
    authority), else its ``wkt``; None when it names none pyproj knows."""
    for key in ("latestWkid", "wkid"):
        code = number(spatial_reference, key)
        if code is not None and code.is_integer() and 0 < code < 1_000_000:
            known = _authority_crs(int(code))
            if known:
                return known
    wkt = text(spatial_reference, "wkt")
    return wkt if wkt and len(wkt) <= MAX_WKT_CHARS else None


@lru_cache(maxsize=256)
def _authority_crs(code: int) -> str | None:
    """``EPSG:<code>`` or ``ESRI:<code>`` (Web Mercator's 102100, state planes in feet...), as pyproj knows it."""
    for authority in ("EPSG", "ESRI"):
        try:
            CRS.from_authority(authority, str(code))
        except CRSError:
            continue
        return f"{authority}:{code}"
    return None


def esri_bbox(extent: Any) -> BBox | None:
    """An Esri extent (xmin, ymin, xmax, ymax, spatialReference) as a WGS84 box; None when it is empty
    ("NaN" or null corners), inverted, in an unknown CRS, or outside the world."""
    corners = [number(extent, key) for key in ("xmin", "ymin", "xmax", "ymax")]
    if None in corners:
        return None
    minx, miny, maxx, maxy = corners
    if minx > maxx or miny > maxy:
        return None
    spatial_reference = extent.get("spatialReference")
    crs = esri_crs(spatial_reference)
    if crs is None and spatial_reference is not None:
        return None  # a named CRS nobody knows: the numbers may be anything
    box = reprojected_bbox((minx, miny, maxx, maxy), crs)
    if box is None:
        return None
    # Web Mercator world extents overshoot 180 degrees by a hair: that is the world, not an error
    tolerance = 0.01
    if not (-180 - tolerance <= box[0] and box[2] <= 180 + tolerance):
        return None
    if not (-90 - tolerance <= box[1] and box[3] <= 90 + tolerance):
        return None
    clamped = [max(-180.0, min(180.0, box[0])), max(-90.0, box[1]), min(180.0, box[2]), min(90.0, box[3])]
    return lonlat_bbox(clamped)


def service_extent(document: dict) -> BBox | None:
    """A service's own extent: ``fullExtent`` (map, feature), ``extent`` (image), ``initialExtent``."""
    for key in ("fullExtent", "extent", "initialExtent"):
        box = esri_bbox(document.get(key))
        if box is not None:
            return box
    return None


# --- services --------------------------------------------------------------------------------------------


def confirm_service(document: dict, kind: str) -> None:
    """Raises NotArcGIS unless ``document`` has the members every ``kind`` service answers with."""
    if kind in WITH_LAYERS:
        if not isinstance(document.get("layers"), list):
            raise NotArcGIS(f"{kind} JSON without a layers list")
    elif not (number(document, "bandCount") or text(document, "pixelType")):
        raise NotArcGIS("ImageServer JSON without bandCount or pixelType")
    if not ("currentVersion" in document or isinstance(document.get("spatialReference"), dict)):
        raise NotArcGIS(f"{kind} JSON with neither currentVersion nor spatialReference")


def service_title(document: dict, name: str) -> str:
    """The document title (not a file name), the map name (not ArcMap's default), the image service's
    name, else the service name."""
    info = document.get("documentInfo")
    title = text(info, "Title")
    if title and not title.lower().endswith(FILE_TITLES):
        return title
    map_name = text(document, "mapName")
    if map_name and map_name != DEFAULT_MAP_NAME:
        return map_name
    return text(document, "name") or name.rpartition("/")[2]


def split_keywords(value: str | None) -> list[str]:
    return list(dict.fromkeys(w.strip() for w in re.split(r"[,;]", value or "") if w.strip()))


def layer_datasets(layers_document: dict, max_layers: int, url: str) -> list[Dataset]:
    """Datasets of a map or feature service: its layers, and its tables that have an extent."""
    layers = objects(layers_document, "layers")
    tables = [t for t in objects(layers_document, "tables") if esri_bbox(t.get("extent")) is not None]
    entries = layers + tables
    if len(entries) > max_layers:
        log.info("%s: %d layers and tables, only the first %d kept", url, len(entries), max_layers)
        entries = entries[:max_layers]
    datasets = []
    for entry in entries:
        name = text(entry, "name")
        layer_id = integer(entry, "id")
        if name is None and layer_id is None:
            continue
        extra = {
            "id": layer_id,
            "type": text(entry, "type"),
            "geometry_type": text(entry, "geometryType"),
        }
        datasets.append(
            Dataset(
                name=name or str(layer_id),
                title=name,
                bbox=esri_bbox(entry.get("extent")),
                extra={k: v for k, v in extra.items() if v is not None},
            )
        )
    return datasets


def image_dataset(document: dict, name: str) -> Dataset:
    pixel_size = [number(document, "pixelSizeX"), number(document, "pixelSizeY")]
    extra = {
        "band_count": integer(document, "bandCount"),
        "pixel_type": text(document, "pixelType"),
        "data_type": text(document, "serviceDataType"),
        "pixel_size": None if None in pixel_size else pixel_size,
    }
    return Dataset(
        name=name,
        title=text(document, "name"),
        bbox=service_extent(document),
        extra={k: v for k, v in extra.items() if v is not None},
    )


def service_resource(
    url: str, kind: str, document: dict, layers_document: dict | None, *, max_layers: int
) -> Resource:
    """The resource of a map, feature or image service from its JSON and, for map and feature services,
    its ``/layers`` answer (the service JSON's own layer list, without extents, when there is none)."""
    confirm_service(document, kind)
    name = service_name(url)
    if kind in WITH_LAYERS:
        datasets = layer_datasets(layers_document or document, max_layers, url)
    else:
        datasets = [image_dataset(document, name)]
    info = document.get("documentInfo")
    spatial_reference = document.get("spatialReference")
    extra = {
        "capabilities": text(document, "capabilities"),
        "wkid": integer(spatial_reference, "latestWkid") or integer(spatial_reference, "wkid"),
        "layer_extents": kind not in WITH_LAYERS or layers_document is not None,
    }
    return Resource(
        url=url,
        type=RESOURCE_TYPES[kind],
        version=version(document),
        title=service_title(document, name),
        abstract=text(document, "serviceDescription") or text(document, "description"),
        keywords=split_keywords(text(info, "Keywords")),
        provider=text(document, "copyrightText") or text(info, "Author"),
        datasets=datasets,
        bbox=union_bbox(d.bbox for d in datasets) or service_extent(document),
        extra={k: v for k, v in extra.items() if v is not None},
        content_sha256=digest(document),
    )


def service_name(url: str) -> str:
    """``folder/name`` of a service URL (the path between ``rest/services/`` and the type)."""
    return url.split("/rest/services/", 1)[1].rpartition("/")[0]


async def describe_service(ctx: DetectContext, url: str, kind: str, document: dict | None = None) -> Resource:
    """The resource of the service at ``url``, fetching its JSON when not given, and its layers."""
    if document is None:
        document = await fetch_document(ctx, url)
    confirm_service(document, kind)
    layers = None
    if kind in WITH_LAYERS:
        try:
            layers = await fetch_document(ctx, f"{url}/layers")
        except GeowebError as exc:  # servers before 10.0 have no /layers: layers without extents
            ctx.stats[f"arcgis/layers_miss/{exc.reason}"] += 1
            log.info("%s/layers: no layer extents (%s): %s", url, exc.reason, exc)
    return service_resource(url, kind, document, layers, max_layers=ctx.settings.arcgis_max_layers)


# --- services directories --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Listed:
    """A service a directory lists: ``folder/name`` and its type."""

    name: str
    kind: str

    def url(self, directory: str) -> str:
        return f"{directory}/{quote(self.name, safe='/')}/{self.kind}"


def checked_path(value: Any) -> str | None:
    """A folder or service name as a directory lists it (``Hydro/Rivers``), or None when it could escape
    the directory (``..``, a query, a URL) or nests deeper than any ArcGIS Server does."""
    if not isinstance(value, str):
        return None
    segments = value.strip().split("/")
    if len(segments) > MAX_FOLDER_DEPTH + 1 or any(s in (".", "..") for s in segments):
        return None
    return value.strip() if all(_NAME_SEGMENT.match(s) for s in segments) else None


def listed_services(document: dict, folder: str | None) -> list[Listed]:
    listed = []
    for entry in objects(document, "services"):
        name, kind = checked_path(entry.get("name")), text(entry, "type")
        if name is None or kind is None or not _KIND.match(kind):
            continue
        if folder and not name.startswith(folder + "/"):  # 9.3 servers list names without their folder
            name = f"{folder}/{name}"
        listed.append(Listed(name, _CANONICAL_KIND.get(kind.lower(), kind)))
    return listed


def listed_folders(document: dict, parent: str | None) -> list[str]:
    folders = []
    values = document.get("folders")
    for value in values if isinstance(values, list) else []:
        name = checked_path(value)
        if name is None:
            continue
        if parent and not name.startswith(parent + "/"):
            name = f"{parent}/{name}"
        if checked_path(name) and name.count("/") < MAX_FOLDER_DEPTH:
            folders.append(name)
    return folders


async def walk_folders(ctx: DetectContext, directory: str, root: dict) -> list[Listed]:
    """Every service of the directory: the root's, then its folders' breadth-first, within the caps."""
    services = listed_services(root, None)
    queue, seen = listed_folders(root, None), set()
    cap = ctx.settings.arcgis_max_folders
    while queue:
        folder = queue.pop(0)
        if folder in seen:
            continue
        if len(seen) == cap:
            log.info("%s: folder cap of %d reached, %d folders left unread", directory, cap, len(queue) + 1)
            break
        seen.add(folder)
        try:
            document = await fetch_document(ctx, f"{directory}/{quote(folder, safe='/')}")
        except GeowebError as exc:
            ctx.stats[f"arcgis/folder_miss/{exc.reason}"] += 1
            log.info("%s: folder %s not read (%s): %s", directory, folder, exc.reason, exc)
            continue
        services += listed_services(document, folder)
        queue += listed_folders(document, folder)
    unique = list(dict.fromkeys(services))
    if len(unique) > ctx.settings.arcgis_max_services:
        log.info(
            "%s: %d services, only the first %d described",
            directory,
            len(unique),
            ctx.settings.arcgis_max_services,
        )
        unique = unique[: ctx.settings.arcgis_max_services]
    return unique


async def describe_listed(
    ctx: DetectContext, directory: str, listed: Listed
) -> tuple[Dataset, Resource | None]:
    """A listed service as a dataset of its directory (its title and own extent when it is a map, feature
    or image service that answers), and as a resource when the run wants its type and no other page of the
    run claimed it."""
    url = listed.url(directory)
    dataset = Dataset(name=f"{listed.name}/{listed.kind}", extra={"type": listed.kind})
    if listed.kind not in RESOURCE_TYPES:
        return dataset, None
    try:
        document = await fetch_document(ctx, url)
        confirm_service(document, listed.kind)
        dataset.title, dataset.bbox = service_title(document, listed.name), service_extent(document)
        if not (ctx.wants(RESOURCE_TYPES[listed.kind]) and ctx.first_time("arcgis:" + url)):
            return dataset, None
        return dataset, await describe_service(ctx, url, listed.kind, document)
    except GeowebError as exc:
        ctx.stats[f"arcgis/service_miss/{exc.reason}"] += 1
        log.info("%s: listed service %s not described (%s): %s", directory, url, exc.reason, exc)
        dataset.extra["error"] = exc.reason
        return dataset, None


async def describe_directory(ctx: DetectContext, directory: str, root: dict) -> list[Resource]:
    """The directory as a resource whose datasets are its services, and the services it describes."""
    if not isinstance(root.get("folders"), list) and not isinstance(root.get("services"), list):
        raise NotArcGIS("JSON without folders or services: not a services directory")
    listed = await walk_folders(ctx, directory, root)
    if not listed:
        raise NotArcGIS("the services directory lists no service")
    described = await asyncio.gather(*(describe_listed(ctx, directory, s) for s in listed))
    datasets = [dataset for dataset, _ in described]
    services = [resource for _, resource in described if resource is not None]
    extra = {"services": len(datasets), "described": sum(1 for d in datasets if d.title or d.bbox)}
    directory_resource = Resource(
        url=directory,
        type="ARCGIS-DIRECTORY",
        version=version(root),
        datasets=datasets,
        bbox=union_bbox(d.bbox for d in datasets),
        extra=extra,
        content_sha256=digest(root),
    )
    return [directory_resource, *services]


# --- the detector ----------------------------------------------------------------------------------------


class ArcGISDetector(Detector):
    name = "arcgis"
    types = ARCGIS_TYPES

    def accepts(self, response: Response) -> bool:
        path = urlsplit(response.final_url).path.lower()
        if "/rest/services" in path:
            return True
        head = response.body[:2048]
        return looks_like_json(head) and bool(_CURRENT_VERSION.search(head))

    async def detect(self, response: Response, ctx: DetectContext) -> list[Resource]:
        if not ctx.wants(*ARCGIS_TYPES):
            return []
        url = response.final_url
        try:
            place = locate(url)
            if place is None:
                raise NotArcGIS("the URL has no <instance>/rest/services path")
            if place.kind is not None and place.kind not in RESOURCE_TYPES:
                raise NotArcGIS(f"a {place.kind}, not a map, feature or image service")
            if place.kind is not None and not ctx.wants(RESOURCE_TYPES[place.kind]):
                return []
            if not ctx.first_time("arcgis:" + place.target):
                return []  # this run has its answer already (or is getting it)
            document = self._own_document(response, place, ctx)
            if document is None:
                document = await fetch_document(ctx, place.target)
            if place.service is None:
                resources = await describe_directory(ctx, place.directory, document)
            else:
                resources = [await describe_service(ctx, place.service, place.kind, document)]
        except GeowebError as exc:
            return ctx.miss(self.name, url, exc)
        for resource in resources:
            ctx.stats[f"arcgis/found/{resource.type}"] += 1
        return resources

    @staticmethod
    def _own_document(response: Response, place: Place, ctx: DetectContext) -> dict | None:
        """The response's JSON when it is its target's JSON (``f=json``, ``f=pjson``); None when it is another
        form or page of it (HTML, a layer, a folder), whose target is then asked for."""
        if not (place.at_target and looks_like_json(response.body[:64])):
            return None
        return read_document(response, ctx.settings.max_body_bytes)
