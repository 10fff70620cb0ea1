"""The first task of every DAG resolves its run's params by one rule (``geoweb_airflow.resolve_run``): a
manual run with nothing to do fails naming the params to fill, a scheduled one logs the Variables to set and
skips the rest, a Variable fills what the conf leaves empty, and a bad key fails naming it. Each first task
runs here as a worker runs it, in a task context of its own, on a fresh PostGIS database; the later tasks
read the same params back with ``run_params``."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from geoweb.harvest.params import ArchiveParams, CatalogueParams, HarvestParams, RevisitParams
from tests.dags.test_dag_integrity import DAGS as DAG_FOLDER

SEED = "https://example.org/maps/"
CSW = "https://csw.example.org/csw"
# dag id: (first task, params class, the params the rule names to fill, the Variable of a scheduled run,
# that Variable's value, what the first task returns with it)
DAGS = {
    "geoweb_crawl": ("start_run", HarvestParams, "seeds or search_providers", "geoweb_seeds", [SEED],
                     {"seeds": 1, "new": 1}),
    "geoweb_catalogues": ("catalogues", CatalogueParams, "catalogues", "geoweb_csw_catalogues", [CSW], [CSW]),
    "geoweb_archive": ("archives", ArchiveParams, "archives", "geoweb_archives", ["stac"], ["stac"]),
}  # fmt: skip
EVERY_DAG = {**{dag_id: spec[:2] for dag_id, spec in DAGS.items()}, "geoweb_revisit": ("plan", RevisitParams)}


class TaskInstance:
    """The XComs of a run's tasks, as a worker's task instance pushes and pulls them."""

    def __init__(self, task_id: str, xcoms: dict):
        self.task_id, self.xcoms = task_id, xcoms

    def xcom_push(self, key: str, value) -> None:
        self.xcoms[self.task_id, key] = json.loads(json.dumps(value))  # as the XCom table keeps it

    def xcom_pull(self, task_ids: str, key: str):
        return self.xcoms.get((task_ids, key))


@pytest.fixture(scope="module")
def bag(tmp_path_factory):
    from airflow.dag_processing.dagbag import DagBag

    with pytest.MonkeyPatch.context() as env:
        env.setenv("AIRFLOW_HOME", str(tmp_path_factory.mktemp("airflow_home")))
        env.setenv("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
        yield DagBag(dag_folder=DAG_FOLDER, known_pools={"geoweb_crawl"})


@pytest.fixture(scope="module")
def harvest_db(postgis_database):
    with postgis_database() as dsn, pytest.MonkeyPatch.context() as env:
        env.setenv("GEOWEB_DB", dsn)
        env.delenv("AIRFLOW_CONN_GEOWEB_DB", raising=False)
        yield dsn


@pytest.fixture
def variables(monkeypatch):
    """Sets Airflow Variables as the environment holds them (AIRFLOW_VAR_*); none is set to begin with."""
    for name in ("SEEDS", "SEARCH_PROVIDERS", "ALLOWED_HOSTS", "URL_POLICIES", "CSW_CATALOGUES", "ARCHIVES"):
        monkeypatch.delenv(f"AIRFLOW_VAR_GEOWEB_{name}", raising=False)
    monkeypatch.delenv("GEOWEB_CSW_CATALOGUES", raising=False)

    def set_variable(key: str, value) -> None:
        monkeypatch.setenv(f"AIRFLOW_VAR_{key.upper()}", json.dumps(value))

    return set_variable


def run_task(bag, dag_id: str, task_id: str, conf: dict, run_type: str = "manual", xcoms=None):
    """What the task returns in a run of ``dag_id`` triggered with ``conf``: its params are the DAG's
    defaults with the conf over them, unknown keys included, as Airflow hands them to a task."""
    from airflow.sdk.execution_time.context import set_current_context

    dag = bag.dags[dag_id]
    context = {
        "params": {**{name: dag.params[name] for name in dag.params}, **conf},
        "dag_run": SimpleNamespace(run_type=run_type, run_id=f"{run_type}__{dag_id}_{len(conf)}"),
        "ti": TaskInstance(task_id, {} if xcoms is None else xcoms),
        "dag": dag,
    }
    with set_current_context(context):
        return dag.get_task(task_id).python_callable()


@pytest.mark.parametrize("dag_id", sorted(DAGS))
def test_a_manual_run_with_nothing_to_do_fails_naming_the_params(bag, harvest_db, variables, dag_id):
    from airflow.sdk.exceptions import AirflowFailException

    first, _, fields, *_ = DAGS[dag_id]
    with pytest.raises(AirflowFailException, match=f"nothing to do: give {fields} in the trigger form"):
        run_task(bag, dag_id, first, {})


@pytest.mark.parametrize("dag_id", sorted(DAGS))
def test_a_scheduled_run_with_nothing_to_do_skips_the_rest_and_names_the_variable(
    bag,
    harvest_db,
    variables,
    caplog,
    dag_id,
):
    first, _, _, variable, *_ = DAGS[dag_id]
    assert bag.dags[dag_id].get_task(first).task_type == "_ShortCircuitDecoratedOperator"
    with caplog.at_level("WARNING", logger="geoweb.dags"):
        assert not run_task(bag, dag_id, first, {}, run_type="scheduled")  # falsy: the rest is skipped
    assert f"nothing to do: set the Airflow Variable {variable}" in caplog.text
    assert "this run does nothing" in caplog.text


@pytest.mark.parametrize("dag_id", sorted(DAGS))
def test_a_variable_fills_an_empty_conf_and_later_tasks_read_the_same_params(
    bag,
    harvest_db,
    variables,
    dag_id,
):
    from airflow.sdk.execution_time.context import set_current_context

    from geoweb_airflow import RUN_PARAMS, run_params

    first, params_class, _, variable, value, returned = DAGS[dag_id]
    variables(variable, value)
    if "allowed_hosts" in bag.dags[dag_id].params:
        variables("geoweb_allowed_hosts", ["127.0.0.1:8080"])
    xcoms = {}
    assert run_task(bag, dag_id, first, {}, run_type="scheduled", xcoms=xcoms) == returned
    kept = xcoms[first, RUN_PARAMS]
    assert kept[next(iter(params_class.__dataclass_fields__))] == value
    assert kept.get("allowed_hosts", ["127.0.0.1:8080"]) == ["127.0.0.1:8080"]
    variables(variable, [])  # a Variable changed during the run changes nothing in it
    with set_current_context({"dag": bag.dags[dag_id], "ti": TaskInstance("a later task", xcoms)}):
        assert run_params(params_class).to_conf() == kept


@pytest.mark.parametrize("dag_id", sorted(EVERY_DAG))
def test_a_bad_key_fails_naming_it(bag, harvest_db, variables, dag_id):
    from airflow.sdk.exceptions import AirflowFailException

    first, _ = EVERY_DAG[dag_id]
    with pytest.raises(AirflowFailException, match=r"unknown param\(s\) depth; known: "):
        run_task(bag, dag_id, first, {"depth": 3}, run_type="scheduled")


def test_a_bad_value_fails_naming_its_key(bag, harvest_db, variables):
    from airflow.sdk.exceptions import AirflowFailException

    with pytest.raises(AirflowFailException, match="param shards: 0 is less than the minimum of 1"):
        run_task(bag, "geoweb_crawl", "start_run", {"seeds": [SEED], "shards": 0})
    variables("geoweb_archives", ["landsat"])  # a Variable's value is checked as the conf's
    with pytest.raises(AirflowFailException, match=r"param archives\[0\]: 'landsat' is not one of"):
        run_task(bag, "geoweb_archive", "archives", {}, run_type="scheduled")


def test_a_revisit_always_has_work_and_its_variables_fill_its_conf(bag, harvest_db, variables):
    from geoweb_airflow import RUN_PARAMS

    policies = [{"pattern": "/tiles/", "action": "skip"}]
    variables("geoweb_allowed_hosts", ["127.0.0.1:8080"])
    variables("geoweb_url_policies", policies)
    xcoms = {}
    assert run_task(bag, "geoweb_revisit", "plan", {}, xcoms=xcoms) == []  # nothing known, nothing due
    kept = xcoms["plan", RUN_PARAMS]
    assert kept["allowed_hosts"] == ["127.0.0.1:8080"] and json.loads(kept["url_policies"]) == policies


def test_the_environment_stands_in_for_an_unset_catalogue_variable(bag, harvest_db, variables, monkeypatch):
    monkeypatch.setenv("GEOWEB_CSW_CATALOGUES", f"{CSW}, ")
    assert run_task(bag, "geoweb_catalogues", "catalogues", {}, run_type="scheduled") == [CSW]
    variables("geoweb_csw_catalogues", ["https://other.example.org/csw"])  # the Variable wins
    assert run_task(bag, "geoweb_catalogues", "catalogues", {}) == ["https://other.example.org/csw"]
