"""Scheduled runs on a fresh deployment: every geoweb DAG started by the scheduler with no conf (its params'
defaults, as a schedule fires it), with nothing configured and then with the Variables `make demo` sets.
None fails: with nothing configured a run does nothing and its log names the Variable to set; with the
Variables the weekly crawl harvests the test web and the daily catalogue harvest its catalogue.

The runs are backfills of past intervals, which the scheduler creates and runs like scheduled ones, so each
case gets a run of its own; unpausing a DAG also fires its latest interval, which must not fail either. The
module runs first of all tests (``tests/conftest.py``), while the stack and its database are as fresh as a
new deployment's.
"""

from __future__ import annotations

import time

import psycopg2
import pytest

from stack.airflow_api import TERMINAL_RUN_STATES, AirflowClient, AirflowError
from stack.demo import schedule_variables
from stack.layout import AIRFLOW_HOME, GEOWEB_DB
from tests.integration.test_crawl_testweb import planted
from testweb import catalogue

pytestmark = pytest.mark.testweb

RUN_TIMEOUT = 300.0
DAGS = ("geoweb_crawl", "geoweb_catalogues", "geoweb_archive", "geoweb_revisit")
VARIABLES = ("geoweb_seeds", "geoweb_search_providers", "geoweb_allowed_hosts", "geoweb_csw_catalogues",
             "geoweb_archives", "geoweb_url_policies")  # fmt: skip
UNCONFIGURED, CONFIGURED = "2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z"  # Sundays: a weekly interval each
NEXT_WEEKS = ("2026-01-18T00:00:00Z", "2026-01-25T00:00:00Z")


@pytest.fixture(scope="module", autouse=True)
def paused_before(stack) -> dict[str, bool]:
    """Which DAGs were paused when the module began: only their first unpausing is a fresh deployment's."""
    return {dag_id: stack.dag(dag_id)["is_paused"] for dag_id in DAGS}


def scheduled_run(client: AirflowClient, dag_id: str, when: str) -> dict:
    """The DAG's run for the interval at ``when``, created by the scheduler without conf, once it ended."""
    client.unpause(dag_id)
    backfill = client.request("POST", "/backfills", json={
        "dag_id": dag_id, "from_date": when, "to_date": when, "run_backwards": False, "dag_run_conf": {},
        "reprocess_behavior": "completed", "max_active_runs": 1,
    })  # fmt: skip
    deadline = time.monotonic() + RUN_TIMEOUT
    while True:
        runs = [r for r in client.runs(dag_id) if r["run_type"] == "backfill" and r["logical_date"] == when]
        # the backfill ends a moment after its run: a DAG has one backfill at a time
        done = client.request("GET", f"/backfills/{backfill['id']}")["completed_at"] is not None
        if done and runs and runs[-1]["state"] in TERMINAL_RUN_STATES:
            return runs[-1]
        assert time.monotonic() < deadline, f"{dag_id}: the run of {when} did not end in {RUN_TIMEOUT:.0f} s"
        time.sleep(2)


def task_log(dag_id: str, run_id: str, task_id: str) -> str:
    logs = AIRFLOW_HOME / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}" / f"task_id={task_id}"
    return "\n".join(p.read_text(errors="replace") for p in sorted(logs.rglob("*.log")))


def failed_tasks(client: AirflowClient, dag_id: str, run_id: str) -> list[str]:
    return [
        t["task_id"]
        for t in client.task_instances(dag_id, run_id)
        if t["state"] in ("failed", "upstream_failed")
    ]


@pytest.fixture
def variables(stack):
    """The Variables of a deployment, cleared for the test and put back as they were afterwards."""
    kept = {}
    for key in VARIABLES:
        try:
            kept[key] = stack.request("GET", f"/variables/{key}")
        except AirflowError as exc:
            if exc.status != 404:
                raise
        stack.delete_variable(key)
    yield stack
    for key in VARIABLES:
        stack.delete_variable(key)
        if key in kept:
            stack.request(
                "POST", "/variables", json={k: kept[key][k] for k in ("key", "value", "description")}
            )


def known_catalogues() -> int:
    """CSWs a crawl has loaded: the catalogue DAG harvests them even with nothing configured. A database not
    migrated yet knows none."""
    with psycopg2.connect(GEOWEB_DB) as conn, conn.cursor() as cur:
        cur.execute("SELECT to_regclass('resources') IS NOT NULL")
        if not cur.fetchone()[0]:
            return 0
        cur.execute("SELECT count(*) FROM resources WHERE type = 'CSW'")
        return cur.fetchone()[0]


def why_failed(client: AirflowClient, dag_id: str, run_id: str) -> str:
    """The failed tasks of a run with the last lines of their logs, for the assertion's message."""
    return "\n".join(
        f"{task}:\n" + "\n".join(task_log(dag_id, run_id, task).splitlines()[-25:])
        for task in failed_tasks(client, dag_id, run_id)
    )


def test_with_nothing_configured_a_scheduled_run_does_nothing_and_says_which_variable_to_set(variables):
    stack = variables
    fresh = [d for d in DAGS if d != "geoweb_catalogues" or not known_catalogues()]
    runs = {dag_id: scheduled_run(stack, dag_id, UNCONFIGURED) for dag_id in fresh}
    for dag_id, run in runs.items():
        assert run["state"] == "success", f"{dag_id}: {why_failed(stack, dag_id, run['dag_run_id'])}"
    crawl = runs["geoweb_crawl"]["dag_run_id"]
    assert "set the Airflow Variable geoweb_seeds" in task_log("geoweb_crawl", crawl, "start_run")
    later = {t["state"] for t in stack.task_instances("geoweb_crawl", crawl) if t["task_id"] != "start_run"}
    assert later == {"skipped"}
    archive = runs["geoweb_archive"]["dag_run_id"]
    assert "set the Airflow Variable geoweb_archives" in task_log("geoweb_archive", archive, "archives")


def test_with_the_demo_variables_the_scheduled_crawl_and_catalogue_harvest_the_test_web(variables, testweb):
    stack = variables
    for key, value in schedule_variables(testweb).items():
        stack.set_variable(key, value)
    crawl = scheduled_run(stack, "geoweb_crawl", CONFIGURED)
    assert crawl["state"] == "success", why_failed(stack, "geoweb_crawl", crawl["dag_run_id"])
    with psycopg2.connect(GEOWEB_DB) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT r.url, r.type FROM run_resources rr JOIN resources r ON r.id = rr.resource_id "
            "WHERE rr.run_id = %s",
            (crawl["dag_run_id"],),
        )
        found = set(cur.fetchall())
    assert set(planted(testweb, "links")) <= found
    harvest = scheduled_run(stack, "geoweb_catalogues", CONFIGURED)
    assert harvest["state"] == "success", why_failed(stack, "geoweb_catalogues", harvest["dag_run_id"])
    harvested = [
        t
        for t in stack.task_instances("geoweb_catalogues", harvest["dag_run_id"])
        if t["task_id"] == "harvest"
    ]
    assert catalogue.URL in {t["rendered_map_index"] for t in harvested}


def run_row(run_id: str) -> tuple[str, dict, set[tuple[str, str]]]:
    """A crawl run's crawl name, its summary's costs, and the (url, type) of the resources it found."""
    with psycopg2.connect(GEOWEB_DB) as conn, conn.cursor() as cur:
        cur.execute("SELECT crawl, summary FROM crawl_runs WHERE run_id = %s", (run_id,))
        crawl, summary = cur.fetchone()
        cur.execute(
            "SELECT r.url, r.type FROM run_resources rr JOIN resources r ON r.id = rr.resource_id "
            "WHERE rr.run_id = %s",
            (run_id,),
        )
        return crawl, summary["costs"], set(cur.fetchall())


def test_the_next_scheduled_crawl_continues_the_last_one(variables, testweb):
    """Scheduled runs (no conf) of the crawl the demo Variables name, a week apart: each is the same crawl,
    asks what the one before read with its validators, carries over what did not change, and confirms every
    resource the one before found. (Two more runs: the first of them may read whole what a run of other
    code read.)"""
    stack = variables
    for key, value in schedule_variables(testweb).items():
        stack.set_variable(key, value)
    runs = [scheduled_run(stack, "geoweb_crawl", when) for when in NEXT_WEEKS]
    for run in runs:
        assert run["state"] == "success", why_failed(stack, "geoweb_crawl", run["dag_run_id"])
    (crawl, before, found_before), (again, after, found_after) = (run_row(r["dag_run_id"]) for r in runs)
    assert crawl == again and crawl.startswith("seeds:")
    assert found_after == found_before and set(planted(testweb, "links")) <= found_after
    # nothing on the test web changed: no page is new to the crawl, and what it read before is carried over
    assert after["new_pages"] == 0 and after["not_modified"] + after["same_bytes"] > 0, (before, after)
    assert (after["bytes_saved"] > 0) == (after["not_modified"] > 0)  # a 304 saves the body its page had


def test_no_run_the_scheduler_fired_has_failed(stack, paused_before):
    """Unpausing each DAG fired its latest interval: those runs end well too."""
    fresh = [dag_id for dag_id, paused in paused_before.items() if paused]
    if not fresh:
        pytest.skip("every DAG was unpaused before this module began: the stack is not a fresh deployment's")
    for dag_id in fresh:
        deadline = time.monotonic() + RUN_TIMEOUT
        while True:
            runs = [r for r in stack.runs(dag_id) if r["run_type"] == "scheduled"]
            if all(r["state"] in TERMINAL_RUN_STATES for r in runs):
                break
            assert time.monotonic() < deadline, f"{dag_id}: scheduled runs still running"
            time.sleep(2)
        assert runs, f"{dag_id}: the scheduler fired no run"
        failed = [r["dag_run_id"] for r in runs if r["state"] == "failed"]
        assert failed == [], "\n".join(f"{dag_id} {run}: {why_failed(stack, dag_id, run)}" for run in failed)
