"""A CKAN portal's Action API (``GET /api/3/action/package_search``), as CKAN 2.10 serves it.

An answer is ``{"help", "success": true, "result": {"count", "facets", "results": [package...], "sort",
"search_facets"}}``; a refusal is ``{"help", "success": false, "error": {"__type", "message" | field
errors}}`` with its HTTP status (409 for validation errors, 403 for authorization). ``rows`` is at most
1000 (``ckan.search.rows_max``); ``start`` skips datasets.
"""

from __future__ import annotations

import uuid

from aiohttp import web

from tests.standins.server import Standin, truncated_json

ROWS_MAX = 1000


def package(n: int, resources: list[dict], spatial: str | None = None, *, title: str | None = None) -> dict:
    """A dataset as CKAN returns it; ``resources`` give url, format, mimetype, name; ``spatial`` is the
    ckanext-spatial extra (GeoJSON text)."""
    package_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"geoweb-ckan-{n}"))
    name = f"land-use-{n}"
    organization = {
        "id": str(uuid.uuid5(uuid.NAMESPACE_URL, "geoweb-ckan-org")),
        "name": "environment-agency",
        "title": "Environment Agency",
        "type": "organization",
        "description": "",
        "image_url": "",
        "created": "2020-01-01T00:00:00.000000",
        "is_organization": True,
        "approval_status": "approved",
        "state": "active",
    }
    extras = [{"key": "spatial", "value": spatial}] if spatial is not None else []
    return {
        "author": None,
        "author_email": None,
        "creator_user_id": str(uuid.uuid5(uuid.NAMESPACE_URL, "user")),
        "id": package_id,
        "isopen": True,
        "license_id": "cc-by",
        "license_title": "Creative Commons Attribution",
        "license_url": "http://www.opendefinition.org/licenses/cc-by",
        "maintainer": None,
        "maintainer_email": None,
        "metadata_created": "2024-03-01T09:00:00.000000",
        "metadata_modified": f"2025-04-{1 + n % 28:02d}T10:30:00.123456",
        "name": name,
        "notes": f"Land use map {n}: services and downloads.",
        "num_resources": len(resources),
        "num_tags": 2,
        "organization": organization,
        "owner_org": organization["id"],
        "private": False,
        "state": "active",
        "title": title or f"Land use {n}",
        "type": "dataset",
        "url": "",
        "version": None,
        "extras": extras,
        "groups": [],
        "relationships_as_object": [],
        "relationships_as_subject": [],
        "tags": [
            {
                "display_name": t,
                "id": str(uuid.uuid5(uuid.NAMESPACE_URL, t)),
                "name": t,
                "state": "active",
                "vocabulary_id": None,
            }
            for t in ("land use", "planning")
        ],
        "resources": [_resource(package_id, i, r) for i, r in enumerate(resources)],
    }


def _resource(package_id: str, position: int, given: dict) -> dict:
    return {
        "cache_last_updated": None,
        "cache_url": None,
        "created": "2024-03-01T09:00:00.000000",
        "datastore_active": False,
        "description": "",
        "format": "",
        "hash": "",
        "id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{package_id}/{position}")),
        "last_modified": None,
        "metadata_modified": "2024-03-01T09:00:00.000000",
        "mimetype": None,
        "mimetype_inner": None,
        "name": f"resource {position}",
        "package_id": package_id,
        "position": position,
        "resource_type": None,
        "size": None,
        "state": "active",
        "url_type": None,
        **given,
    }


class CKANStandin(Standin):
    """Serves ``packages`` (in order). Faults: quota (403 Authorization Error), server (500, CKAN's HTML
    page), malformed."""

    path = "/api/3/action/package_search"

    def __init__(self, packages: list[dict]) -> None:
        super().__init__()
        self.packages = packages

    def config(self, **settings: str) -> dict[str, str]:
        return {"url": self.url, **settings}

    def page_of(self, request: web.Request) -> int:
        rows, start = request.query.get("rows", "10"), request.query.get("start", "0")
        return int(start) // int(rows) + 1 if rows.isdigit() and start.isdigit() and int(rows) else 0

    def fault(self, kind: str, request: web.Request) -> web.StreamResponse:
        if kind == "quota":
            return self._refusal(
                403, {"__type": "Authorization Error", "message": "Access denied: too many requests"}
            )
        if kind == "server":
            body = "<html><head><title>500 Internal Server Error</title></head><body><h1>Internal Server Error</h1></body></html>"
            return web.Response(status=500, text=body, content_type="text/html")
        return truncated_json()

    async def answer(self, request: web.Request) -> web.StreamResponse:
        errors = {}
        values = {}
        for name, default in (("rows", "10"), ("start", "0")):
            raw = request.query.get(name, default)
            if not raw.isdigit():
                errors[name] = ["Invalid integer"]
            else:
                values[name] = int(raw)
        if "rows" in values and values["rows"] > ROWS_MAX:
            errors["rows"] = [f"Must be less than or equal to {ROWS_MAX}"]
        if errors:
            return self._refusal(409, {"__type": "Validation Error", **errors})
        words = request.query.get("q", "").lower().split()
        matching = [p for p in self.packages if all(w in f"{p['title']} {p['notes']}".lower() for w in words)]
        page = matching[values["start"] : values["start"] + values["rows"]]
        return web.json_response(
            {
                "help": self._help(),
                "success": True,
                "result": {
                    "count": len(matching),
                    "facets": {},
                    "results": page,
                    "sort": "score desc, metadata_modified desc",
                    "search_facets": {},
                },
            }
        )

    def _refusal(self, status: int, error: dict) -> web.Response:
        return web.json_response({"help": self._help(), "success": False, "error": error}, status=status)

    def _help(self) -> str:
        return f"{self.url}/api/3/action/help_show?name=package_search"
