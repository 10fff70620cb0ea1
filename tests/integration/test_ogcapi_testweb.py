"""The OGC API detector against the test web's pygeoapi and its decoys, through the real fetcher."""

from __future__ import annotations

import asyncio
import json
import logging
import urllib.request
from collections import Counter

import pytest

from geoweb.detect.base import DetectContext
from geoweb.detect.ogcapi import OGCAPIDetector
from geoweb.fetch.fetcher import Fetcher
from geoweb.models import OGCAPI_TYPES
from geoweb.settings import Settings
from testweb.model import DIRECT
from testweb.ogcapi import DECOYS, DEEP_COLLECTION, URL

pytestmark = pytest.mark.testweb


async def _detect(urls: list[str]) -> tuple[list, Counter, Counter]:
    """Fetch each URL as the crawl does and run the detector on it, in one run; (resources, stats, requests)."""
    settings = Settings(allowed_hosts=frozenset({"127.0.0.1"}))
    stats: Counter = Counter()
    async with Fetcher(settings, stats=stats) as fetcher:
        requests: Counter = Counter()

        async def fetch(url: str, **options):
            requests[url] += 1
            return await fetcher.get(url, **options)

        seen: set[str] = set()

        def first_time(key: str) -> bool:
            new = key not in seen
            seen.add(key)
            return new

        ctx = DetectContext(fetch, settings, OGCAPI_TYPES, first_time, stats)
        detector = OGCAPIDetector()
        found = []
        for url in urls:
            response = await fetch(url)
            if detector.accepts(response):
                found += await detector.detect(response, ctx)
    return found, stats, requests


def detect(*urls: str):
    return asyncio.run(_detect(list(urls)))


@pytest.mark.parametrize(
    "start", [URL, DEEP_COLLECTION, f"{DEEP_COLLECTION}?f=html", f"{URL}conformance?f=html"]
)
def test_every_api_of_pygeoapi_with_the_planted_datasets(testweb, start):
    planted = {r["type"]: sorted(r["datasets"]) for r in testweb["resources"] if r["url"] == URL}
    assert set(planted) == set(OGCAPI_TYPES)
    found, stats, requests = detect(start)
    assert {r.type: sorted(d.name for d in r.datasets) for r in found} == planted
    assert {r.url for r in found} == {URL}
    # what was fetched: the start page, the landing page (unless it was the start), conformance,
    # collections, processes, service description; each once
    assert sum(requests.values()) <= 6 and max(requests.values()) == 1, requests
    assert stats["ogcapi/miss/not_ogcapi"] == 0


def test_extents_and_provider(testweb):
    found, _, _ = detect(URL)
    assert {r.provider for r in found} == {"GeoWeb Test Agency"}
    features = next(r for r in found if r.type == "OGCAPI-FEATURES")
    assert {d.name: d.bbox for d in features.datasets} == {
        "lakes": (32.0, -2.0, 33.6, -1.2),
        "provinces": (5.0, 45.0, 8.0, 46.0),
    }
    assert features.bbox == (5.0, -2.0, 33.6, 46.0)


def test_pages_of_one_api_found_in_one_run_cost_one_reading(testweb):
    found, _, requests = detect(URL, DEEP_COLLECTION, f"{DEEP_COLLECTION}?f=html")
    assert len(found) == len(OGCAPI_TYPES)
    assert sum(requests.values()) == 3 + 4  # the three pages; conformance, collections, processes, OpenAPI


@pytest.mark.parametrize("decoy", DECOYS, ids=lambda d: d.url.rpartition("/")[2])
def test_decoys_are_logged_misses(testweb, decoy, caplog):
    with caplog.at_level(logging.INFO, logger="geoweb.detect"):
        found, stats, _ = detect(decoy.url)
    assert found == []
    assert stats["ogcapi/miss/not_ogcapi"] == 1
    assert decoy.url in caplog.text


def get(path: str, data: bytes | None = None) -> tuple[str, bytes]:
    """(media type, body) of a request to the test web's pygeoapi."""
    headers = {"Content-Type": "application/json"} if data else {}
    with DIRECT.open(urllib.request.Request(URL + path, data, headers), timeout=30) as answer:
        return answer.headers.get_content_type(), answer.read()


@pytest.mark.parametrize(
    ("path", "media_type", "check"),
    [
        ("collections/lakes/items?f=json", "application/json", lambda d: len(json.loads(d)["features"]) == 2),
        ("collections/records/items?f=json", "application/json", lambda d: len(json.loads(d)["features"]) == 2),
        ("collections/lakes/tiles/WebMercatorQuad/0/0/0?f=mvt", "application/vnd.mapbox-vector-tile", bool),
        ("collections/provinces/map?f=png&bbox=5,45,8,46&width=60&height=20", "image/png",
         lambda d: d.startswith(b"\x89PNG")),
        ("collections/elevation/coverage?f=json&bbox=6,45.5,6.5,46", "application/prs.coverage+json",
         lambda d: json.loads(d)["type"] == "Coverage"),
        ("collections/landcover/position?coords=POINT(140%20-30)&f=json", "application/json",
         lambda d: json.loads(d)["domain"]["domainType"] == "PointSeries"),
    ],
)  # fmt: skip
def test_every_planted_api_really_serves_its_datasets(testweb, path, media_type, check):
    """pygeoapi answers the requests of each API with real data (the map is drawn by the MapServer WMS)."""
    answered_type, body = get(path)
    assert answered_type == media_type and check(body), (path, answered_type, body[:200])


def test_the_process_really_runs(testweb):
    _, body = get("processes/hello-world/execution", json.dumps({"inputs": {"name": "lakes"}}).encode())
    assert json.loads(body)["value"] == "Hello lakes!"
