"""Any CKAN portal, through its Action API: datasets by keyword, for the many national portals on CKAN.

``GET {url}/api/3/action/package_search?q=Q&rows=N&start=S``; the answer is
``{"success": true, "result": {"count", "results": [package...]}}`` (``success: false`` with an ``error``
object otherwise). Paging by ``start`` until ``count`` datasets are read. Each package's ``resources[]``
(``url``, ``format``, ``mimetype``) are the links; its footprint is the ``spatial`` extra (GeoJSON, as
ckanext-spatial stores it) or a ``spatial`` field. Settings: url (the portal), key (an API token, for
private datasets), page_size (rows, at most 1000).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from geoweb.connectors.api import DEFAULT_PAGES, error_text, http_url, malformed, said
from geoweb.connectors.base import ConnectorError
from geoweb.connectors.candidates import Portal
from geoweb.models import OnlineResource, Record
from geoweb.values import stripped

log = logging.getLogger("geoweb.connectors")


class CKAN(Portal):
    name = "ckan"
    required = ("url",)
    key_header = "Authorization"
    page_size = 100
    max_page_size = 1000  # CKAN's default ckan.search.rows_max

    @property
    def source(self) -> str:
        return f"ckan:{self.base_url}"

    def records(self, *, query: str = "", pages: int = DEFAULT_PAGES) -> Iterator[Record]:
        """The datasets matching ``query`` (all when empty) over at most ``pages`` pages."""
        params: dict[str, Any] = {"rows": self.page_size, "start": 0}
        if query:
            params["q"] = query
        for page in range(1, pages + 1):
            what = f"{query!r} page {page}"
            answer = self.client.get(f"{self.base_url}/api/3/action/package_search", params, what)
            count, packages = self._page(answer, what)
            for position, package in enumerate(packages, 1):
                record = self._record(package, query)
                if record is None:
                    log.warning(
                        "%s: %s: dataset %d skipped: no id in %.200r", self.source, what, position, package
                    )
                else:
                    yield record
            params["start"] += len(packages)
            if not packages or params["start"] >= count:
                return

    def _page(self, answer: Any, what: str) -> tuple[int, list[Any]]:
        if isinstance(answer, dict) and answer.get("success") is False:
            raise ConnectorError(f"{self.source}: {what}: {error_text(answer)}")
        result = answer.get("result") if isinstance(answer, dict) else None
        if not isinstance(result, dict):
            raise malformed(self.source, what, "no result object")
        count, packages = result.get("count"), result.get("results")
        if isinstance(count, bool) or not isinstance(count, int) or not isinstance(packages, list):
            raise malformed(self.source, what, "result.count is not a number or result.results not a list")
        return count, packages

    def _record(self, package: Any, query: str) -> Record | None:
        if not isinstance(package, dict):
            return None
        identifier = package.get("id") or package.get("name")
        if not isinstance(identifier, str) or not identifier:
            return None
        name = stripped(package.get("name"))
        organization = package.get("organization") if isinstance(package.get("organization"), dict) else {}
        return self.dataset_record(
            identifier=identifier,
            title=stripped(package.get("title")),
            abstract=stripped(package.get("notes")),
            keywords=[
                t["name"]
                for t in _list(package.get("tags"))
                if isinstance(t, dict) and isinstance(t.get("name"), str)
            ],
            spatial=_spatial(package),
            modified=package.get("metadata_modified"),
            links=[link for r in _list(package.get("resources")) if (link := _link(r))],
            keyword=query or None,
            extra={
                "name": name,
                "organization": organization.get("title") or organization.get("name"),
                "landing_page": f"{self.base_url}/dataset/{name}" if name else None,
            },
        )


def _spatial(package: dict[str, Any]) -> Any:
    for extra in _list(package.get("extras")):
        if isinstance(extra, dict) and extra.get("key") == "spatial":
            return extra.get("value")
    return package.get("spatial")


def _link(resource: Any) -> OnlineResource | None:
    if not isinstance(resource, dict) or http_url(resource.get("url")) is None:
        return None
    protocol = said(resource.get("format"), resource.get("mimetype"))
    return OnlineResource(resource["url"], protocol, stripped(resource.get("name")))


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
