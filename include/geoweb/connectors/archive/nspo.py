"""The NSPO (TASA) satellite-image archive: FORMOSAT scenes from the data-service API behind the archive image
query system. That API is undocumented, so everything about it is configuration (``nspo.json``): the path and
query parameters, how pages are counted, where the items and the status are, and the field mapping."""

from __future__ import annotations

from datetime import datetime
from string import Formatter
from typing import Any

from geoweb.connectors.api import malformed
from geoweb.connectors.archive.base import ArchiveAdapter, Request, lookup
from geoweb.connectors.base import ConfigError, ConnectorError
from geoweb.models import BBox

PLACEHOLDERS = frozenset({"since", "bbox", "page_size"})


class NSPOArchive(ArchiveAdapter):
    """Scenes from a JSON scene-query API described by the mapping's ``request``, ``paging`` and ``response``.

    ``request.params`` values may hold ``{since}`` (the watermark in the mapping's time format), ``{bbox}``
    (``west,south,east,north``) and ``{page_size}``; a parameter whose placeholder has no value is left out.
    ``paging.by`` is ``page`` (``param`` counts pages from ``first``) or ``offset`` (``param`` counts items).
    ``response.items`` and ``response.total`` are paths; ``response.status`` checks a code the API puts in a
    200 answer (``path``, the ``ok`` value, the ``message`` path)."""

    name = "nspo"
    url = None  # no public address: the archive's URL is a setting

    def __init__(self, config, **kwargs: Any):
        super().__init__(config, **kwargs)
        request, paging, response = (self.spec.get(k) for k in ("request", "paging", "response"))
        if not all(isinstance(part, dict) for part in (request, paging, response)):
            raise ConfigError("nspo mapping: 'request', 'paging' and 'response' must be objects")
        params = request.get("params") or {}
        used = {name for value in params.values() for _, name, _, _ in Formatter().parse(str(value)) if name}
        if not isinstance(params, dict) or used - PLACEHOLDERS:
            raise ConfigError(
                f"nspo mapping: request params may use only {{{'}, {'.join(sorted(PLACEHOLDERS))}}}"
            )
        if paging.get("by") not in ("page", "offset") or not paging.get("param") or not response.get("items"):
            raise ConfigError(
                "nspo mapping: paging needs 'by' (page or offset) and 'param'; response needs 'items'"
            )
        self.path = str(request.get("path") or "")
        self.params = params
        self.paging = paging
        self.response = response

    def first_request(self, since: datetime | None, bbox: BBox | None) -> Request:
        values = {
            "since": None if since is None else self.mapping.format_time(since),
            "bbox": None if bbox is None else ",".join(f"{v:g}" for v in bbox),
            "page_size": self.page_size,
        }
        params = {}
        for key, template in self.params.items():
            names = [name for _, name, _, _ in Formatter().parse(str(template)) if name]
            if all(values[name] is not None for name in names):
                params[key] = str(template).format_map(values)
        params[self.paging["param"]] = self.first
        return self.base_url + self.path, params

    def read_page(self, answer: Any, what: str, request: Request) -> tuple[list[Any], Request | None]:
        if not isinstance(answer, dict):
            raise malformed(self.source, what, "the answer is not a JSON object")
        status = self.response.get("status")
        if status:
            code = lookup(answer, status["path"])
            if code != status.get("ok"):
                message = lookup(answer, status.get("message", "message"))
                raise ConnectorError(
                    f"{self.source}: {what}: the archive answered code {code!r}: {message!r:.300}"
                )
        items = lookup(answer, self.response["items"])
        if items is None:
            raise malformed(self.source, what, f"no {self.response['items']!r}")
        if not isinstance(items, list):
            raise malformed(self.source, what, f"{self.response['items']!r} is not a list")
        url, params = request
        param, by_page = self.paging["param"], self.paging["by"] == "page"
        position = params[param]
        read = (position - self.first) * self.page_size if by_page else position - self.first
        total = lookup(answer, self.response["total"]) if self.response.get("total") else None
        if len(items) < self.page_size or (isinstance(total, int) and read + len(items) >= total):
            return items, None
        return items, (url, params | {param: position + (1 if by_page else len(items))})

    @property
    def first(self) -> int:
        """The paging parameter's first value: page 1, or offset 0, unless the mapping says otherwise."""
        return int(self.paging.get("first", 1 if self.paging["by"] == "page" else 0))
