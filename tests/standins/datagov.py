"""data.gov's Catalog API (``GET /search``), serving the real answers in ``data/datagov/`` and geospatial
datasets of the same shape.

An answer is ``{"after": <cursor> | null, "results": [...], "sort": "relevance"}``. The cursor is what the
real API sends: the base64 of the last result's ``_sort`` as compact JSON; it comes with every non-empty
page, short or not, and the page after the last result is empty. Parameters: ``q`` (a slug, or words found
in the title, description or keywords), ``per_page``, ``org_slug``, ``spatial_filter``, ``after``. With a
``key`` the stand-in is the api.gsa.gov proxy: ``X-Api-Key`` is required, and its refusals are api.data.gov's
``{"error": {"code", "message"}}``.
"""

from __future__ import annotations

import base64
import copy
import json
import uuid
from pathlib import Path

from aiohttp import web

from tests.standins.server import Standin, bad_gateway, truncated_json

DATA = Path(__file__).parent / "data" / "datagov"
CORPUS = ("search.json", "search_by_slug.json", "search_filtered.json")
KEY = "standin-datagov-key-0123456789abcdef"
RATE_LIMITED = {
    "error": {
        "code": "OVER_RATE_LIMIT",
        "message": "You have exceeded your rate limit. Try again later "
        "or contact us at https://api.data.gov:443/contact/ for assistance",
    }
}


def corpus(name: str) -> dict:
    """A real answer of the Catalog API, as captured."""
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def corpus_results() -> list[dict]:
    """Every result of the captured answers (none geospatial), in file order."""
    return [result for name in CORPUS for result in corpus(name)["results"]]


def cursor(result: dict) -> str:
    return base64.b64encode(json.dumps(result["_sort"], separators=(",", ":")).encode()).decode()


def geospatial_dataset(n: int, distributions: list[dict], bbox: tuple[float, float, float, float]) -> dict:
    """A geospatial dataset shaped as the real results are: ``has_spatial``, a GeoJSON ``spatial_shape`` and
    its centroid, and DCAT distributions (give their downloadURL/accessURL, mediaType, format, title)."""
    result = copy.deepcopy(corpus("search.json")["results"][0])
    west, south, east, north = bbox
    identifier = str(uuid.uuid5(uuid.NAMESPACE_URL, f"geoweb-standin-{n}"))
    title, slug = f"National Hydrography Dataset, region {n}", f"national-hydrography-dataset-region-{n}"
    description = (
        f"Streams, rivers and lakes of region {n}, as a web map service, KML and a zipped shapefile."
    )
    keywords = ["hydrography", "rivers", "geospatial", f"region {n}"]
    result |= {
        "_score": 50.0 - n,
        "_sort": [50.0 - n, n, identifier],
        "identifier": f"USGS-NHD-{n}",
        "slug": slug,
        "title": title,
        "description": description,
        "keyword": keywords,
        "theme": ["Geospatial"],
        "publisher": "U.S. Geological Survey",
        "has_spatial": True,
        "spatial_shape": {
            "type": "Polygon",
            "coordinates": [[[west, south], [east, south], [east, north], [west, north], [west, south]]],
        },
        "spatial_centroid": {"type": "Point", "coordinates": [(west + east) / 2, (south + north) / 2]},
        "organization": {
            **result["organization"],
            "name": "U.S. Geological Survey",
            "slug": "usgs-gov",
            "organization_type": "Federal Government",
        },
    }
    result["dcat"] |= {
        "identifier": f"USGS-NHD-{n}",
        "title": title,
        "description": description,
        "keyword": keywords,
        "modified": "2025-05-01T12:00:00Z",
        "spatial": f"{west},{south},{east},{north}",
        "publisher": {"@type": "org:Organization", "name": "U.S. Geological Survey"},
        "landingPage": f"https://www.usgs.gov/nhd/region-{n}",
        "distribution": [{"@type": "dcat:Distribution", **d} for d in distributions],
    }
    return result


class DataGovStandin(Standin):
    """Serves ``datasets`` (results in relevance order). Faults: quota (429 OVER_RATE_LIMIT), server (502),
    malformed."""

    path = "/search"

    def __init__(self, datasets: list[dict], key: str | None = KEY) -> None:
        super().__init__()
        self.datasets = datasets
        self.key = key

    def config(self, **settings: str) -> dict[str, str]:
        return {"url": self.url, **({"key": self.key} if self.key else {}), **settings}

    def page_of(self, request: web.Request) -> int:
        """The page a request asks for: 1 without a cursor, else one more than the page the cursor ends."""
        after = request.query.get("after")
        if after is None:
            return 1
        index = self._index_after(after, [d for d in self.datasets if self._matches(d, request.query)])
        per_page = request.query.get("per_page", "10")
        return index // int(per_page) + 1 if index is not None and per_page.isdigit() and int(per_page) else 0

    def fault(self, kind: str, request: web.Request) -> web.StreamResponse:
        if kind == "quota":
            return web.json_response(
                RATE_LIMITED, status=429, headers={"X-RateLimit-Limit": "1000", "X-RateLimit-Remaining": "0"}
            )
        return bad_gateway() if kind == "server" else truncated_json()

    async def answer(self, request: web.Request) -> web.StreamResponse:
        if self.key is not None:
            given = request.headers.get("X-Api-Key") or request.query.get("api_key")
            if not given:
                return web.json_response(
                    {
                        "error": {
                            "code": "API_KEY_MISSING",
                            "message": "No api_key was supplied. Get one at https://api.data.gov:443",
                        }
                    },
                    status=403,
                )
            if given != self.key:
                return web.json_response(
                    {
                        "error": {
                            "code": "API_KEY_INVALID",
                            "message": "An invalid api_key was supplied. Get one at https://api.data.gov:443",
                        }
                    },
                    status=403,
                )
        per_page = request.query.get("per_page", "10")
        if not per_page.isdigit() or not 1 <= int(per_page) <= 1000:
            return web.json_response({"error": "per_page must be an integer from 1 to 1000"}, status=400)
        matching = [d for d in self.datasets if self._matches(d, request.query)]
        start = 0
        if "after" in request.query:
            index = self._index_after(request.query["after"], matching)
            if index is None:
                return web.json_response({"error": "invalid after cursor"}, status=400)
            start = index
        page = matching[start : start + int(per_page)]
        return web.json_response(
            {"after": cursor(page[-1]) if page else None, "results": page, "sort": "relevance"}
        )

    @staticmethod
    def _index_after(after: str, datasets: list[dict]) -> int | None:
        """The index of the dataset following the one ``after`` names."""
        for i, dataset in enumerate(datasets):
            if cursor(dataset) == after:
                return i + 1
        return None

    @staticmethod
    def _matches(dataset: dict, query) -> bool:
        q = query.get("q", "").strip().lower()
        if q and q != dataset["slug"]:
            text = " ".join([dataset["title"], dataset["description"] or "", *dataset["keyword"]]).lower()
            if not all(word in text for word in q.split()):
                return False
        if "org_slug" in query and dataset["organization"]["slug"] != query["org_slug"]:
            return False
        spatial = query.get("spatial_filter")
        return spatial is None or dataset["has_spatial"] == (spatial == "geospatial")
