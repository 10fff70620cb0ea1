"""geoweb_revisit loads, is wired as documented, parses without touching the library's crawl code, and its
Params validate run confs as ``RevisitParams`` does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from geoweb.harvest.params import RevisitParams
from geoweb.paramspec import InvalidParams
from tests.dags.test_dag_integrity import DAGS, PARSE_OFFLINE, PARSE_TIME_MODULES

DAG_FILE = DAGS / "geoweb_revisit.py"


@pytest.fixture(scope="module")
def revisit_dag(tmp_path_factory):
    from airflow.dag_processing.dagbag import DagBag

    with pytest.MonkeyPatch.context() as env:
        env.setenv("AIRFLOW_HOME", str(tmp_path_factory.mktemp("airflow_home")))
        env.setenv("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
        bag = DagBag(dag_folder=DAG_FILE, known_pools={"geoweb_crawl"})
        assert bag.import_errors == {}
        yield bag.dags["geoweb_revisit"]


@pytest.fixture(scope="module")
def serialized(revisit_dag):
    """geoweb_revisit as the scheduler and the API server see it: serialized and read back."""
    from airflow.serialization.serialized_objects import DagSerialization

    return DagSerialization.from_dict(DagSerialization.to_dict(revisit_dag))


def test_dag_is_hourly_with_checks_mapped_in_the_crawl_pool(revisit_dag):
    dag = revisit_dag
    assert dag.schedule == "@hourly" and dag.max_active_runs == 1 and dag.catchup is False
    assert dag.tags and dag.doc_md and all(param.description for param in dag.params.values())
    upstream = {task.task_id: task.upstream_task_ids for task in dag.tasks}
    assert upstream == {"plan": set(), "check": {"plan"}, "summarize": {"check"}}
    assert dag.get_task("check").pool == "geoweb_crawl"
    assert dag.get_task("summarize").trigger_rule == "none_failed"  # runs when nothing was due
    assert all(task.retries >= 2 for task in dag.tasks)


def test_parsing_imports_only_the_params(tmp_path):
    folder = tmp_path / "dags"
    folder.mkdir()
    (folder / DAG_FILE.name).write_text(DAG_FILE.read_text(encoding="utf-8"), encoding="utf-8")
    parsed = subprocess.run(
        [sys.executable, "-c", PARSE_OFFLINE, str(folder)], capture_output=True, text=True, timeout=120,
        env={"AIRFLOW_HOME": str(tmp_path), "AIRFLOW__CORE__LOAD_EXAMPLES": "False", "PATH": ""},
    )  # fmt: skip
    assert parsed.returncode == 0, parsed.stderr[-3000:]
    result = json.loads(parsed.stdout.splitlines()[-1])
    assert result["errors"] == {} and result["dags"] == ["geoweb_revisit"] and result["attempts"] == []
    assert set(result["geoweb"]) <= PARSE_TIME_MODULES


GOOD = [
    {},
    {"batch_size": 1, "types": ["WMS", "KML"], "dead_after": 1, "shards": 256},
    {"min_interval_hours": 0.25, "max_interval_hours": 0.25, "allowed_hosts": ["127.0.0.1:18010"]},
]
BAD = [
    {"batch_size": 0},
    {"batch_size": 10_001},
    {"dead_after": "3"},
    {"types": ["OGCAPI"]},
    {"types": []},
    {"min_interval_hours": 0},
    {"max_interval_hours": -1},
    {"allowed_hosts": ["a host"]},
    {"per_host_delay": 31},
]


def validate(dag, conf: dict) -> dict:
    """Airflow's own check of a run conf, as on triggering a run."""
    return dag.params.deep_merge(conf).validate()


@pytest.mark.parametrize("conf", GOOD)
def test_good_conf_is_accepted_by_airflow_and_the_steps_alike(serialized, conf):
    resolved = validate(serialized, conf)
    assert RevisitParams.from_conf(resolved).to_conf() == resolved


@pytest.mark.parametrize("conf", BAD)
def test_bad_conf_is_refused_by_airflow_and_the_steps_alike(serialized, conf):
    from airflow.sdk.exceptions import ParamValidationError

    [key] = conf
    with pytest.raises(ParamValidationError, match=f"param {key}"):
        validate(serialized, conf)
    with pytest.raises(InvalidParams, match=f"param {key}"):
        RevisitParams.from_conf(conf)


def test_intervals_out_of_order_are_refused_by_the_steps():
    with pytest.raises(InvalidParams, match="min_interval_hours: above max_interval_hours"):
        RevisitParams.from_conf({"min_interval_hours": 48, "max_interval_hours": 24})


def test_an_airflow_run_checks_what_is_due_and_obeys_the_policy_variable(postgis_database, tmp_path):
    """``airflow dags test`` (one process, SQLite metadata): plan, one mapped check, summarize, on PostGIS."""
    from geoweb.store import Store
    from tests.hostile.servers import PagesServer
    from tests.hostile.test_revisit_hostile import CAPABILITIES, crawled, wms_at

    airflow = [str(Path(sys.executable).with_name("airflow"))]
    pages = {"/wms": ("text/xml", CAPABILITIES), "/tiles/wms": ("text/xml", CAPABILITIES)}
    with postgis_database() as dsn, PagesServer(pages) as server:
        with Store(dsn) as store:
            store.migrate()
            crawled(store, wms_at(server.url("/wms")), wms_at(server.url("/tiles/wms")))
            with store.transaction() as cur:
                cur.execute("UPDATE resources SET last_seen = now() - interval '2 days'")  # due
        env = {
            **os.environ, "GEOWEB_DB": dsn, "AIRFLOW_HOME": str(tmp_path), "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
            "AIRFLOW_VAR_GEOWEB_URL_POLICIES": json.dumps([{"pattern": "/tiles/", "action": "skip"}]),
        }  # fmt: skip
        subprocess.run([*airflow, "db", "migrate"], env=env, capture_output=True, check=True, timeout=120)
        conf = json.dumps({"allowed_hosts": [server.hostport]})
        ran = subprocess.run(
            [*airflow, "dags", "test", "geoweb_revisit", "--conf", conf],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
        with Store(dsn) as store, store.transaction() as cur:
            cur.execute(
                "SELECT r.url, c.outcome, c.run_id, s.next_check_at > now() + interval '29 days' "
                "FROM resources r JOIN resource_schedule s ON s.resource_id = r.id "
                "LEFT JOIN resource_checks c ON c.resource_id = r.id AND c.operation = 'GetCapabilities' "
                "ORDER BY r.url"
            )
            rows = cur.fetchall()
            cur.execute(
                "SELECT operation, outcome, error_reason FROM resource_checks WHERE operation = 'GetMap'"
            )
            maps = cur.fetchall()
    by_url = {url: row for url, *row in rows}
    assert len(rows) == 2
    outcome, run_id, postponed = by_url[server.url("/wms")]
    assert (outcome, run_id.startswith("manual__"), postponed) == ("unchanged", True, False)
    assert by_url[server.url("/tiles/wms")] == [None, None, True]  # skipped: no check, postponed
    # operation checks run by default; this server answers its capabilities to a GetMap too
    assert maps == [("GetMap", "failed", "not_image")]
    assert "skipped      1" in ran.stdout and "checked      1" in ran.stdout
