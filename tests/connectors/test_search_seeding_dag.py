"""Search seeding in geoweb_crawl on the real stack (Airflow, two Celery workers, PostGIS): the providers'
settings come from Airflow Connections, the hits and data.gov's service and file links are crawled at level 0
with their keyword, and a spent quota fails seed_search at once, without retries, naming the provider and
the page. Stand-ins of SearXNG and data.gov point at a loopback web of a WMS and KML files. About a minute."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg2
import pytest

from stack.airflow import MAIN_DAG
from stack.airflow_api import AirflowClient, AirflowError
from stack.layout import GEOWEB_DB
from tests.e2e.conftest import stack  # noqa: F401  (the session fixture, shared)
from tests.harvest.web import LoopbackWeb
from tests.standins.datagov import DataGovStandin, geospatial_dataset
from tests.standins.searxng import SearXNGStandin
from tests.standins.server import Hit

pytestmark = pytest.mark.testweb

RUN_TIMEOUT = 240.0
KEYWORD = "web map service"
CONF = {"search_providers": ["searxng", "datagov"], "types": ["WMS", "KML"], "max_level": 0, "search_pages": 1,
        "keywords_by_type": {"WMS": [KEYWORD], "KML": []}, "allowed_hosts": ["127.0.0.1"], "shards": 2}  # fmt: skip


@pytest.fixture(scope="module")
def web() -> Iterator[LoopbackWeb]:
    with LoopbackWeb() as loopback:
        yield loopback


@pytest.fixture(scope="module")
def sources(web) -> Iterator[dict]:
    """SearXNG finds the WMS and a KML file; a data.gov dataset offers two more KML files."""
    distributions = [{"downloadURL": web.url("B", "/files/b.kml"), "format": "KML"},
                     {"accessURL": web.url("A", "/files/p1.kml"), "mediaType": "application/vnd.google-earth.kml+xml"}]  # fmt: skip
    with (
        SearXNGStandin() as searxng,
        DataGovStandin([geospatial_dataset(1, distributions, (8, 46, 9, 47))]) as datagov,
    ):
        searxng.results[KEYWORD] = [Hit(web.url("B", "/wms?SERVICE=WMS&REQUEST=GetCapabilities"), "WMS", "B"),
                                    Hit(web.url("A", "/files/one.kml"), "KML", "A")]  # fmt: skip
        yield {"searxng": searxng, "datagov": datagov}


@pytest.fixture(scope="module")
def connections(stack: AirflowClient, sources) -> Iterator[None]:  # noqa: F811
    """Connections geoweb_searxng and geoweb_datagov: the URL in extra, data.gov's key as the password."""
    bodies = [
        {"connection_id": "geoweb_searxng", "conn_type": "http", "extra": json.dumps(sources["searxng"].config(retries="0"))},
        {"connection_id": "geoweb_datagov", "conn_type": "http", "password": sources["datagov"].key,
         "extra": json.dumps({"url": sources["datagov"].url, "retries": "0"})},
    ]  # fmt: skip
    for body in bodies:
        _delete_connection(stack, body["connection_id"])
        stack.request("POST", "/connections", json=body)
    yield
    for body in bodies:
        _delete_connection(stack, body["connection_id"])


def _delete_connection(client: AirflowClient, connection_id: str) -> None:
    try:
        client.request("DELETE", f"/connections/{connection_id}")
    except AirflowError as exc:
        if exc.status != 404:
            raise


def run(client: AirflowClient) -> tuple[str, str]:
    client.unpause(MAIN_DAG)
    run_id = client.trigger(MAIN_DAG, CONF)
    return run_id, client.wait(MAIN_DAG, run_id, RUN_TIMEOUT)


def task_log(client: AirflowClient, run_id: str, task_id: str) -> str:
    """The text of a task's first try's log, as the API serves it."""
    log = client.request("GET", f"/dags/{MAIN_DAG}/dagRuns/{run_id}/taskInstances/{task_id}/logs/1")
    return json.dumps(log["content"])


def query(sql: str, *args) -> list[tuple]:
    with psycopg2.connect(GEOWEB_DB) as conn, conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchall()


def test_hits_and_portal_links_are_crawled_at_level_0_with_their_keyword(stack, connections, sources, web):  # noqa: F811
    run_id, state = run(stack)
    assert state == "success"
    assert (
        sources["searxng"].requests
        and sources["datagov"].requests[0].headers["x-api-key"] == sources["datagov"].key
    )
    frontier = {url: (keyword, status, page) for url, keyword, status, page in query(
        "SELECT url, keyword, status, source_page FROM frontier_urls WHERE run_id = %s AND level = 0", run_id)}  # fmt: skip
    dataset_page = "https://catalog.data.gov/dataset/national-hydrography-dataset-region-1"
    assert frontier == {
        web.url("B", "/wms?SERVICE=WMS&REQUEST=GetCapabilities"): (KEYWORD, "fetched", None),
        web.url("A", "/files/one.kml"): (KEYWORD, "fetched", None),
        web.url("B", "/files/b.kml"): (KEYWORD, "fetched", dataset_page),
        web.url("A", "/files/p1.kml"): (KEYWORD, "fetched", dataset_page),
    }
    loaded = query("SELECT r.url, r.type, rr.level FROM run_resources rr JOIN resources r ON r.id = rr.resource_id "
                   "WHERE rr.run_id = %s", run_id)  # fmt: skip
    assert sorted(loaded) == sorted([(web.url("B", "/wms"), "WMS", 0), (web.url("A", "/files/one.kml"), "KML", 0),
                                     (web.url("B", "/files/b.kml"), "KML", 0), (web.url("A", "/files/p1.kml"), "KML", 0)])  # fmt: skip
    assert query(
        "SELECT keyword FROM catalogue_records WHERE source = 'datagov' AND identifier = 'USGS-NHD-1'"
    ) == [(KEYWORD,)]
    log = task_log(stack, run_id, "seed_search")
    assert "searxng 'web map service': 2 records, 2 seeds" in log and sources["datagov"].key not in log


def test_a_spent_quota_fails_seed_search_at_once(stack, connections, sources):  # noqa: F811
    sources["searxng"].fail(page=1, kind="quota")
    try:
        run_id, state = run(stack)
    finally:
        sources["searxng"].reset()
    assert state == "failed"
    tasks = {t["task_id"]: t for t in stack.task_instances(MAIN_DAG, run_id) if t["map_index"] == -1}
    assert tasks["start_run"]["state"] == "success"
    assert tasks["seed_search"]["state"] == "failed" and tasks["seed_search"]["try_number"] == 1
    assert tasks["plan_level_0"]["state"] == "upstream_failed"
    log = task_log(stack, run_id, "seed_search")
    assert "search seeding failed: searxng: 'web map service' page 1: HTTP 429 Too Many Requests" in log


@contextmanager
def variable(client: AirflowClient, key: str, value) -> Iterator[None]:
    """An Airflow Variable (JSON) for the test's duration."""
    client.request("POST", "/variables", json={"key": key, "value": json.dumps(value)})
    try:
        yield
    finally:
        client.request("DELETE", f"/variables/{key}")


def test_a_run_naming_neither_seeds_nor_providers_takes_them_from_the_variables(stack, connections, sources):  # noqa: F811
    """A scheduled run's params name no seeds and no providers: the Variables give them, start_run stores the
    params with the run, and every later task works with those."""
    conf = {key: value for key, value in CONF.items() if key != "search_providers"}
    for standin in sources.values():
        standin.reset()
    with variable(stack, "geoweb_search_providers", ["searxng"]):
        stack.unpause(MAIN_DAG)
        run_id = stack.trigger(MAIN_DAG, conf)
        state = stack.wait(MAIN_DAG, run_id, RUN_TIMEOUT)
    assert state == "success"
    ((params,),) = query("SELECT params FROM crawl_runs WHERE run_id = %s", run_id)
    assert (params["search_providers"], params["seeds"]) == (["searxng"], [])
    assert sources["searxng"].requests and not sources["datagov"].requests
    assert query("SELECT count(*) FROM frontier_urls WHERE run_id = %s AND status = 'fetched'", run_id) == [
        (2,)
    ]
