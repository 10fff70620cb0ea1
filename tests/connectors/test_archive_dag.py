"""geoweb_archive on the real stack (Airflow with the CeleryExecutor, PostGIS), reading a STAC stand-in set up
as an Airflow Connection: a run loads the scenes and shows its counts; a refused run fails its task at once
with the archive's reason and leaves what earlier runs loaded as it was; the next run goes on from the
watermark. About 30 s."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest

from stack.airflow_api import AirflowClient, AirflowError
from tests.connectors.test_csw_dag import query, returned, run_dag
from tests.e2e.conftest import stack  # noqa: F401  (the fixture of the running stack: its REST client)
from tests.standins.archive import STACStandin, make_scenes

DAG = "geoweb_archive"


@pytest.fixture(scope="module")
def client(request) -> AirflowClient:
    return request.getfixturevalue("stack")


@contextmanager
def connection(client: AirflowClient, connection_id: str, extra: dict) -> Iterator[None]:
    """An Airflow Connection for the test's duration (one left by an interrupted run is replaced)."""
    try:
        client.request("DELETE", f"/connections/{connection_id}")
    except AirflowError as exc:
        if exc.status != 404:
            raise
    client.request(
        "POST",
        "/connections",
        json={"connection_id": connection_id, "conn_type": "generic", "extra": json.dumps(extra)},
    )
    try:
        yield
    finally:
        client.request("DELETE", f"/connections/{connection_id}")


@pytest.fixture
def stac(client) -> Iterator[STACStandin]:
    with STACStandin(make_scenes(25)) as standin:
        with connection(client, "geoweb_stac", {"url": standin.url, "page_size": 10, "retries": 0}):
            yield standin
        source = f"stac:{standin.url}"
        query("DELETE FROM archive_scenes WHERE source = %s RETURNING 1", source)
        query("DELETE FROM catalogue_sources WHERE name = %s RETURNING 1", source)


def scene_count(source: str) -> int:
    return query("SELECT count(*) FROM archive_scenes WHERE source = %s", source)[0][0]


def test_archive_dag_loads_scenes_and_a_refused_run_keeps_them(client, stac):
    source = f"stac:{stac.url}"
    run_id, state = run_dag(client, DAG, {"archives": ["stac"]})
    assert state == "success"
    counts = returned(client, DAG, run_id, "harvest", 0)
    assert counts["new"] == 25 and counts["pages"] == 3 and scene_count(source) == 25
    (watermark,) = query("SELECT watermark FROM catalogue_sources WHERE name = %s", source)[0]

    newest = max(s.acquired_at for s in stac.scenes)
    stac.scenes.extend(make_scenes(5, newest + timedelta(hours=1), prefix="FS2"))
    stac.fail(page=1, kind="quota")
    run_id, state = run_dag(client, DAG, {"archives": ["stac"]})
    assert state == "failed"
    (harvest,) = [t for t in client.task_instances(DAG, run_id) if t["task_id"] == "harvest"]
    assert harvest["state"] == "failed" and harvest["try_number"] == 1  # a spent quota is not retried
    status, error, kept = query(
        "SELECT last_status, last_error, watermark FROM catalogue_sources WHERE name = %s", source
    )[0]
    assert status == "failed" and "page 1: HTTP 429" in error and kept == watermark
    assert scene_count(source) == 25

    stac.reset()
    run_id, state = run_dag(client, DAG, {"archives": ["stac"]})
    assert state == "success"
    counts = returned(client, DAG, run_id, "harvest", 0)
    assert counts["new"] == 5 and counts["since"] == watermark.isoformat() and scene_count(source) == 30
