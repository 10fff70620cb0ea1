"""STAC, GeoJSON and GeoTIFF in the local GeoWeb: the static catalog (lighttpd), stac-fastapi-static over it,
the planted files and decoys, and a crawl of the pages linking them scored against the manifest."""

from __future__ import annotations

import asyncio
import io
import json
import logging

import pytest

from geoweb.crawl.jsonl import crawl_to_jsonl
from geoweb.detect.stac import Node, api_datasets
from geoweb.fetch.fetcher import Fetcher
from geoweb.settings import Settings
from tests.data.files.make_fixtures import context
from tests.integration.test_testweb_servers import get
from testweb import stac

pytestmark = pytest.mark.testweb

FAMILY = ("STAC", "STAC-API", "GEOJSON", "GEOTIFF")
SEEDS = ("http://127.0.0.1:18000/imagery.html", "http://127.0.0.1:18003/posts/free-imagery.html")


def planted(manifest: dict) -> dict[tuple[str, str], dict]:
    return {(r["url"], r["type"]): r for r in manifest["resources"] if r["type"] in FAMILY}


@pytest.fixture(scope="module")
def crawl(testweb, access_logs):
    """A crawl from the two pages linking the family's resources; (records, requests to the test web)."""
    settings = Settings(allowed_hosts=frozenset({"127.0.0.1"}), max_level=2)
    out = io.StringIO()
    access_logs.settle()  # requests of earlier tests still in lighttpd's buffer stay before the mark
    mark = access_logs.mark()
    asyncio.run(crawl_to_jsonl(list(SEEDS), settings, FAMILY, out))
    requests = [r for r in access_logs.since(mark) if "GeoWebHarvester" in r.user_agent]
    return [json.loads(line) for line in out.getvalue().splitlines()], requests


def test_the_crawl_finds_every_planted_stac_geojson_and_geotiff_with_its_datasets(testweb, crawl):
    records, _ = crawl
    found = {(r["url"], r["type"]): r for r in records}
    assert set(found) == set(planted(testweb))  # and nothing from the decoys
    for key, expected in planted(testweb).items():
        assert sorted(d["name"] for d in found[key]["dataset_list"]) == sorted(expected["datasets"]), key
        assert all(d["bbox"] for d in found[key]["dataset_list"]), key


def test_the_large_cog_is_read_with_one_range_request(testweb, crawl):
    _, requests = crawl
    large = [r for r in requests if r.url == stac.LARGE_COG]
    # the crawl's GET (its body left unread) and one Range request for the header; the server logs a request
    # when it ends, so the unread GET may come last
    assert sorted(r.status for r in large) == [200, 206]


def test_the_static_catalog_is_stac_1_1_with_relative_links_only(testweb):
    for path in stac.CAPTURED["static"]:
        status, headers, body = get(stac.SITE + path)
        document = json.loads(body)
        assert status == 200 and headers["content-type"] == "application/json"
        assert document["stac_version"] == "1.1.0"
        assert not any(link["href"].startswith("http") for link in document["links"]), path


def test_every_item_asset_is_a_cloud_optimized_geotiff(testweb):
    for collection in stac.COLLECTIONS:
        for item in collection.items:
            status, headers, head = get(collection.asset_url(item), {"Range": "bytes=0-1023"})
            assert status == 206 and headers["content-type"] == "image/tiff"
            assert head[:4] == b"II*\x00" and b"LAYOUT=IFDS_BEFORE_DATA" in head  # GDAL's COG ghost area
    assert (
        int(get(stac.LARGE_COG, {"Range": "bytes=0-0"})[1]["content-range"].rpartition("/")[2]) > 10 * 2**20
    )


def test_the_api_serves_the_catalog_collections_and_item_search(testweb):
    status, _, body = get(stac.API_URL)
    landing = json.loads(body)
    assert status == 200 and "https://api.stacspec.org/v1.0.0/item-search" in landing["conformsTo"]
    names = {c["id"] for c in json.loads(get(stac.API_URL + "collections")[2])["collections"]}
    assert names == {c.id for c in stac.COLLECTIONS}
    search = json.loads(get(stac.API_URL + "search?bbox=-76,-16,-69,-9")[2])
    assert [f["id"] for f in search["features"]] == ["landcover-2024"]


def test_the_api_collections_are_paged_through_rel_next_and_the_paging_is_capped(testweb, caplog):
    """Against the real server, asking one collection per page: every page followed, or cut at the cap."""
    landing = json.loads(get(stac.API_URL)[2])
    landing["links"] = [{"rel": "data", "href": stac.API_URL + "collections?limit=1"}]
    node = Node(stac.API_URL, "Catalog", landing, b"")

    async def datasets(settings: Settings) -> list[str]:
        async with Fetcher(settings) as fetcher:
            return [d.name for d in await api_datasets(node, context(fetcher.get, settings=settings))]

    settings = Settings(allowed_hosts=frozenset({"127.0.0.1"}))
    assert sorted(asyncio.run(datasets(settings))) == sorted(c.id for c in stac.COLLECTIONS)
    with caplog.at_level(logging.WARNING):
        assert len(asyncio.run(datasets(settings.with_(stac_max_pages=1)))) == 1
    assert "collections cut at 1 pages" in caplog.text


def test_the_decoys_look_like_what_they_are_not(testweb):
    status, headers, body = get(stac.SITE + stac.JPEG_TIF_PATH)
    assert headers["content-type"] == "image/tiff" and body[:3] == b"\xff\xd8\xff"
    status, headers, body = get(stac.SITE + stac.HTML_GEOJSON_PATH)
    assert status == 200 and headers["content-type"].startswith("text/html") and body.startswith(b"<!DOCTYPE")
    status, _, body = get(stac.SITE + stac.BROKEN_STAC_PATH)
    assert status == 200 and "stac_version" in json.loads(body)


def test_an_api_collection_names_the_static_root_the_api_also_serves(testweb):
    """Why the detector goes to the landing page above /collections first: the collection's rel=root."""
    collection = json.loads(get(stac.API_COLLECTION)[2])
    (root,) = [link["href"] for link in collection["links"] if link["rel"] == "root"]
    assert root == stac.API_URL + "catalog.json"
    status, _, body = get(root)
    assert status == 200 and json.loads(body)["type"] == "Catalog"
