"""Every DAG in dags/ loads, has tags and retries, and parses offline; geoweb_crawl's Params validate run confs
as the trigger form, the CLI and the REST API will, in agreement with the harvest steps."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from geoweb.harvest.params import MAX_LEVEL, ArchiveParams, CatalogueParams, HarvestParams, RevisitParams
from geoweb.paramspec import InvalidParams

DAGS = Path(__file__).parents[2] / "dags"
SEED = "https://example.org/maps/"
# Parses dags/ in a fresh interpreter, recording every connection attempt and the geoweb modules imported.
PARSE_OFFLINE = """
import json, socket, sys
import psycopg2
from airflow.sdk import Connection, Variable

attempts = []
def record(what):
    def attempt(*args, **kwargs):
        attempts.append(what)
        raise OSError(what + " at parse time")
    return attempt
socket.socket.connect = record("socket.connect")
socket.socket.connect_ex = record("socket.connect_ex")
psycopg2.connect = record("psycopg2.connect")
Connection.get = staticmethod(record("Connection.get"))
Variable.get = staticmethod(record("Variable.get"))

from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder=sys.argv[1])
print(json.dumps({"dags": sorted(bag.dags), "errors": bag.import_errors, "attempts": attempts,
                  "geoweb": sorted(m for m in sys.modules if m.split(".")[0] == "geoweb")}))
"""
# What parsing may import of the library: the parameters and what they are made of, nothing that fetches.
PARSE_TIME_MODULES = {
    "geoweb", "geoweb.errors", "geoweb.harvest", "geoweb.harvest.params", "geoweb.paramspec", "geoweb.settings",
    "geoweb.models", "geoweb.models.crawl", "geoweb.models.records", "geoweb.models.resources",
    "geoweb.models.revisit",
}  # fmt: skip


@pytest.fixture(scope="module")
def airflow_home(tmp_path_factory):
    with pytest.MonkeyPatch.context() as env:
        env.setenv("AIRFLOW_HOME", str(tmp_path_factory.mktemp("airflow_home")))
        env.setenv("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
        yield


@pytest.fixture(scope="module")
def dagbag(airflow_home):
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=DAGS, known_pools={"geoweb_crawl"})


@pytest.fixture(scope="module")
def crawl_dag(dagbag):
    """geoweb_crawl as the scheduler and the API server see it: serialized and read back."""
    from airflow.serialization.serialized_objects import DagSerialization

    return DagSerialization.from_dict(DagSerialization.to_dict(dagbag.dags["geoweb_crawl"]))


def test_dags_import_with_tags_and_retries(dagbag):
    assert dagbag.import_errors == {}
    assert "geoweb_crawl" in dagbag.dags
    for dag_id, dag in dagbag.dags.items():
        assert dag.tags, f"{dag_id} has no tags"
        for task in dag.tasks:
            assert task.retries >= 2, f"{dag_id}.{task.task_id} retries {task.retries}"


def test_parsing_opens_no_connection_and_imports_no_crawl_code(airflow_home):
    parsed = subprocess.run(
        [sys.executable, "-c", PARSE_OFFLINE, str(DAGS)], capture_output=True, text=True, timeout=120
    )
    assert parsed.returncode == 0, parsed.stderr[-3000:]
    result = json.loads(parsed.stdout.splitlines()[-1])
    assert result["errors"] == {} and "geoweb_crawl" in result["dags"]
    assert result["attempts"] == []
    assert set(result["geoweb"]) <= PARSE_TIME_MODULES, result["geoweb"]


def test_crawl_dag_shape(dagbag):
    dag = dagbag.dags["geoweb_crawl"]
    assert dag.max_active_runs == 1 and dag.catchup is False
    assert dag.schedule == "@weekly"
    assert dag.doc_md and all(param.description for param in dag.params.values())
    upstream = {task.task_id: task.upstream_task_ids for task in dag.tasks}
    assert upstream["seed_search"] == {"start_run"}
    assert upstream["plan_level_0"] == {"seed_search"}
    for level in range(MAX_LEVEL + 1):
        crawl = dag.get_task(f"crawl_level_{level}")
        assert crawl.pool == "geoweb_crawl"
        assert upstream[f"crawl_level_{level}"] == {f"plan_level_{level}"}
        # an empty level skips its crawl task; the next plan and finish_run still run
        assert dag.get_task(f"plan_level_{level}").trigger_rule == "none_failed"
        if level:
            assert upstream[f"plan_level_{level}"] == {f"crawl_level_{level - 1}"}
    assert upstream["finish_run"] == {f"crawl_level_{MAX_LEVEL}"}
    assert dag.get_task("finish_run").trigger_rule == "none_failed"


GOOD = [
    {"seeds": [SEED]},
    {"seeds": [SEED, "http://127.0.0.1:8080/"], "allowed_hosts": ["127.0.0.1:8080"], "max_level": 0},
    {"seeds": [SEED], "types": ["WMS", "KML"], "keywords": ["flood"], "shards": 256, "per_host_delay": 1.5},
]
BAD = [
    {"seeds": [SEED], "max_level": MAX_LEVEL + 1},
    {"seeds": ["ftp://example.org/"]},
    {"seeds": SEED},
    {"seeds": [SEED], "types": ["OGCAPI"]},
    {"seeds": [SEED], "types": []},
    {"seeds": [SEED], "search_providers": ["bing"]},
    {"seeds": [SEED], "shards": 0},
    {"seeds": [SEED], "per_host_concurrency": 100},
    {"seeds": [SEED], "allowed_hosts": ["a host"]},
]


def validate(crawl_dag, conf: dict) -> dict:
    """Airflow's own check of a run conf, as on triggering a run."""
    return crawl_dag.params.deep_merge(conf).validate()


@pytest.mark.parametrize("conf", GOOD)
def test_good_conf_is_accepted_by_airflow_and_the_steps_alike(crawl_dag, conf):
    resolved = validate(crawl_dag, conf)
    assert HarvestParams.from_conf(resolved).to_conf() == resolved


@pytest.mark.parametrize("conf", BAD)
def test_bad_conf_is_refused_by_airflow_and_the_steps_alike(crawl_dag, conf):
    from airflow.sdk.exceptions import ParamValidationError

    key = next(k for k in conf if k != "seeds") if len(conf) > 1 else "seeds"
    with pytest.raises(ParamValidationError, match=f"param {key}"):
        validate(crawl_dag, conf)
    with pytest.raises(InvalidParams, match=f"param {key}"):
        HarvestParams.from_conf(conf)


# --- the trigger forms, as Airflow's UI reads the params (its isParamRequired and FlexibleForm) ---

FORMS = {"geoweb_crawl": HarvestParams, "geoweb_catalogues": CatalogueParams, "geoweb_archive": ArchiveParams,
         "geoweb_revisit": RevisitParams}  # fmt: skip
NEEDED = {"geoweb_crawl": {"seeds": [SEED]}}  # what the form says a run needs besides the defaults


def form_params(dagbag, dag_id: str) -> dict:
    from airflow.serialization.serialized_objects import DagSerialization

    dag = DagSerialization.from_dict(DagSerialization.to_dict(dagbag.dags[dag_id]))
    return dag.params


def optional(schema: dict) -> bool:
    return isinstance(schema["type"], list) and "null" in schema["type"]


@pytest.mark.parametrize("dag_id", sorted(FORMS))
def test_each_form_is_valid_with_its_defaults_and_requires_only_what_has_a_value(dagbag, dag_id):
    params = form_params(dagbag, dag_id)
    resolved = params.validate()  # the defaults, as a scheduled run takes them
    schemas = {name: params.get_param(name).schema for name in params}
    for name, schema in schemas.items():
        assert params.get_param(name).description and schema.get("title"), name
        # the form marks a field whose type excludes null as required, and flags it when null or ""
        if not optional(schema):
            assert resolved[name] not in (None, ""), f"{name}: required, with an empty default"
    # fields without a section fill the first, open section; the rest wait collapsed
    assert any("section" not in schema for schema in schemas.values())
    for schema in schemas.values():
        if "array" in schema["type"] and "enum" in schema.get("items", {}):
            assert schema["examples"] == schema["items"]["enum"]  # a multi-select


@pytest.mark.parametrize("dag_id", sorted(FORMS))
def test_a_form_with_every_optional_field_left_empty_is_a_valid_run(dagbag, dag_id):
    params = form_params(dagbag, dag_id)
    emptied = {name: None for name in params if optional(params.get_param(name).schema)}
    conf = params.deep_merge({**emptied, **NEEDED.get(dag_id, {})}).validate()
    assert FORMS[dag_id].from_conf(conf) == FORMS[dag_id].from_conf(NEEDED.get(dag_id, {}))
