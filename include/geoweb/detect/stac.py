"""STAC: static catalogs and collections ("STAC") and STAC APIs ("STAC-API"), confirmed by content.

A STAC document is JSON with ``stac_version`` and a ``links`` array; a static catalog is reported once, at
its root catalog. A child collection, a sub-catalog or an item found first leads to the root, probed once
per run: a URL shaped like an API's ``{landing}/collections/{id}`` to that landing page first (APIs serving
a static catalog may keep its ``rel=root``, which points at the static files), then its ``rel=root``.
An item leads to its ``rel=collection`` too, when that collection is a root. A lone item (no root, no
collection, no API-shaped URL) is a STAC resource by itself, its one dataset the item; an item whose root
fails is nothing (docs/stac.md). A root whose ``conformsTo`` names a STAC API class, or that links a
``rel=search`` endpoint, is an API; its datasets come from ``/collections`` (bounded paging of
``rel=next``). A static root's datasets are the collections found by walking ``rel=child`` links to a
bounded depth and count. Items are never enumerated.
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

from geoweb.detect.base import DetectContext, Detector
from geoweb.detect.ogc.common import unique_by_name
from geoweb.detect.ogcapi import collection_dataset  # a STAC collection is an OGC API collection
from geoweb.errors import GeowebError, HTTPStatusError, MalformedContent
from geoweb.fetch.response import Response
from geoweb.jsonsafe import (
    links,
    lonlat_bbox,
    looks_like_json,
    objects,
    parse_json,
    response_object,
    text,
    texts,
)
from geoweb.links.normalize import normalize_url
from geoweb.models import STAC_TYPES, Dataset, Resource, sha256, union_bbox

log = logging.getLogger(__name__)

STAC_MARKER = b'"stac_version"'
# "Collections": an API's /collections, whose members carry the stac_version
NODE_TYPES = ("Catalog", "Collection", "Feature", "FeatureCollection", "Collections")
API_CLASS_PREFIX = "https://api.stacspec.org/"
# documents below an API's landing page: {landing}/collections[/{id}[/items[/{item}]]], /search, /conformance
API_COLLECTION_PATH = re.compile(
    r"(.*)/(?:collections(?:/[^/]+(?:/items(?:/[^/]+)?)?)?|search|conformance)/?"
)
PRESENTATION_PARAMS = frozenset({"f"})  # ?f=json and ?f=html name one resource
JSON_ACCEPT = {"Accept": "application/json"}


class NotSTAC(MalformedContent):
    """Raised when a JSON document is not a STAC catalog, collection, item or API landing page."""

    reason = "not_stac"
    user_msg = "The document is not a STAC catalog, collection or API"


class NoSTACRoot(NotSTAC):
    """Raised when a child collection, item or search result leads to no root catalog or API."""

    reason = "no_root"
    user_msg = "The STAC document leads to no root catalog"


@dataclass(frozen=True, slots=True)
class Node:
    """One parsed STAC document and where it came from."""

    url: str  # canonical URL of the response (documents' self links lie)
    kind: str  # one of NODE_TYPES
    document: dict
    body: bytes

    def link_urls(self, *rels: str) -> list[str]:
        """Absolute http(s) URLs of the links with one of ``rels``, resolved against the document's URL."""
        found = []
        for link in links(self.document, *rels):
            url = normalize_url(urljoin(self.url, link["href"].strip()))
            if url and url not in found:
                found.append(url)
        return found


def canonical_url(url: str) -> str:
    """One spelling per resource: normalised, no fragment, no presentation parameter (``f=``), no trailing
    slash except on the bare host."""
    parts = urlsplit(normalize_url(url) or url)
    query = urlencode(
        [(k, v) for k, v in parse_qsl(parts.query, True) if k.lower() not in PRESENTATION_PARAMS]
    )
    path = parts.path.rstrip("/") or "/"
    return urlunsplit((parts.scheme, parts.netloc, path, query, ""))


def read_node(response: Response, max_bytes: int) -> Node:
    """The STAC document of a response; raises a GeowebError saying why it is none."""
    document = response_object(response, max_bytes=max_bytes, invalid=NotSTAC)
    kind = document.get("type")
    if text(document, "stac_version") is None:
        if not any(text(c, "stac_version") for c in objects(document, "collections")):
            raise NotSTAC("no stac_version")
        kind = "Collections"
    elif kind is None:  # STAC before 1.0 typed only items; a collection is a catalog with an extent
        kind = "Collection" if isinstance(document.get("extent"), dict) else "Catalog"
    if kind not in NODE_TYPES:
        raise NotSTAC(f"type {str(kind)[:40]!r} is no STAC type")
    if kind not in ("FeatureCollection", "Collections") and text(document, "id") is None:
        raise NotSTAC(f"a STAC {kind} without a string id")
    if not isinstance(document.get("links"), list):
        raise NotSTAC(f"a STAC {kind} without a links array")
    return Node(canonical_url(response.final_url), kind, document, response.body)


def is_root(node: Node) -> bool:
    """A catalog or collection whose rel=root is itself, or that has no rel=root link (one that cannot be
    followed, such as a file: URL, is not taken for itself)."""
    if node.kind not in ("Catalog", "Collection"):
        return False
    if not any(link.get("rel") == "root" for link in objects(node.document, "links")):
        return True
    roots = node.link_urls("root")
    return bool(roots) and canonical_url(roots[0]) == node.url


def is_api(node: Node) -> bool:
    return any(c.startswith(API_CLASS_PREFIX) for c in texts(node.document, "conformsTo")) or bool(
        node.link_urls("search")
    )


def root_candidates(node: Node) -> list[str]:
    """Where the root of a non-root node may be: for a URL shaped like an API's collection or item, the
    landing page above ``/collections``; then its rel=root; for an item, then its rel=collection."""
    parts = urlsplit(node.url)
    api_path = API_COLLECTION_PATH.fullmatch(parts.path)
    candidates = [urlunsplit((parts.scheme, parts.netloc, api_path[1] or "/", "", ""))] if api_path else []
    candidates += node.link_urls("root")[:1]
    if node.kind == "Feature":
        candidates += node.link_urls("collection")[:1]
    return _new(candidates, {node.url})


def is_lone_item(node: Node) -> bool:
    """An item with no link to a root or a collection (not even one that cannot be followed), at a URL no
    API would serve it from."""
    return (
        node.kind == "Feature"
        and not any(link.get("rel") in ("root", "collection") for link in objects(node.document, "links"))
        and API_COLLECTION_PATH.fullmatch(urlsplit(node.url).path) is None
    )


def _new(urls: list[str], seen: set[str]) -> list[str]:
    """The URLs whose canonical spelling is not in ``seen`` yet, each spelling once; ``seen`` grows."""
    fresh = []
    for url in urls:
        if canonical_url(url) not in seen:
            seen.add(canonical_url(url))
            fresh.append(url)
    return fresh


class STACDetector(Detector):
    name = "stac"
    types = STAC_TYPES

    def accepts(self, response: Response) -> bool:
        return looks_like_json(response.body[:64]) and STAC_MARKER in response.body

    async def detect(self, response: Response, ctx: DetectContext) -> list[Resource]:
        if not ctx.wants(*STAC_TYPES):
            return []
        try:
            node = read_node(response, ctx.settings.max_body_bytes)
        except GeowebError as exc:
            return ctx.miss(self.name, response.final_url, exc)
        if is_root(node):
            if not ctx.first_time("stac-root:" + node.url):  # a deep link led to it before in this run
                return []
        elif is_lone_item(node):
            return self._lone_item(node, ctx)
        else:
            try:
                node = await self._probe_root(node, ctx)
            except GeowebError as exc:
                return ctx.miss(self.name, response.final_url, exc)
            if node is None:  # its root was read before in this run
                return []
        kind = "STAC-API" if is_api(node) else "STAC"
        if not ctx.wants(kind):
            return []
        datasets = await (api_datasets(node, ctx) if kind == "STAC-API" else static_datasets(node, ctx))
        ctx.stats[f"stac/found/{kind}"] += 1
        return [describe(node, kind, datasets)]

    def _lone_item(self, item: Node, ctx: DetectContext) -> list[Resource]:
        """An item that names no root, no collection and sits at no API path: the resource is the item."""
        if not ctx.wants("STAC"):
            return []
        ctx.stats["stac/found/STAC"] += 1
        ctx.stats["stac/lone_items"] += 1
        return [describe(item, "STAC", [item_dataset(item.document)])]

    async def _probe_root(self, node: Node, ctx: DetectContext) -> Node | None:
        """The root a child, item or search result leads to, each candidate fetched once per run; None when
        every candidate was probed before. Raises NoSTACRoot when none is a root."""
        candidates = root_candidates(node)
        failures = []
        for candidate in candidates:
            if not ctx.first_time("stac-root:" + canonical_url(candidate)):
                continue
            ctx.stats["stac/root_probe"] += 1
            try:
                root = read_node(await ctx.fetch(candidate, headers=JSON_ACCEPT), ctx.settings.max_body_bytes)
                if not is_root(root):
                    raise NotSTAC("its rel=root names yet another root")
                return root
            except GeowebError as exc:
                failures.append(f"{candidate}: {exc.reason}: {exc}")
        if candidates and not failures:
            return None
        raise NoSTACRoot(f"a {node.kind} whose root is " + ("; ".join(failures) or "not named (no rel=root)"))


def describe(node: Node, kind: str, datasets: list[Dataset]) -> Resource:
    document = node.document
    # an item keeps its title, description, keywords and providers in its properties
    fields = document.get("properties") if node.kind == "Feature" else document
    providers = objects(fields, "providers")
    extra: dict = {"stac_type": "Item" if node.kind == "Feature" else node.kind}
    if kind == "STAC-API":
        extra["conformance"] = sorted(
            c for c in texts(document, "conformsTo") if c.startswith(API_CLASS_PREFIX)
        )
    return Resource(
        url=node.url,
        type=kind,
        version=text(document, "stac_version"),
        title=text(fields, "title") or text(document, "id"),
        abstract=text(fields, "description"),
        keywords=texts(fields, "keywords"),
        provider=text(providers[0], "name") if providers else None,
        datasets=datasets,
        bbox=union_bbox(d.bbox for d in datasets),
        extra=extra,
        content_sha256=sha256(node.body),
    )


def item_dataset(item: dict) -> Dataset:
    """A lone item as a dataset: its id, title, WGS84 ``bbox`` and the media types of its assets."""
    properties = item.get("properties")
    assets = item.get("assets") if isinstance(item.get("assets"), dict) else {}
    media_types = sorted({t for asset in assets.values() if (t := text(asset, "type"))})
    extra = {"assets": len(assets), "media_types": media_types, "collection": text(item, "collection")}
    return Dataset(
        name=text(item, "id"),
        title=text(properties, "title"),
        bbox=lonlat_bbox(item.get("bbox")),
        keywords=texts(properties, "keywords"),
        extra={key: value for key, value in extra.items() if value},
    )


async def _fetch_node(url: str, ctx: DetectContext) -> Node | None:
    """A linked STAC document, or None (logged and counted) when it is none."""
    try:
        return read_node(await ctx.fetch(url, headers=JSON_ACCEPT), ctx.settings.max_body_bytes)
    except GeowebError as exc:
        ctx.stats[f"stac/child_miss/{exc.reason}"] += 1
        log.info("stac: skipped %s (%s): %s", url, exc.reason, exc)
        return None


async def static_datasets(root: Node, ctx: DetectContext) -> list[Dataset]:
    """The collections of a static catalog: the root itself if it is one, then ``rel=child`` breadth-first
    to ``stac_max_depth`` hops, fetching at most ``stac_max_children`` documents."""
    settings = ctx.settings
    datasets: list[Dataset] = []
    seen = {root.url}
    level, depth, fetched = [root], 0, 0
    while level:
        for node in level:
            if node.kind == "Collection":
                dataset = collection_dataset(node.document, items=len(node.link_urls("item")))
                if dataset is not None:
                    datasets.append(dataset)
        if depth == settings.stac_max_depth:
            break
        children = _new([u for node in level for u in node.link_urls("child")], seen)
        if fetched + len(children) > settings.stac_max_children:
            log.warning("stac: %s: walk cut at %d documents", root.url, settings.stac_max_children)
            ctx.stats["stac/children_cut"] += 1
            children = children[: settings.stac_max_children - fetched]
        fetched += len(children)
        fetched_nodes = await asyncio.gather(*(_fetch_node(u, ctx) for u in children))
        level = [n for n in fetched_nodes if n is not None and n.kind in ("Catalog", "Collection")]
        depth += 1
    return unique_by_name(datasets)


async def api_datasets(landing: Node, ctx: DetectContext) -> list[Dataset]:
    """The collections of a STAC API: ``/collections`` (its rel=data link), following rel=next at most
    ``stac_max_pages`` times; a failing page ends the list, logged."""
    data = landing.link_urls("data")
    url: str | None = data[0] if data else urljoin(landing.url.rstrip("/") + "/", "collections")
    datasets: list[Dataset] = []
    seen: set[str] = set()
    for _ in range(ctx.settings.stac_max_pages):
        if url is None or url in seen:
            return unique_by_name(datasets)
        seen.add(url)
        try:
            response = await ctx.fetch(url, headers=JSON_ACCEPT)
            if not 200 <= response.status < 300:
                raise HTTPStatusError(response.status, url=url)
            if not response.complete:
                raise MalformedContent("collections page cut at the size cap")
            page = parse_json(response.body, max_bytes=ctx.settings.max_body_bytes, invalid=NotSTAC)
        except GeowebError as exc:
            ctx.stats[f"stac/collections_miss/{exc.reason}"] += 1
            log.info("stac: %s: collections page %s failed (%s): %s", landing.url, url, exc.reason, exc)
            return unique_by_name(datasets)
        datasets += filter(None, map(collection_dataset, objects(page, "collections")))
        following = [link for link in links(page, "next") if str(link.get("method", "GET")).upper() == "GET"]
        url = normalize_url(urljoin(url, following[0]["href"].strip())) if following else None
    if url is not None and url not in seen:
        log.warning("stac: %s: collections cut at %d pages", landing.url, ctx.settings.stac_max_pages)
        ctx.stats["stac/pages_cut"] += 1
    return unique_by_name(datasets)
