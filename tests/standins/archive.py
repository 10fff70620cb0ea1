"""Stand-ins of satellite-image archives on loopback: a STAC API (item search, exactly as the spec answers)
and the NSPO scene-query API in the shape ``geoweb/connectors/archive/nspo.json`` describes.

    with STACStandin(make_scenes(25)) as stac:
        stac.fail(page=3, kind="server")
        STACArchive({"url": stac.url, "page_size": 10}).records()

Both serve ``scenes`` (the ground truth, a list of ``TruthScene``; change it between harvests), filter them
by time and box, and page them. Faults (``Standin.fail``): ``quota`` (429, retry in an hour), ``server`` (a
500 in the API's error format), ``malformed`` (a 200 whose JSON is cut short).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from aiohttp import web

from tests.standins.server import Standin, truncated_json

TAIPEI = timezone(timedelta(hours=8))
START = datetime(2024, 1, 1, 2, 0, tzinfo=UTC)


@dataclass(frozen=True)
class TruthScene:
    """A scene as the archive holds it; each stand-in writes it in its own format."""

    scene_id: str
    satellite: str
    sensor: str
    acquired_at: datetime
    ring: list[tuple[float, float]]  # lon, lat; closed
    cloud_cover: float | None
    collection: str = "formosat-5"

    @property
    def bbox(self) -> tuple[float, float, float, float]:
        lons, lats = [p[0] for p in self.ring], [p[1] for p in self.ring]
        return min(lons), min(lats), max(lons), max(lats)


def make_scenes(count: int, start: datetime = START, *, prefix: str = "FS5") -> list[TruthScene]:
    """``count`` scenes over Taiwan, one an hour from ``start``, strips moving east."""
    scenes = []
    for i in range(count):
        west, south = 119.5 + (i % 20) * 0.1, 21.9 + (i % 7) * 0.5
        ring = [
            (west, south),
            (west + 0.24, south),
            (west + 0.24, south + 0.22),
            (west, south + 0.22),
            (west, south),
        ]
        acquired = start + timedelta(hours=i)
        scenes.append(
            TruthScene(
                scene_id=f"{prefix}_RSI_{acquired:%Y%m%d_%H%M%S}_{i:04d}",
                satellite="FORMOSAT-5" if prefix == "FS5" else "FORMOSAT-2",
                sensor="RSI",
                acquired_at=acquired,
                ring=ring,
                cloud_cover=float((i * 7) % 101),
            )
        )
    return scenes


def _intersects(box: tuple[float, ...], other: tuple[float, ...]) -> bool:
    return box[0] <= other[2] and other[0] <= box[2] and box[1] <= other[3] and other[1] <= box[3]


class ArchiveStandin(Standin):
    """An archive serving ``scenes``."""

    def __init__(self, scenes: list[TruthScene]):
        super().__init__()
        self.scenes = scenes

    def fault(self, kind: str, request: web.Request) -> web.StreamResponse:
        if kind == "quota":
            body = {"code": "TooManyRequests", "description": "request quota exhausted for this key"}
            return web.json_response(body, status=429, headers={"Retry-After": "3600"})
        if kind == "server":
            return web.json_response(
                {"code": "InternalServerError", "description": "internal error"}, status=500
            )
        return truncated_json()


# --- STAC API ----------------------------------------------------------------------------------------------

GEOJSON = "application/geo+json"


def stac_error(code: str, description: str) -> web.Response:
    """The STAC API error body (OGC API - Features exception: code and description), HTTP 400."""
    return web.json_response({"code": code, "description": description}, status=400)


class STACStandin(ArchiveStandin):
    """A STAC API's ``GET /search`` with ``limit`` (default 10, at most 10000), ``bbox``, ``datetime`` (an
    instant or an interval with ``..`` open ends), ``collections`` and the server's paging ``token``; refusals
    are HTTP 400 with ``{"code", "description"}``. Items are STAC 1.0.0 Items with the eo extension, in a
    FeatureCollection with ``numberMatched`` and ``numberReturned``; the ``next`` link carries every parameter
    of the search. ``next_method`` makes the next link a POST (servers that page POST searches that way)."""

    path = "/search"
    next_method = "GET"

    def page_of(self, request: web.Request) -> int:
        try:
            return (
                int(request.query.get("token", "next:0").removeprefix("next:"))
                // int(request.query.get("limit", "10"))
                + 1
            )
        except (ValueError, ZeroDivisionError):
            return 0

    async def answer(self, request: web.Request) -> web.StreamResponse:
        query = dict(request.query)
        try:
            limit = int(query.get("limit", "10"))
            offset = int(query.get("token", "next:0").removeprefix("next:"))
        except ValueError:
            return stac_error("InvalidParameterValue", "limit and token must be integers")
        if not 1 <= limit <= 10_000:
            return stac_error("InvalidParameterValue", "limit must be between 1 and 10000")
        matched = self._matching(query)
        if isinstance(matched, web.Response):
            return matched
        page = matched[offset : offset + limit]
        links = [
            {"rel": "self", "href": str(request.url), "type": GEOJSON},
            {"rel": "root", "href": f"{self.url}/"},
        ]
        if offset + limit < len(matched):
            following = {k: v for k, v in query.items() if k != "token"} | {"token": f"next:{offset + limit}"}
            href = str(request.url.with_query(following))
            links.append({"rel": "next", "href": href, "type": GEOJSON, "method": self.next_method})
        body = {
            "type": "FeatureCollection",
            "features": [self._item(s) for s in page],
            "links": links,
            "numberMatched": len(matched),
            "numberReturned": len(page),
        }
        return web.json_response(body, content_type=GEOJSON)

    def _matching(self, query: dict[str, str]) -> list[TruthScene] | web.Response:
        scenes = sorted(self.scenes, key=lambda s: (s.acquired_at, s.scene_id))
        if "bbox" in query:
            try:
                box = tuple(float(v) for v in query["bbox"].split(","))
            except ValueError:
                return stac_error("InvalidParameterValue", "bbox must be 4 or 6 numbers")
            if len(box) == 6:
                box = (box[0], box[1], box[3], box[4])
            if len(box) != 4:
                return stac_error("InvalidParameterValue", "bbox must be 4 or 6 numbers")
            scenes = [s for s in scenes if _intersects(box, s.bbox)]
        if "datetime" in query:
            start, interval, end = query["datetime"].partition("/")
            try:
                low = None if start in ("", "..") else datetime.fromisoformat(start)
                high = None if end in ("", "..") else datetime.fromisoformat(end)
                high = high if interval else low  # without a slash: one instant
            except ValueError:
                return stac_error("InvalidParameterValue", "datetime must be RFC 3339 or an interval")
            scenes = [
                s
                for s in scenes
                if (low is None or s.acquired_at >= low) and (high is None or s.acquired_at <= high)
            ]
        if "collections" in query:
            wanted = set(query["collections"].split(","))
            scenes = [s for s in scenes if s.collection in wanted]
        return scenes

    def _item(self, scene: TruthScene) -> dict[str, Any]:
        item_url = f"{self.url}/collections/{scene.collection}/items/{scene.scene_id}"
        return {
            "type": "Feature",
            "stac_version": "1.0.0",
            "stac_extensions": ["https://stac-extensions.github.io/eo/v1.1.0/schema.json"],
            "id": scene.scene_id,
            "geometry": {"type": "Polygon", "coordinates": [[list(p) for p in scene.ring]]},
            "bbox": list(scene.bbox),
            "properties": {
                "datetime": scene.acquired_at.isoformat().replace("+00:00", "Z"),
                "platform": scene.satellite.lower(),
                "instruments": [scene.sensor.lower()],
                "eo:cloud_cover": scene.cloud_cover,
                "gsd": 2,
            },
            "links": [
                {"rel": "self", "href": item_url, "type": GEOJSON},
                {"rel": "collection", "href": f"{self.url}/collections/{scene.collection}", "type": "application/json"},
            ],
            "assets": {
                "thumbnail": {"href": self.quicklook(scene), "type": "image/jpeg", "roles": ["thumbnail"]},
                "visual": {"href": f"{self.url}/data/{scene.scene_id}.tif", "type": "image/tiff; application=geotiff", "roles": ["data"]},
            },
            "collection": scene.collection,
        }  # fmt: skip

    def quicklook(self, scene: TruthScene) -> str:
        return f"{self.url}/quicklook/{scene.scene_id}.jpg"


# --- NSPO scene query --------------------------------------------------------------------------------------


class NSPOStandin(ArchiveStandin):
    """The NSPO scene query as ``nspo.json`` describes it: ``GET /api/v1/scenes`` with ``startTime``
    (``YYYY-MM-DD HH:MM:SS``, Taipei time), ``bbox`` (``west,south,east,north``), ``pageNo`` (from 1),
    ``pageSize`` (1 to 500) and ``sort``. Answers ``{"code": 0, "message": "OK", "data": {"total", "pageNo",
    "pageSize", "scenes": [...]}}``; a refused query is HTTP 200 with a non-zero code and its message.
    ``path`` and ``rename`` (item key -> another name) serve an archive that moved or renamed things; with
    ``api_key`` set, the header ``X-Api-Key`` must carry it."""

    def __init__(
        self, scenes: list[TruthScene], *, path: str = "/api/v1/scenes", rename: dict[str, str] | None = None
    ):
        super().__init__(scenes)
        self.path = path
        self.rename = rename or {}
        self.api_key: str | None = None

    def page_of(self, request: web.Request) -> int:
        try:
            return int(request.query.get("pageNo", "1"))
        except ValueError:
            return 0

    async def answer(self, request: web.Request) -> web.StreamResponse:
        query = dict(request.query)
        if self.api_key is not None and request.headers.get("X-Api-Key") != self.api_key:
            return web.json_response({"code": 401, "message": "invalid api key"}, status=401)
        try:
            page, size = int(query.get("pageNo", "1")), int(query.get("pageSize", "20"))
        except ValueError:
            return self._refuse(1001, "pageNo and pageSize must be integers")
        if not 1 <= size <= 500 or page < 1:
            return self._refuse(1002, "pageSize must be 1-500 and pageNo at least 1")
        scenes = sorted(self.scenes, key=lambda s: (s.acquired_at, s.scene_id))
        if "startTime" in query:
            try:
                since = datetime.strptime(query["startTime"], "%Y-%m-%d %H:%M:%S").replace(tzinfo=TAIPEI)
            except ValueError:
                return self._refuse(1003, "startTime must be YYYY-MM-DD HH:MM:SS")
            scenes = [s for s in scenes if s.acquired_at >= since]
        if "bbox" in query:
            try:
                box = tuple(float(v) for v in query["bbox"].split(","))
            except ValueError:
                box = ()
            if len(box) != 4:
                return self._refuse(1004, "bbox must be west,south,east,north")
            scenes = [s for s in scenes if _intersects(box, s.bbox)]
        chosen = scenes[(page - 1) * size : page * size]
        data = {
            "total": len(scenes),
            "pageNo": page,
            "pageSize": size,
            "scenes": [self._item(s) for s in chosen],
        }
        return web.json_response({"code": 0, "message": "OK", "data": data})

    def _refuse(self, code: int, message: str) -> web.Response:
        return web.json_response({"code": code, "message": message, "data": None})

    def _item(self, scene: TruthScene) -> dict[str, Any]:
        item = {
            "sceneId": scene.scene_id,
            "satellite": scene.satellite,
            "sensor": scene.sensor,
            "acqTime": scene.acquired_at.astimezone(TAIPEI).strftime("%Y-%m-%d %H:%M:%S"),
            "footprint": "POLYGON ((" + ", ".join(f"{x:g} {y:g}" for x, y in scene.ring) + "))",
            "cloudCover": scene.cloud_cover,
            "quicklookUrl": self.quicklook(scene),
            "orbit": 1000 + int(scene.scene_id[-4:]),
            "level": "L1A",
            "sunElevation": 55.5,
        }
        return {self.rename.get(k, k): v for k, v in item.items()}

    def quicklook(self, scene: TruthScene) -> str:
        return f"{self.url}/quicklook/{scene.scene_id}.jpg"
