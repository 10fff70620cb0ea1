"""STAC API item search (https://api.stacspec.org/v1.0.0/item-search): today's open standard for scene
archives. ``GET {url}/search`` with ``bbox``, ``datetime`` (``since/..``), ``collections`` and ``limit``;
the answer is a GeoJSON FeatureCollection of Items, paged by its ``next`` link. Where an Item keeps each
scene field is ``stac.json``."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar
from urllib.parse import urljoin

from geoweb.connectors.api import malformed
from geoweb.connectors.archive.base import ArchiveAdapter, Request, utc_iso
from geoweb.connectors.base import ConfigError, ConnectorError
from geoweb.models import BBox


class STACArchive(ArchiveAdapter):
    """Scenes of a STAC API. Settings beyond the archive ones: ``collections`` (a list, or names separated by
    commas; default every collection)."""

    name = "stac"
    url = None  # every STAC API has its own address
    options: ClassVar[frozenset[str]] = ArchiveAdapter.options | {"collections"}
    max_page_size = 10_000  # the item-search spec's largest limit

    def __init__(self, config, **kwargs: Any):
        super().__init__(config, **kwargs)
        collections = self.config.get("collections") or []
        if isinstance(collections, str):
            collections = [c.strip() for c in collections.split(",") if c.strip()]
        if not isinstance(collections, list | tuple) or not all(isinstance(c, str) for c in collections):
            raise ConfigError("stac: setting collections must be a list of collection ids")
        self.collections = list(collections)

    def first_request(self, since: datetime | None, bbox: BBox | None) -> Request:
        params: dict[str, Any] = {"limit": self.page_size}
        if since is not None:
            params["datetime"] = f"{utc_iso(since)}/.."
        if bbox is not None:
            params["bbox"] = ",".join(f"{v:g}" for v in bbox)
        if self.collections:
            params["collections"] = ",".join(self.collections)
        return self.base_url + "/search", params

    def read_page(self, answer: Any, what: str, request: Request) -> tuple[list[Any], Request | None]:
        if not isinstance(answer, dict) or answer.get("type") != "FeatureCollection":
            raise malformed(self.source, what, "not a GeoJSON FeatureCollection")
        features = answer.get("features")
        if not isinstance(features, list):
            raise malformed(self.source, what, "'features' is not a list")
        links = answer.get("links") or []
        if not isinstance(links, list):
            raise malformed(self.source, what, "'links' is not a list")
        following = next(
            (link for link in links if isinstance(link, dict) and link.get("rel") == "next"), None
        )
        if following is None:
            return features, None
        href = following.get("href")
        href = urljoin(request[0], href) if isinstance(href, str) else None
        if href is None or not href.lower().startswith(("http://", "https://")):
            raise malformed(self.source, what, f"the next link has no http(s) href: {href!r:.200}")
        if str(following.get("method", "GET")).upper() != "GET":
            raise ConnectorError(
                f"{self.source}: {what}: the next page is a {following['method']} request; only GET paging is read"
            )
        return features, (href, {})
