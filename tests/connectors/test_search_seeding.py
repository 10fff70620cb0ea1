"""Search seeding on PostGIS, against the SearXNG and data.gov stand-ins: hits and candidate links join level 0
of the run's frontier with the keyword that found them, data.gov datasets are stored as catalogue records,
and a provider failing half-way keeps what it found and fails with its page named. Also the commands
``geoweb seed``, ``geoweb datagov`` and ``geoweb ckan``: JSON lines out, one clear line on failure."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import uuid

import psycopg2
import pytest

from geoweb.connectors import ConnectorError, QuotaExceeded
from geoweb.harvest.crawl import seed_search, start_run
from geoweb.harvest.params import HarvestParams
from geoweb.store import Store
from tests.standins.ckan import CKANStandin, package
from tests.standins.datagov import KEY, DataGovStandin, geospatial_dataset
from tests.standins.searxng import SearXNGStandin
from tests.standins.server import Hit, web_pages

BBOX = (-124.5, 32.5, -114.1, 42.0)
PDF = Hit("https://maps.example.org/guide.pdf", "Guide", "a PDF the crawl never fetches")


def distributions(n: int) -> list[dict]:
    base = f"https://nhd.example.gov/r{n}"
    return [{"accessURL": f"{base}/wms?service=WMS&request=GetCapabilities", "format": "WMS"},
            {"downloadURL": f"{base}/streams.kml", "mediaType": "application/vnd.google-earth.kml+xml"},
            {"downloadURL": f"{base}/streams.csv", "mediaType": "text/csv"}]  # fmt: skip


@pytest.fixture(scope="module")
def sources():
    datasets = [geospatial_dataset(n, distributions(n), BBOX) for n in range(3)]
    with SearXNGStandin() as searxng, DataGovStandin(datasets) as datagov:
        searxng.results["web map service"] = [*web_pages(12), PDF]
        searxng.results["KML download"] = web_pages(15, base="https://kml.example.net")
        yield {"searxng": searxng, "datagov": datagov}


@pytest.fixture(autouse=True)
def fresh(sources):
    for standin in sources.values():
        standin.reset()


@pytest.fixture
def store(postgis_dsn):
    with Store(postgis_dsn) as opened:
        yield opened


def params(**conf) -> HarvestParams:
    return HarvestParams.from_conf({
        "search_providers": ["searxng", "datagov"], "types": ["WMS", "KML"], "search_pages": 3,
        "keywords_by_type": {"WMS": ["web map service"], "KML": ["KML download"]}, **conf,
    })  # fmt: skip


def begun(store: Store, run_params: HarvestParams) -> str:
    run_id = f"seed-{uuid.uuid4().hex[:12]}"
    start_run(store, run_id, run_params)
    return run_id


def frontier(dsn: str, run_id: str) -> dict[str, tuple]:
    with psycopg2.connect(dsn) as conn, conn.cursor() as cur:
        cur.execute("SELECT url, level, source_page, keyword FROM frontier_urls WHERE run_id = %s", (run_id,))
        return {url: rest for url, *rest in cur.fetchall()}


def test_hits_and_candidates_join_level_0_with_their_keyword(sources, store, postgis_dsn, caplog):
    caplog.set_level(logging.INFO, "geoweb")
    run_params = params()
    run_id = begun(store, run_params)
    config_of = {name: standin.config() for name, standin in sources.items()}.__getitem__
    added = seed_search(store, run_id, run_params, config_of)
    rows = frontier(postgis_dsn, run_id)
    hits = {h.url: "web map service" for h in web_pages(12)}
    hits |= {h.url: "KML download" for h in web_pages(15, base="https://kml.example.net")}
    for url, keyword in hits.items():
        assert rows.pop(url) == [0, None, keyword], url
    for n in range(3):  # data.gov matched "web map service" (its descriptions say so), not "KML download"
        page = f"https://catalog.data.gov/dataset/national-hydrography-dataset-region-{n}"
        for url in (f"https://nhd.example.gov/r{n}/wms?service=WMS&request=GetCapabilities",
                    f"https://nhd.example.gov/r{n}/streams.kml"):  # fmt: skip
            assert rows.pop(url) == [0, page, "web map service"], url
    assert rows == {} and added == 27 + 6  # the PDF and the CSVs are no seeds
    assert "seed https://maps.example.org/guide.pdf dropped by the URL filters" in caplog.text
    with psycopg2.connect(postgis_dsn) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT identifier, keyword, ST_XMin(footprint), ST_YMax(footprint), links::text FROM catalogue_records "
            "WHERE source = 'datagov' AND identifier LIKE 'USGS-NHD-%%' ORDER BY identifier"
        )
        records = cur.fetchall()
    assert [r[:4] for r in records] == [(f"USGS-NHD-{n}", "web map service", -124.5, 42.0) for n in range(3)]
    assert "streams.csv" in records[0][4]  # every distribution is kept with the record


def test_a_provider_failing_half_way_keeps_what_it_found(sources, store, postgis_dsn):
    sources["searxng"].fail(page=2, kind="server")
    run_params = params()
    run_id = begun(store, run_params)
    config = {"url": sources["searxng"].url, "retries": "0"}
    with pytest.raises(ConnectorError, match="searxng: 'web map service' page 2: HTTP 502"):
        seed_search(store, run_id, run_params, lambda name: config)
    rows = frontier(postgis_dsn, run_id)
    assert set(rows) == {h.url for h in web_pages(10)}  # page 1, committed before the failure
    assert len(sources["datagov"].requests) == 0  # the next providers never ran


def test_a_spent_quota_is_raised_as_quota_exceeded(sources, store):
    sources["datagov"].fail(page=1, kind="quota")
    run_params = params(search_providers=["datagov"])
    with pytest.raises(QuotaExceeded, match="OVER_RATE_LIMIT"):
        seed_search(
            store, begun(store, run_params), run_params, lambda name: sources[name].config(retries="0")
        )


def test_without_providers_or_keywords_nothing_is_searched(sources, store, caplog):
    caplog.set_level(logging.INFO, "geoweb")
    no_providers = params(search_providers=[], seeds=["https://example.org/"])
    assert seed_search(store, begun(store, no_providers), no_providers, lambda name: {}) == 0
    no_keywords = params(keywords_by_type={})
    assert seed_search(store, begun(store, no_keywords), no_keywords, lambda name: {}) == 0
    assert (
        "no search seeding: 0 providers" in caplog.text
        and "no search seeding: 2 providers, 0 keywords" in caplog.text
    )
    assert all(not standin.requests for standin in sources.values())


def geoweb(*args: str, log_level: str = "WARNING", **environ: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GEOWEB_")} | environ
    command = [sys.executable, "-m", "geoweb.cli", "--log-level", log_level, *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)


def test_geoweb_seed_prints_json_lines_and_fails_in_one_line(sources):
    searxng = sources["searxng"]
    done = geoweb("seed", "--provider", "searxng", "--keyword", "web map service", "--pages", "1",
                  GEOWEB_SEARXNG_URL=searxng.url)  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["identifier"] for line in lines] == [h.url for h in web_pages(10)]
    assert {line["keyword"] for line in lines} == {"web map service"}
    searxng.fail(page=1, kind="malformed")
    failed = geoweb("seed", "--provider", "searxng", "--keyword", "x", GEOWEB_SEARXNG_URL=searxng.url)
    assert failed.returncode == 1 and failed.stdout == ""
    assert failed.stderr.startswith("geoweb seed: searxng: 'x' page 1: the answer is not JSON (")
    assert failed.stderr.count("\n") == 1


def test_geoweb_datagov_never_shows_the_key(sources):
    datagov = sources["datagov"]
    done = geoweb("datagov", "--query", "hydrography", GEOWEB_DATAGOV_URL=datagov.url, GEOWEB_DATAGOV_KEY=KEY)
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["bbox"] for line in done.stdout.splitlines()] == [list(BBOX)] * 3
    wrong = "a-wrong-key-to-be-kept-secret"
    refused = geoweb("datagov", "--query", "hydrography", log_level="DEBUG", GEOWEB_DATAGOV_URL=datagov.url,
                     GEOWEB_DATAGOV_KEY=wrong)  # fmt: skip
    assert refused.returncode == 1 and "HTTP 403 API_KEY_INVALID" in refused.stderr
    assert wrong not in refused.stderr + refused.stdout


def test_geoweb_ckan_reads_a_portal():
    with CKANStandin(
        [package(n, [{"url": f"https://p.example/w{n}?service=WFS", "format": "WFS"}]) for n in range(3)]
    ) as ckan:
        done = geoweb("ckan", "--url", ckan.url, "--query", "land use", "--rows", "2")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["extra"]["candidates"] for line in lines] == [
        {f"https://p.example/w{n}?service=WFS": "WFS"} for n in range(3)
    ]
    missing = geoweb("ckan", "--query", "x")
    assert missing.returncode == 2 and "--url" in missing.stderr


def test_a_retried_seeding_skips_the_searches_it_finished(sources, store, postgis_dsn, caplog):
    """A task retried after a failure spends no quota on the searches it had finished: only the one that
    failed (and those after it) are asked again."""
    caplog.set_level(logging.INFO, "geoweb")
    sources["datagov"].fail(page=1, kind="server")
    run_params = params()
    run_id = begun(store, run_params)
    config_of = {name: standin.config(retries="0") for name, standin in sources.items()}.__getitem__
    with pytest.raises(ConnectorError, match="datagov"):
        seed_search(store, run_id, run_params, config_of)
    searx_first = len(sources["searxng"].requests)
    assert searx_first > 0
    sources["datagov"].reset()
    for standin in sources.values():
        standin.requests.clear()
    added = seed_search(store, run_id, run_params, config_of)
    assert sources["searxng"].requests == []  # both of its searches were finished by the first try
    assert len(sources["datagov"].requests) > 0 and added == 6  # the data.gov seeds only
    assert "searxng 'web map service' was searched by an earlier try; skipped" in caplog.text
    assert len(frontier(postgis_dsn, run_id)) == 27 + 6
