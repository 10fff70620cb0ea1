"""geoweb_crawl end to end on the real stack: triggered from the Airflow UI's form in headless Chromium with
only what the form says is needed, run by two Celery workers, loaded into PostGIS, and checked against the
test web's ground truth and through the run's GeoWeb report tab; then a crawl's later runs triggered from
the form with a revisit budget in megabytes and a time budget, a worker killed in the middle of a crawl, and
the same crawl run again (over the REST API).

Six runs in all: about 4 minutes, most of it the killed task waiting out its heartbeat timeout and its
retry delay.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit

import psycopg2
import pytest

from geoweb.harvest.params import POLITENESS
from stack import supervisor, workers
from stack.airflow import JWT_SECRET_FILE, MAIN_DAG
from stack.airflow_api import AirflowClient, admin_password
from stack.demo import crawl_conf, run_crawl
from stack.layout import AIRFLOW_DB, AIRFLOW_HOME, GEOWEB_DB, LOGS, REPO
from tests.e2e.airflow_ui import REPORT, TriggerForm
from tests.integration.test_crawl_testweb import MAX_LEVEL, describe, planted

pytestmark = pytest.mark.testweb

RUN_TIMEOUT = 240.0
DOCS = REPO / "docs"  # the screenshots of the form and the report tab
REPORT_PLOT = f"{REPORT}.querySelector('#plot')"


@dataclass(frozen=True)
class Found:
    """A resource as a run loaded it: its row in ``resources`` and what the run recorded for it."""

    url: str
    type: str
    level: int  # of this run (run_resources)
    datasets: tuple[str, ...]  # names, in document order
    resource_id: int
    first_seen: datetime
    last_seen: datetime

    @property
    def key(self) -> tuple[str, str]:
        return self.url, self.type


@dataclass(frozen=True)
class Run:
    run_id: str
    state: str
    found: dict[tuple[str, str], Found]
    frontier: set[str]  # every URL of the run's frontier
    seconds: float


def query(sql: str, *args) -> list[tuple]:
    with psycopg2.connect(GEOWEB_DB) as conn, conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchall()


def loaded(run_id: str) -> Run:
    rows = query(
        "SELECT r.url, r.type, rr.level, r.id, r.first_seen, r.last_seen, "
        "coalesce((SELECT array_agg(coalesce(d.name, '') ORDER BY d.position) FROM datasets d "
        "WHERE d.resource_id = r.id), '{}') "
        "FROM run_resources rr JOIN resources r ON r.id = rr.resource_id WHERE rr.run_id = %s",
        run_id,
    )
    found = {}
    for url, type_, level, id_, first, last, names in rows:
        assert (url, type_) not in found, f"{type_} {url} loaded twice by run {run_id}"
        found[(url, type_)] = Found(url, type_, level, tuple(names), id_, first, last)
    frontier = {url for (url,) in query("SELECT url FROM frontier_urls WHERE run_id = %s", run_id)}
    return Run(run_id, "", found, frontier, 0.0)


def crawl(client: AirflowClient, conf: dict) -> Run:
    started = time.monotonic()
    run_id, state = run_crawl(client, conf, timeout=RUN_TIMEOUT)
    run = loaded(run_id)
    return Run(run_id, state, run.found, run.frontier, time.monotonic() - started)


def executed() -> dict[str, int]:
    """Celery tasks each worker has executed since it started."""
    return {
        name: sum(stats.get("total", {}).values()) for name, stats in workers.answering(timeout=2).items()
    }


@dataclass(frozen=True)
class Forms:
    """The trigger form as it opened, and once filled with the documented minimum."""

    opened: TriggerForm
    filled: TriggerForm


@pytest.fixture(scope="module")
def first_run(stack, testweb, logged_in) -> tuple[Run, dict[str, int], Forms]:
    """The crawl of the test web triggered from the form with its seeds and loopback host alone, how many
    tasks each worker ran for it, and what the form showed."""
    stack.unpause(MAIN_DAG)
    before = executed()
    started = time.monotonic()
    ui = logged_in
    opened = ui.open_trigger_form(MAIN_DAG)
    ui.fill("seeds", "\n".join(testweb["seeds"]))
    ui.fill("allowed_hosts", "127.0.0.1")
    filled = ui.form()
    ui.browser.screenshot(DOCS / "airflow-trigger-form.png")
    run_id = ui.trigger()
    ui.browser.navigate("about:blank")
    state = stack.wait(MAIN_DAG, run_id, RUN_TIMEOUT)
    run = loaded(run_id)
    after = executed()
    run = Run(run_id, state, run.found, run.frontier, time.monotonic() - started)
    return run, {name: after[name] - before[name] for name in workers.NAMES}, Forms(opened, filled)


def test_the_run_succeeds_with_tasks_on_both_workers(first_run):
    run, tasks_by_worker, _ = first_run
    print(f"\nfirst run: {run.seconds:.0f} s, tasks per worker {tasks_by_worker}")
    assert run.state == "success"
    assert all(n > 0 for n in tasks_by_worker.values()), tasks_by_worker


def test_postgis_holds_every_linked_resource_and_nothing_else(testweb, first_run):
    run, *_ = first_run
    expected = planted(testweb, "links")
    assert expected
    missing = [expected[key] for key in sorted(set(expected) - set(run.found))]
    assert not missing, f"{len(missing)} of {len(expected)} linked resources not loaded:\n{describe(missing)}"
    allowed = planted(testweb, "links", "catalogue")
    wrong = [f"  {f.type:9} {f.url}" for f in run.found.values() if f.key not in allowed]
    assert not wrong, "loaded but not planted within reach:\n" + "\n".join(wrong)


def test_levels_and_datasets_are_the_ground_truth(testweb, first_run):
    run, *_ = first_run
    wrong = []
    for key, truth in planted(testweb, "links").items():
        found = run.found[key]
        names = {name.rpartition(":")[2] for name in found.datasets}
        if found.level != truth["level"]:
            wrong.append(f"  {found.type:9} {found.url}: level {found.level}, planted at {truth['level']}")
        if found.type != "CSW" and not set(truth["datasets"]) <= names:  # a catalogue's records are not rows
            wrong.append(f"  {found.type:9} {found.url}: datasets {sorted(names)} lack {truth['datasets']}")
    assert not wrong, "\n".join(wrong)
    assert max(f.level for f in run.found.values()) <= MAX_LEVEL


# What a crawl needs is seeds (and the hosts of a local web); everything else has a default or may be empty.
OPTIONAL = {"Seeds", "Allowed hosts", "Search providers", "Keywords", "Keywords by type", "Link min score",
            "Url policies"}  # fmt: skip
SECTIONS = ["Run Parameters", "Search seeding", "Politeness and scale", "Link priority and URL policies"]


def test_the_form_opens_valid_marking_only_what_must_have_a_value(first_run):
    _, _, forms = first_run
    for form in (forms.opened, forms.filled):
        assert form.can_trigger
        assert not any(form.sections.values()), f"sections marked in error: {form.sections}"
    opened = forms.opened
    assert list(opened.sections) == SECTIONS
    assert opened.open_sections == ["Run Parameters"]  # the long defaults wait in collapsed sections
    assert set(opened.labels) >= OPTIONAL
    marked = {label for label, required in opened.labels.items() if required}
    assert not marked & OPTIONAL, f"optional fields marked required: {sorted(marked & OPTIONAL)}"
    assert {"Max level", "Types"} <= marked


def test_types_and_providers_are_multi_selects_and_keywords_wait_collapsed(ui):
    ui.open_trigger_form(MAIN_DAG)
    for param in ("types", "search_providers"):
        assert ui.browser.evaluate(f"!!document.querySelector('#element_{param} input')"), param
    section = "document.querySelector('#element_keywords_by_type').closest('[data-part=item]')"
    assert ui.browser.evaluate(f"{section}.getAttribute('data-state')") == "closed"


def test_a_required_field_left_empty_marks_its_section_and_blocks_trigger(ui):
    """The marks the other form tests read are there when a value is missing."""
    ui.open_trigger_form(MAIN_DAG)
    ui.fill("max_level", "")
    form = ui.browser.wait_for("true") and ui.form()
    assert form.sections["Run Parameters"] and not form.can_trigger
    assert not form.sections["Politeness and scale"]


def test_crawl_tasks_are_labelled_by_shard_and_hosts_and_log_what_they_find(stack, first_run):
    run, *_ = first_run
    crawls = [  # a level its shards' tasks ran ahead through has no shard left: its task is skipped, unmapped
        t for t in stack.task_instances(MAIN_DAG, run.run_id)
        if t["task_id"].startswith("crawl_level_") and t["map_index"] >= 0
    ]  # fmt: skip
    assert crawls
    for ti in crawls:
        label = ti["rendered_map_index"] or ""
        assert label.startswith("shard ") and "127.0.0.1:" in label, (
            f"{ti['task_id']}[{ti['map_index']}]: {label!r}"
        )
    logs = AIRFLOW_HOME / "logs" / f"dag_id={MAIN_DAG}" / f"run_id={run.run_id}"
    text = "\n".join(p.read_text(errors="replace") for p in logs.glob("task_id=crawl_level_*/**/*.log"))
    for found in run.found.values():
        assert f"found {found.type} {found.url} ({len(found.datasets)} datasets)" in text, found.key


def test_the_report_tab_shows_the_levels_the_plot_and_links_into_geohub(stack, ui, first_run):
    run, *_ = first_run
    ui.open_report(MAIN_DAG, run.run_id)
    ui.browser.screenshot(DOCS / "airflow-run-report.png")
    levels = ui.report_table("levels")
    ((summary,),) = query("SELECT summary FROM crawl_runs WHERE run_id = %s", run.run_id)  # finish_run's
    assert [[int(r[0]), int(r[1]), int(r[2])] for r in levels[:-1]] == [
        [s["level"], s["urls"], s["resources"]] for s in summary["levels"]
    ]
    assert levels[-1][0] == "all" and int(levels[-1][2]) == len(run.found)
    by_type = {kind: int(n) for kind, n in ui.report_table("types")}
    assert sum(by_type.values()) == len(run.found)
    assert ui.browser.wait_for(f"{REPORT_PLOT}.complete && {REPORT_PLOT}.naturalWidth", timeout=30) > 600
    link = ui.report("doc.querySelector('#geohub-link').href")
    # the link opens GeoHub on the run's resources, footprint or not
    ui.browser.navigate(link)
    ui.browser.wait_for(f"document.querySelector('#run').value === {json.dumps(run.run_id)}")
    assert ui.browser.wait_for("document.querySelectorAll('#hits li').length") == min(20, len(run.found))
    assert not ui.browser.evaluate("document.querySelector('#in-view').checked")


# Past the seeds' level, shards run on through the MapServer endpoints, probed with many requests: they last
# longest. (A shard at level 0 may end before it is caught.)
LONG_TASKS = tuple(f"crawl_level_{level}" for level in range(1, 6))


def test_the_forms_budgets_carry_what_the_crawl_knows_and_defer_what_is_new(stack, testweb, ui):
    """A crawl's later runs triggered from the form with its budgets: with revisit_megabytes 0 the second run
    asks again no page the first read (each carried over, not due) and reads the one seed new to the crawl;
    with a time budget spent before its first crawl task, the third sends no request and defers its new seed,
    and its report tab says why. Both confirm every resource the first run found."""
    stack.unpause(MAIN_DAG)
    name = f"form-budgets-{uuid.uuid4().hex[:8]}"
    first = crawl(stack, crawl_conf(testweb) | {"crawl": name})
    assert first.state == "success" and first.found
    ((summary,),) = query("SELECT summary FROM crawl_runs WHERE run_id = %s", first.run_id)
    read = summary["costs"]["new_pages"]  # every page the crawl keeps

    def triggered(new_seed: str, budget: str, value: str) -> tuple[str, dict]:
        ui.open_trigger_form(MAIN_DAG)
        ui.fill("seeds", "\n".join([*testweb["seeds"], new_seed]))
        ui.fill("allowed_hosts", "127.0.0.1")
        ui.fill("crawl", name)
        ui.open_section(POLITENESS)
        ui.fill(budget, value)
        run_id = ui.trigger()
        assert stack.wait(MAIN_DAG, run_id, RUN_TIMEOUT) == "success"
        ((conf, summary),) = query("SELECT params, summary FROM crawl_runs WHERE run_id = %s", run_id)
        assert conf["crawl"] == name and conf[budget] == float(value)
        assert set(loaded(run_id).found) == set(first.found)
        return run_id, summary["costs"]

    _, costs = triggered(testweb["seeds"][0] + "?from=form", "revisit_megabytes", "0")
    assert costs["not_due"] == read and costs["new_pages"] == 1, costs
    assert costs["not_modified"] == costs["same_bytes"] == costs["changed_pages"] == 0, costs

    new_seed = testweb["seeds"][1] + "?from=form"
    run_id, costs = triggered(new_seed, "time_budget_hours", "0.0001")
    assert costs["requests"] == costs["new_pages"] == 0 and costs["not_due"] == read, costs
    # the URLs the crawl keeps no page of: the new seed, and any robots.txt kept it from reading
    deferred = query(
        "SELECT url FROM frontier_urls WHERE run_id = %s AND status = 'deferred' AND error_reason = %s",
        run_id, "run_time_budget",
    )  # fmt: skip
    assert (new_seed,) in deferred
    ui.open_report(MAIN_DAG, run_id)
    spent = "not fetched: new to the crawl when the run's time budget was spent"
    assert ui.report_table("deferred") == [[spent, str(len(deferred))]]
    assert ui.report_table("costs")[0][0] == "0"


def _long_crawl_task(client: AirflowClient, run_id: str) -> tuple[str, dict] | None:
    """(worker, task instance) of the run's latest started shard past level 0, while it runs and no task of
    the run waits queued: a worker killed while Celery hands it a task holds that message unacknowledged
    until the broker's visibility timeout, and Airflow queues the task again only after
    ``task_queued_timeout`` (10 minutes), longer than this test waits; what the test checks is the run's
    recovery of the killed tasks' URLs."""
    instances = client.task_instances(MAIN_DAG, run_id)
    if any(t["state"] == "queued" for t in instances):
        return None
    running = [t for t in instances if t["task_id"] in LONG_TASKS]
    running = sorted((t for t in running if t["state"] == "running"), key=lambda t: t["start_date"])
    for ti in reversed(running):
        for name in workers.NAMES:
            if any(ti["id"] in json.dumps(task.get("args")) for task in workers.active(name, timeout=0.5)):
                return name, ti
    return None


def test_a_worker_killed_mid_crawl_loses_nothing(stack, testweb, first_run):
    """SIGKILL a worker's whole process tree while it crawls, start it again: the scheduler fails the task
    after its heartbeat timeout, retries it, and the run ends with exactly the first run's rows."""
    first, *_ = first_run
    slow = crawl_conf(testweb) | {"per_host_delay": 0.5}  # shards of several seconds, to be caught running
    stack.unpause(MAIN_DAG)
    run_id = stack.trigger(MAIN_DAG, slow)
    deadline = time.monotonic() + RUN_TIMEOUT
    while (hit := _long_crawl_task(stack, run_id)) is None:
        assert time.monotonic() < deadline, "no crawl task past level 0 was ever seen running"
        time.sleep(0.2)
    victim, killed = hit
    killed_at = time.monotonic()
    assert supervisor.kill(workers.BY_NAME[victim])
    workers.start((victim,))
    state = stack.wait(MAIN_DAG, run_id, RUN_TIMEOUT)
    print(f"\nkilled {victim} running {killed['task_id']}[{killed['map_index']}]; the run ended "
          f"{time.monotonic() - killed_at:.0f} s later: {state}")  # fmt: skip
    assert state == "success"
    (retried,) = [
        t for t in stack.task_instances(MAIN_DAG, run_id)
        if (t["task_id"], t["map_index"]) == (killed["task_id"], killed["map_index"])
    ]  # fmt: skip
    assert retried["try_number"] > killed["try_number"], "the killed task was not retried"
    run = loaded(run_id)
    assert {(f.key, f.level, f.datasets) for f in run.found.values()} == {
        (f.key, f.level, f.datasets) for f in first.found.values()
    }
    assert run.frontier == first.frontier, f"URLs lost: {sorted(first.frontier - run.frontier)}"


def dataset_rows(resource_ids: list[int]) -> dict[int, int]:
    rows = query(
        "SELECT resource_id, count(*) FROM datasets WHERE resource_id = ANY(%s) GROUP BY 1", resource_ids
    )
    return dict(rows)


def test_the_same_crawl_again_duplicates_no_row(stack, testweb, first_run):
    """A new run of the same crawl updates the rows the first run loaded: same ids, same dataset rows,
    first_seen kept, last_seen moved on. (Counted per resource: other DAGs may load other rows meanwhile.)"""
    first, *_ = first_run
    ids = [found.resource_id for found in first.found.values()]
    datasets_before = dataset_rows(ids)
    again = crawl(stack, crawl_conf(testweb))
    print(f"\nthe same crawl again: {again.seconds:.0f} s")
    assert again.state == "success"
    assert set(again.found) == set(first.found)
    assert dataset_rows(ids) == datasets_before
    for key, found in again.found.items():
        assert query("SELECT count(*) FROM resources WHERE url = %s AND type = %s", *key) == [(1,)]
        assert found.resource_id == first.found[key].resource_id
        assert found.first_seen == first.found[key].first_seen, f"{key}: first_seen changed"
        assert found.last_seen > first.found[key].last_seen, f"{key}: last_seen not updated"


def test_no_secret_reaches_a_log(first_run):
    """The admin password, the token key and the database passwords appear in no service or task log."""
    run, *_ = first_run
    secrets = {
        "admin password": admin_password(),
        "JWT secret": JWT_SECRET_FILE.read_text(),
        "geoweb_db password": urlsplit(GEOWEB_DB).password,
        "airflow database password": urlsplit(AIRFLOW_DB).password,
    }
    task_logs = list((AIRFLOW_HOME / "logs" / f"dag_id={MAIN_DAG}" / f"run_id={run.run_id}").rglob("*.log"))
    assert task_logs
    for log in [*LOGS.glob("*.out"), *task_logs]:
        text = log.read_text(errors="replace")
        leaked = [name for name, secret in secrets.items() if secret in text]
        assert not leaked, f"{log.name}: {leaked}"
