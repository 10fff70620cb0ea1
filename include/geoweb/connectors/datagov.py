"""data.gov's Catalog API (v4), which replaced its CKAN API in 2026: DCAT-US 3 datasets by keyword.

``GET {url}/search?q=Q&per_page=N&spatial_filter=geospatial[&after=CURSOR]`` with the key in ``X-Api-Key``
(the api.gsa.gov proxy; ``https://catalog.data.gov`` serves the same API without a key). Paging is by
cursor: each answer's ``after`` asks for the next page, and an answer without one is the last (a short page
is not: the API returns fewer than ``per_page`` while more follow). Each result's ``spatial_shape`` (GeoJSON)
is the footprint; its ``dcat.distribution[]`` items (``downloadURL``/``accessURL``, ``format``,
``mediaType``) are the links. Settings: key, url, page_size.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from geoweb.connectors.api import DEFAULT_PAGES, http_url, malformed, said
from geoweb.connectors.candidates import Portal
from geoweb.models import OnlineResource, Record
from geoweb.values import stripped

log = logging.getLogger("geoweb.connectors")

DATASET_PAGE = "https://catalog.data.gov/dataset/{slug}"


class DataGov(Portal):
    name = "datagov"
    url = "https://api.gsa.gov/technology/datagov/v4"
    key_header = "X-Api-Key"
    page_size = 50

    def records(
        self, *, query: str = "", pages: int = DEFAULT_PAGES, spatial: bool = True
    ) -> Iterator[Record]:
        """The datasets matching ``query`` over at most ``pages`` pages; only those with a footprint when
        ``spatial``."""
        params: dict[str, Any] = {"per_page": self.page_size}
        if query:
            params["q"] = query
        if spatial:
            params["spatial_filter"] = "geospatial"
        cursors: set[str] = set()
        for page in range(1, pages + 1):
            what = f"{query!r} page {page}"
            answer = self.client.get(f"{self.base_url}/search", params, what)
            results, after = _page(answer, self.source, what)
            for position, result in enumerate(results, 1):
                record = self._record(result, query)
                if record is None:
                    log.warning(
                        "%s: %s: result %d skipped: no identifier in %.200r",
                        self.source,
                        what,
                        position,
                        result,
                    )
                else:
                    yield record
            if not results or not after:
                return
            if after in cursors:
                raise malformed(self.source, what, "the after cursor repeats an earlier one")
            cursors.add(after)
            params["after"] = after

    def _record(self, result: Any, query: str) -> Record | None:
        if not isinstance(result, dict):
            return None
        dcat = result.get("dcat") if isinstance(result.get("dcat"), dict) else {}
        identifier = result.get("identifier") or dcat.get("identifier") or result.get("slug")
        if not isinstance(identifier, str) or not identifier:
            return None
        slug = result.get("slug") if isinstance(result.get("slug"), str) else None
        organization = result.get("organization") if isinstance(result.get("organization"), dict) else {}
        return self.dataset_record(
            identifier=identifier,
            title=stripped(result.get("title") or dcat.get("title")),
            abstract=stripped(result.get("description") or dcat.get("description")),
            keywords=[k for k in result.get("keyword") or dcat.get("keyword") or [] if isinstance(k, str)],
            spatial=result.get("spatial_shape") or dcat.get("spatial"),
            modified=dcat.get("modified") or result.get("last_harvested_date"),
            links=_links(dcat.get("distribution")),
            keyword=query or None,
            extra={
                "slug": slug,
                "organization": organization.get("name"),
                "publisher": result.get("publisher"),
                "landing_page": DATASET_PAGE.format(slug=slug) if slug else None,
            },
        )


def _page(answer: Any, source: str, what: str) -> tuple[list[Any], str | None]:
    """The results and the next cursor of an answer: ``{"results": [...], "after": "..." | null, ...}``."""
    if not isinstance(answer, dict) or not isinstance(answer.get("results"), list):
        raise malformed(source, what, "no results list")
    after = answer.get("after")
    if after is not None and not isinstance(after, str):
        raise malformed(source, what, "after is not a string")
    return answer["results"], after


def _links(distributions: Any) -> list[OnlineResource]:
    """A DCAT distribution's download and access URLs, each with its format and media type."""
    links = []
    for item in distributions if isinstance(distributions, list) else []:
        if not isinstance(item, dict):
            continue
        protocol = said(item.get("format"), item.get("mediaType"))
        for key in ("downloadURL", "accessURL"):
            url = http_url(item.get(key))
            if url:
                links.append(
                    OnlineResource(
                        url, protocol if isinstance(protocol, str) else None, stripped(item.get("title"))
                    )
                )
    return links
