"""OGC APIs (Features, Records, Maps, Tiles, Processes, Coverages, EDR), confirmed by their conformance.

A landing page is JSON with links to its conformance declaration and its data. Each OGC API standard the
conformance classes declare is one resource at the landing page (as one MapServer endpoint is one resource
per OGC service), with the collections that API serves as datasets: which collection serves which API is
told by the links it carries (items, map, tiles, coverage, EDR queries). Processes are the datasets of
OGC API - Processes. A collection naming no such link belongs to the one data API a landing page declares,
when it declares one only.

A landing page whose conformance declaration is missing or broken (unreachable, not JSON, no list of
classes) is not given up: the APIs are read from its links and its collections (items links make OGC API -
Features, map links Maps, and so on; a ``processes`` link with processes, Processes), reported without
conformance classes or version (docs/ogcapi.md).

Any other document of an API (a collection, /collections, /conformance, an ``f=html`` page) leads back to
its landing page, by its ``root`` link or the shape of its URL, and the landing page is read once per run.
The resource URL is the landing page as fetched, without ``f=`` and without a trailing slash (documents
lie about themselves: their ``self`` links are not trusted).
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

from geoweb import jsonsafe
from geoweb.detect.base import DetectContext, Detector
from geoweb.detect.ogc.common import with_query
from geoweb.errors import GeowebError, HTTPStatusError, MalformedContent
from geoweb.fetch.response import Response
from geoweb.links.normalize import normalize_url
from geoweb.models import OGCAPI_TYPES, Dataset, Resource, union_bbox

log = logging.getLogger(__name__)

OGC_REL = "http://www.opengis.net/def/rel/ogc/1.0/"
JSON_TYPES = ("application/json", "application/geo+json", "application/vnd.oai.openapi+json")
ACCEPT_JSON = {"Accept": "application/json"}
HEAD_BYTES = 65_536  # where ``accepts`` looks for the members of an OGC API document

# The conformance classes of each API: every part and version of its standard (ogcapi-features-1 to -5,
# processes-1 to -3...), plus the draft URIs servers still declare (WFS 3.0, the WPS REST binding).
API_CLASSES = {
    "OGCAPI-FEATURES": re.compile(r"/spec/(?:ogcapi-features-\d+|wfs-1/3\.0)/"),
    "OGCAPI-RECORDS": re.compile(r"/spec/ogcapi-records-\d+/"),
    "OGCAPI-MAPS": re.compile(r"/spec/ogcapi-maps-\d+/"),
    "OGCAPI-TILES": re.compile(r"/spec/ogcapi-tiles-\d+/"),
    "OGCAPI-PROCESSES": re.compile(r"/spec/(?:ogcapi-processes-\d+|WPS/2\.0/req/service/binding/rest-json)/"),
    "OGCAPI-COVERAGES": re.compile(r"/spec/ogcapi-coverages-\d+/"),
    "OGCAPI-EDR": re.compile(r"/spec/ogcapi-edr-\d+/"),
}
_VERSION = re.compile(r"/spec/([^/]+)/(\d+\.\d+(?:\.\d+)?)")  # standard (and part), version

# Links of a collection that tell which API serves it (rel without the OGC prefix).
MAP_RELS = frozenset({"map"})
TILES_RELS = frozenset({"tiles", "tilesets-vector", "tilesets-map", "tilesets-coverage"})
COVERAGE_RELS = frozenset({"coverage"})
EDR_QUERIES = frozenset(
    ("position", "area", "cube", "radius", "trajectory", "corridor", "locations", "items")
)
# Path segments that sit below a landing page: the landing page is the path before the first of them.
API_SEGMENTS = frozenset({"collections", "conformance", "processes", "jobs", "openapi", "tilematrixsets"})
PRESENTATION_KEYS = frozenset({"f", "lang"})


class NotOGCAPI(MalformedContent):
    """Raised when a document that looked like part of an OGC API leads to no landing page that declares
    an OGC API conformance class."""

    reason = "not_ogcapi"
    user_msg = "The document is not an OGC API landing page"


@dataclass(slots=True)
class LandingPage:
    """What a landing page and the documents it links to say, before it becomes one resource per API."""

    url: str  # canonical
    document: dict
    base: str  # where the document was fetched from: its relative links resolve against it
    classes: list[str] = field(default_factory=list)
    apis: dict[str, list[str]] = field(default_factory=dict)  # API type -> the classes declaring it
    conformance_unread: str | None = None  # why the APIs come from links and collections, not conformance
    collections: list[dict] = field(default_factory=list)
    processes: list[dict] = field(default_factory=list)
    service: dict = field(default_factory=dict)  # the ``info`` of its OpenAPI definition: contact, keywords
    bodies: list[bytes] = field(default_factory=list)  # every document read, for the content hash


def landing_url(url: str) -> str:
    """The canonical spelling of a landing page URL: normalised, without presentation parameters (``f=``,
    ``lang=``) and without a trailing slash (except the root path)."""
    parts = urlsplit(normalize_url(url) or url)
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k.lower()
                       not in PRESENTATION_KEYS])  # fmt: skip
    return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/") or "/", query, ""))


def landing_by_path(url: str) -> str | None:
    """The landing page a URL of an API lies under, by the shape of its path (``…/collections/x`` ->
    ``…``); None when no path segment is one of an OGC API."""
    parts = urlsplit(url)
    segments = parts.path.split("/")
    for i, segment in enumerate(segments):
        if segment.lower() in API_SEGMENTS:
            return landing_url(urlunsplit((parts.scheme, parts.netloc, "/".join(segments[:i]), "", "")))
    return None


def _rel(link: dict) -> str:
    rel = jsonsafe.text(link, "rel") or ""
    return rel.removeprefix(OGC_REL)


def _href(link: dict, base: str) -> str | None:
    """The absolute http(s) URL of a link, or None."""
    href = jsonsafe.text(link, "href")
    return normalize_url(urljoin(base, href)) if href else None


def _is_json(link: dict) -> bool:
    """Whether a link names a JSON media type (or none): ``application/vnd.oai.openapi+json;version=3.0``."""
    media_type = (jsonsafe.text(link, "type") or "application/json").split(";")[0].strip().lower()
    return media_type in JSON_TYPES


def _link(document: object, base: str, *rels: str, json_only: bool = False) -> str | None:
    """The first link of ``document`` with one of ``rels`` (with or without the OGC prefix), preferring
    JSON over other media types (or only JSON)."""
    found = [link for link in jsonsafe.objects(document, "links") if _rel(link) in rels]
    found = (
        [link for link in found if _is_json(link)] if json_only else sorted(found, key=_is_json, reverse=True)
    )
    return next(filter(None, (_href(link, base) for link in found)), None)


def is_landing_page(document: object, url: str) -> bool:
    """A landing page links to its conformance declaration or its data (OGC API Common), or declares its
    conformance itself (``conformsTo``) at a URL that is no /conformance of an API."""
    if not isinstance(document, dict):
        return False
    if any(_rel(link) in ("conformance", "data") for link in jsonsafe.objects(document, "links")):
        return True
    return "conformsTo" in document and landing_by_path(url) is None


def declared_apis(classes: Iterable[str]) -> dict[str, list[str]]:
    """API type -> the conformance classes that declare it."""
    apis: dict[str, list[str]] = {}
    for uri in classes:
        for api, pattern in API_CLASSES.items():
            if pattern.search(uri):
                apis.setdefault(api, []).append(uri)
    return apis


def api_version(classes: list[str]) -> str | None:
    """The version of an API's standard in its conformance class URIs (``…/ogcapi-edr-1/1.1/…``): the highest
    of part 1 (the core), else of the other parts (``ogcapi-features-4/1.0``)."""
    found = [m for m in map(_VERSION.search, classes) if m]
    core = [m for m in found if m.group(1).endswith("-1")] or found
    versions = {m.group(2) for m in core}
    return max(versions, key=lambda v: tuple(map(int, v.split(".")))) if versions else None


def collection_apis(collection: dict) -> set[str]:
    """The APIs a collection is served by, told by its links (and by ``data_queries`` for EDR)."""
    rels = {_rel(link) for link in jsonsafe.objects(collection, "links")}
    item_type = jsonsafe.text(collection, "itemType")
    items_api = "OGCAPI-RECORDS" if (item_type or "").lower() == "record" else "OGCAPI-FEATURES"
    apis = {items_api} if "items" in rels else set()
    if rels & MAP_RELS:
        apis.add("OGCAPI-MAPS")
    if rels & TILES_RELS:
        apis.add("OGCAPI-TILES")
    if rels & COVERAGE_RELS:
        apis.add("OGCAPI-COVERAGES")
    queries = [
        urlsplit(jsonsafe.text(link, "href") or "").path.rstrip("/").rpartition("/")[2]
        for link in jsonsafe.objects(collection, "links")
        if _rel(link) == "data"
    ]
    if isinstance(collection.get("data_queries"), dict) or EDR_QUERIES.intersection(queries):
        apis.add("OGCAPI-EDR")
    # One naming none of these links is still reached through /items when it states its itemType or is a
    # STAC collection (STAC APIs list their collections so); with neither (a container of collections) it
    # serves no API.
    if not apis and (item_type or "stac_version" in collection):
        apis.add(items_api)
    return apis


def collection_dataset(collection: dict, **extra: Any) -> Dataset | None:
    """An OGC API collection (a STAC collection is one too) as a dataset: id, title, keywords, WGS84 extent,
    and those of ``extra`` that are not empty; None without an id."""
    name = jsonsafe.text(collection, "id")
    if name is None:
        return None
    return Dataset(
        name=name,
        title=jsonsafe.text(collection, "title"),
        bbox=jsonsafe.spatial_extent(collection),
        keywords=jsonsafe.texts(collection, "keywords"),
        extra={key: value for key, value in extra.items() if value},
    )


def process_dataset(process: dict) -> Dataset | None:
    """A process (of /processes) as a dataset: id, title, keywords, version; None without an id."""
    name = jsonsafe.text(process, "id")
    if name is None:
        return None
    version = jsonsafe.text(process, "version")
    return Dataset(
        name=name,
        title=jsonsafe.text(process, "title"),
        keywords=jsonsafe.texts(process, "keywords"),
        extra={"version": version} if version else {},
    )


def resources(page: LandingPage, wanted: Iterable[str]) -> list[Resource]:
    """One resource per API the landing page declares (or its links and collections show, when its
    conformance could not be read) and the run wants, with its datasets."""
    apis = page.apis
    if not apis:
        raise NotOGCAPI(f"{page.url}: the conformance declaration names no OGC API class")
    served: dict[str, list[Dataset]] = {api: [] for api in apis}
    data_apis = served.keys() - {"OGCAPI-PROCESSES"}
    for collection in page.collections:
        dataset = collection_dataset(collection, item_type=jsonsafe.text(collection, "itemType"))
        if dataset is not None:
            # a collection naming no link of any API is the one data API's, when only one is declared
            for api in (
                collection_apis(collection) or (data_apis if len(data_apis) == 1 else set())
            ) & data_apis:
                served[api].append(dataset)
    if "OGCAPI-PROCESSES" in served:
        served["OGCAPI-PROCESSES"] = [d for d in map(process_dataset, page.processes) if d]
    digest = hashlib.sha256(b"\n".join(page.bodies)).hexdigest()
    info, contact = page.service, page.service.get("contact")
    return [
        Resource(
            url=page.url,
            type=api,
            version=api_version(apis[api]),
            title=jsonsafe.text(page.document, "title") or jsonsafe.text(info, "title"),
            abstract=jsonsafe.text(page.document, "description") or jsonsafe.text(info, "description"),
            keywords=jsonsafe.texts(page.document, "keywords") or jsonsafe.texts(info, "x-keywords"),
            provider=jsonsafe.text(contact, "name"),
            datasets=datasets,
            bbox=union_bbox(d.bbox for d in datasets),
            extra={"conformance": sorted(apis[api])}
            | ({"conformance_unread": page.conformance_unread} if page.conformance_unread else {}),
            content_sha256=digest,
        )
        for api, datasets in served.items()
        if api in wanted
    ]


class OGCAPIDetector(Detector):
    name = "ogcapi"
    types = OGCAPI_TYPES

    def accepts(self, response: Response) -> bool:
        head = response.body[:HEAD_BYTES]
        if jsonsafe.looks_like_json(head[:64]):  # whatever the Content-Type says
            return b'"links"' in head or b'"conformsTo"' in head
        return response.content_type in ("text/html", "application/xhtml+xml") and _html_of_api(
            response.final_url
        )

    async def detect(self, response: Response, ctx: DetectContext) -> list[Resource]:
        if not ctx.wants(*OGCAPI_TYPES):
            return []
        url = response.final_url
        try:
            if not 200 <= response.status < 300:
                raise HTTPStatusError(response.status, url=url)
            page = await _landing_page(response, ctx)
            if page is None:
                return []
            await _complete(page, ctx)
            found = resources(page, ctx.types)
        except GeowebError as exc:
            return ctx.miss(self.name, url, exc)
        for resource in found:
            ctx.stats[f"ogcapi/found/{resource.type}"] += 1
        return found


async def _landing_page(response: Response, ctx: DetectContext) -> LandingPage | None:
    """The landing page a response is or leads to, once per run: None when the run has read it already (or
    the response leads nowhere); raises NotOGCAPI when what it leads to is no landing page."""
    url = response.final_url
    document = _document(response, ctx)
    if is_landing_page(document, url):
        landing = landing_url(url)
        return LandingPage(landing, document, url, bodies=[response.body]) if _first(ctx, landing) else None
    candidates = _candidates(document, url)
    if not candidates:
        raise NotOGCAPI("neither a landing page nor a document naming one (no root link, no OGC API path)")
    failures = []
    for landing in candidates:
        if not _first(ctx, landing):
            continue
        if document is not None and landing == landing_url(url):  # its own root: read already
            failures.append(f"{landing} links no conformance or data")
            continue
        try:
            fetched, answer = await _fetch_json(ctx, landing)
        except GeowebError as exc:
            failures.append(f"{landing}: {exc}")
            continue
        if is_landing_page(fetched, landing):
            return LandingPage(landing, fetched, answer.final_url, bodies=[answer.body])
        failures.append(f"{landing} links no conformance or data")
    if failures:
        raise NotOGCAPI(f"no landing page found from it ({'; '.join(failures)})")
    return None


def _first(ctx: DetectContext, landing: str) -> bool:
    return ctx.first_time(f"ogcapi:{landing}")


def _document(response: Response, ctx: DetectContext) -> object:
    """The response's JSON document; None for an HTML page."""
    return _parsed(response, ctx) if jsonsafe.looks_like_json(response.body[:64]) else None


def _parsed(response: Response, ctx: DetectContext) -> object:
    if not response.complete:
        raise MalformedContent(f"{response.final_url}: body cut at {len(response.body)} bytes")
    return jsonsafe.parse_json(response.body, max_bytes=ctx.settings.max_body_bytes, invalid=NotOGCAPI)


def _candidates(document: object, url: str) -> list[str]:
    """Where the landing page of a document (None: an HTML page) that is none may be: its ``root`` link when
    on its own host (STAC APIs may point it at a static catalog), then the path above its API segment."""
    if document is None:  # an HTML page with f=html, at or below the landing page
        return [landing_by_path(url) or landing_url(url)]
    root = _link(document, url, "root")
    found = [landing_url(root)] if root and urlsplit(root).netloc == urlsplit(url).netloc else []
    by_path = landing_by_path(url)
    return [*found, by_path] if by_path and by_path not in found else found


def _html_of_api(url: str) -> bool:
    """An HTML page of an OGC API: asked for with ``f=html``, or under a path of one."""
    return _format(url) == "html" or landing_by_path(url) is not None


def _format(url: str) -> str | None:
    """The ``f=`` parameter of a URL, lower-case."""
    query = parse_qsl(urlsplit(url).query, keep_blank_values=True)
    return next((value.lower() for key, value in query if key.lower() == "f"), None)


async def _fetch_json(ctx: DetectContext, url: str) -> tuple[object, Response]:
    """GET the JSON form of a document of the API: asked for with ``Accept``, then once more with ``f=json``
    from servers that answer HTML whatever the client accepts. Raises a GeowebError saying why it is none."""
    response = await _get(ctx, url)
    if not jsonsafe.looks_like_json(response.body[:64]) and _format(url) is None:
        url = with_query(url, "f=json")
        response = await _get(ctx, url)
    if not jsonsafe.looks_like_json(response.body[:64]):
        raise NotOGCAPI(f"{url} did not answer with JSON ({response.content_type or 'no content type'})")
    return _parsed(response, ctx), response


async def _get(ctx: DetectContext, url: str) -> Response:
    ctx.stats["ogcapi/probe"] += 1
    response = await ctx.fetch(url, headers=ACCEPT_JSON)
    if not 200 <= response.status < 300:
        raise HTTPStatusError(response.status, url=url)
    return response


async def _complete(page: LandingPage, ctx: DetectContext) -> None:
    """Reads the conformance declaration, the collections, the processes and the service description (for
    its provider and keywords) a landing page links to."""
    page.classes = jsonsafe.texts(page.document, "conformsTo")  # some servers declare it in the landing page
    if not page.classes:
        target = _link(page.document, page.base, "conformance") or _below(page.url, "conformance")
        try:
            document, answer = await _fetch_json(ctx, target)
            page.classes = jsonsafe.texts(document, "conformsTo")
            page.bodies.append(answer.body)
            if not page.classes:
                page.conformance_unread = f"its conformance declaration {target} lists no class"
        except GeowebError as exc:
            page.conformance_unread = f"its conformance declaration {target} was not read: {exc}"
    if page.conformance_unread:
        await _apis_from_links(page, ctx)
        return
    apis = page.apis = declared_apis(page.classes)
    if apis.keys() - {"OGCAPI-PROCESSES"} and ctx.wants(*apis.keys() - {"OGCAPI-PROCESSES"}):
        page.collections = await _collections(ctx, page)
    if "OGCAPI-PROCESSES" in apis and ctx.wants("OGCAPI-PROCESSES"):
        page.processes = await _processes(ctx, page)
    if apis:
        await _service_description(ctx, page)


async def _apis_from_links(page: LandingPage, ctx: DetectContext) -> None:
    """The APIs of a landing page without a readable conformance declaration: those its collections'
    links name, and Processes when it links processes it lists. Raises NotOGCAPI when none is shown."""
    ctx.stats["ogcapi/conformance_unread"] += 1
    log.info("ogcapi: %s: %s; its APIs are read from its links", page.url, page.conformance_unread)
    page.collections = await _collections(ctx, page)
    apis: dict[str, list[str]] = {api: [] for c in page.collections for api in sorted(collection_apis(c))}
    if _link(page.document, page.base, "processes"):
        page.processes = await _processes(ctx, page)
        if page.processes:
            apis["OGCAPI-PROCESSES"] = []
    if not apis:
        raise NotOGCAPI(
            f"{page.conformance_unread}, and neither its links nor its collections show an OGC API"
        )
    page.apis = apis
    await _service_description(ctx, page)


async def _collections(ctx: DetectContext, page: LandingPage) -> list[dict]:
    target = _link(page.document, page.base, "data") or _below(page.url, "collections")
    return await _listing(ctx, page, target, "collections", ctx.settings.ogcapi_max_datasets)


async def _processes(ctx: DetectContext, page: LandingPage) -> list[dict]:
    target = _link(page.document, page.base, "processes") or _below(page.url, "processes")
    return await _listing(ctx, page, target, "processes", ctx.settings.ogcapi_max_datasets)


async def _service_description(ctx: DetectContext, page: LandingPage) -> None:
    """The ``info`` of the API's OpenAPI definition, when it links one: its contact and keywords."""
    target = _link(page.document, page.base, "service-desc", json_only=True)
    answer = await _optional(ctx, page, target, "service description") if target else None
    info = answer[0].get("info") if answer and isinstance(answer[0], dict) else None
    page.service = info if isinstance(info, dict) else {}


async def _optional(
    ctx: DetectContext, page: LandingPage, url: str, what: str
) -> tuple[object, Response] | None:
    """A document that describes an API already proved: one that cannot be read is logged and left out."""
    try:
        return await _fetch_json(ctx, url)
    except GeowebError as exc:
        ctx.stats[f"ogcapi/unread/{exc.reason}"] += 1
        log.info("ogcapi: %s of %s not read (%s): %s", what, page.url, exc.reason, exc)
        return None


async def _listing(ctx: DetectContext, page: LandingPage, url: str, member: str, cap: int) -> list[dict]:
    """The objects of a list document (/collections, /processes), at most ``cap``; a list that cannot be
    read leaves the API without datasets (its conformance still declares it)."""
    answer = await _optional(ctx, page, url, member)
    if answer is None:
        return []
    document, response = answer
    page.bodies.append(response.body)
    items = jsonsafe.objects(document, member)
    if len(items) > cap:
        ctx.stats["ogcapi/capped"] += 1
        log.info("ogcapi: %s lists %d %s; the first %d are kept", url, len(items), member, cap)
    if _link(document, response.final_url, "next"):
        log.info("ogcapi: %s has a next page of %s; it is not followed", url, member)
    return items[:cap]


def _below(landing: str, segment: str) -> str:
    """The conventional URL of a resource under a landing page (/conformance, /collections, /processes)."""
    parts = urlsplit(landing)
    return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/") + "/" + segment, parts.query, ""))
