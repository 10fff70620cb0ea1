"""geoweb_catalogues on the real stack (Airflow with the CeleryExecutor, PostGIS): triggered over the REST API
as the UI does, it harvests the test web's pycsw and validates the records' links, so the services and the
file that only the catalogue knows end up in ``resources``. About 40 s."""

from __future__ import annotations

import json
import time

import psycopg2
import pytest

from stack.airflow_api import AirflowClient, AirflowError
from stack.layout import GEOWEB_DB
from tests.e2e.conftest import stack  # noqa: F401  (the fixture of the running stack: its REST client)
from tests.integration.conftest import testweb  # noqa: F401  (the fixture that starts the test web)
from testweb.catalogue import URL as PYCSW
from testweb.layout import MANIFEST

pytestmark = [pytest.mark.testweb, pytest.mark.usefixtures("testweb")]
LOCAL = ["127.0.0.1:18004", "127.0.0.1:18010", "127.0.0.1:18030", "127.0.0.1:18031"]
FINISHED = ("success", "failed")


@pytest.fixture(scope="module")
def client(request) -> AirflowClient:
    return request.getfixturevalue("stack")


def run_dag(client: AirflowClient, dag_id: str, conf: dict, timeout: float = 300.0) -> tuple[str, str]:
    """Trigger a run with ``conf`` and wait for it: (run id, final state). A paused DAG is unpaused for the run
    and paused again after; the scheduled runs unpausing starts (catchup=False: the latest interval, with the
    defaults) are failed at once, so that the triggered run does not queue behind them."""
    was_paused = client.dag(dag_id)["is_paused"]
    run_id = client.trigger(dag_id, conf)
    if was_paused:
        client.unpause(dag_id)
    try:
        deadline = time.monotonic() + timeout
        while (state := client.run(dag_id, run_id)["state"]) not in FINISHED:
            if was_paused:
                for other in client.request("GET", f"/dags/{dag_id}/dagRuns")["dag_runs"]:
                    if other["run_type"] == "scheduled" and other["state"] not in FINISHED:
                        client.request(
                            "PATCH", f"/dags/{dag_id}/dagRuns/{other['dag_run_id']}", json={"state": "failed"}
                        )
            if time.monotonic() > deadline:
                raise AirflowError(f"run {run_id} of {dag_id} is still {state} after {timeout:.0f} s")
            time.sleep(2)
    finally:
        if was_paused:
            client.request("PATCH", f"/dags/{dag_id}", json={"is_paused": True})
    return run_id, state


def returned(client: AirflowClient, dag_id: str, run_id: str, task_id: str, map_index: int = -1):
    """What a task returned (its XCom, as the UI shows it)."""
    path = f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/xcomEntries/return_value"
    return client.request("GET", path, params={"map_index": map_index})["value"]


def query(sql: str, *args) -> list[tuple]:
    with psycopg2.connect(GEOWEB_DB) as conn, conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchall()


def test_the_catalogue_dag_harvests_pycsw_and_finds_what_only_it_knows(client):
    conf = {"catalogues": [PYCSW], "allowed_hosts": LOCAL, "full": True, "shards": 2}
    run_id, state = run_dag(client, "geoweb_catalogues", conf)
    assert state == "success"
    tasks = {(t["task_id"], t["map_index"]): t for t in client.task_instances("geoweb_catalogues", run_id)}
    (pycsw,) = [t for (task, _), t in tasks.items() if task == "harvest" and t["rendered_map_index"] == PYCSW]
    counts = returned(client, "geoweb_catalogues", run_id, "harvest", pycsw["map_index"])
    assert counts["complete"] and counts["mode"] == "full" and counts["matched"] == 17
    assert returned(client, "geoweb_catalogues", run_id, "start_crawl") == 6

    crawl_run = f"catalogues__{run_id}"
    assert query("SELECT status FROM crawl_runs WHERE run_id = %s", crawl_run) == [("success",)]
    found = dict(
        query(
            "SELECT r.url || ' ' || r.type, rr.source_page FROM run_resources rr "
            "JOIN resources r ON r.id = rr.resource_id WHERE rr.run_id = %s",
            crawl_run,
        )
    )
    for resource in json.loads(MANIFEST.read_text())["resources"]:
        if resource["via"] == "catalogue":
            assert found.get(f"{resource['url']} {resource['type']}") == PYCSW, resource
