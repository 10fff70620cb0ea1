"""geoweb_revisit end to end on the real stack: the test web crawled into PostGIS by geoweb_crawl, its
resources made due, then re-checked by the revisit DAG's mapped tasks on the Celery workers against the real
servers.

Four runs: the crawl, a first revisit (which enrols the resources in the schedule, none due yet), a revisit
of the resources made due (their fingerprints of the test web as built now: a database kept from another
build holds older ones) and the revisit under test, of the resources made due again; about two minutes.
"""

from __future__ import annotations

import psycopg2
import pytest

from stack.demo import crawl_conf, run_crawl
from stack.layout import GEOWEB_DB
from tests.integration.test_crawl_testweb import planted
from testweb.mapserver import ECHO

pytestmark = pytest.mark.testweb

DAG = "geoweb_revisit"
RUN_TIMEOUT = 240.0
MAX_INTERVAL = 30 * 86_400.0  # Settings.revisit_max_interval


def query(sql: str, *args) -> list[tuple]:
    with psycopg2.connect(GEOWEB_DB) as conn, conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchall() if cur.description else []


def revisit(client, conf: dict) -> tuple[str, str]:
    run_id = client.trigger(DAG, conf)
    return run_id, client.wait(DAG, run_id, RUN_TIMEOUT)


@pytest.fixture(scope="module")
def crawled(stack, testweb) -> dict[tuple[str, str], int]:
    """(url, type) -> resource id of every linked test-web resource, loaded by a real crawl run."""
    run_id, state = run_crawl(stack, crawl_conf(testweb), timeout=RUN_TIMEOUT)
    assert state == "success"
    rows = query(
        "SELECT r.url, r.type, r.id FROM run_resources rr JOIN resources r ON r.id = rr.resource_id "
        "WHERE rr.run_id = %s",
        run_id,
    )
    ids = {(url, type_): id_ for url, type_, id_ in rows}
    assert set(planted(testweb, "links")) <= set(ids)
    return ids


def make_due(ids: list[int]):
    """Every resource of ``ids`` due a minute ago; returns the database's now."""
    return query(
        "UPDATE resource_schedule SET next_check_at = now() - interval '1 minute' "
        "WHERE resource_id = ANY(%s) RETURNING now()",
        ids,
    )[0][0]


@pytest.fixture(scope="module")
def revisited(
    stack, testweb, crawled
) -> tuple[str, str, dict[int, tuple], dict[int, tuple], dict[int, tuple]]:
    """The revisit run of the crawled resources made due: (run id, state, resource id -> its check,
    resource id -> its operation check, resource id -> its (interval, checks) before)."""
    conf = {"allowed_hosts": ["127.0.0.1"], "shards": 4}
    stack.unpause(DAG)
    try:
        _, state = revisit(stack, conf)  # enrols every resource: first check a day after it was last seen
        assert state == "success"
        ids = sorted(crawled.values())
        make_due(ids)
        _, state = revisit(stack, conf)  # each resource's fingerprint of the test web as built now
        assert state == "success"
        schedule = query(
            "SELECT resource_id, interval_seconds, checks FROM resource_schedule WHERE resource_id = ANY(%s)",
            ids,
        )
        before = {id_: (interval, checks) for id_, interval, checks in schedule}
        since = make_due(ids)
        run_id, state = revisit(stack, conf)
    finally:
        stack.pause(DAG)  # no hourly runs during the other tests
    checks = query(
        "SELECT resource_id, operation IN ('GetCapabilities', 'GetResource'), outcome, error_reason, "
        "error_message, run_id FROM resource_checks WHERE resource_id = ANY(%s) AND checked_at >= %s",
        ids,
        since,
    )
    own = {id_: check for id_, itself, *check in checks if itself}
    operations = {id_: check for id_, itself, *check in checks if not itself}
    return run_id, state, own, operations, before


def test_every_crawled_resource_is_checked_once_on_the_workers_and_unchanged(stack, crawled, revisited):
    run_id, state, checks, *_ = revisited
    assert state == "success"
    mapped = [t for t in stack.task_instances(DAG, run_id) if t["task_id"] == "check"]
    assert len(mapped) > 1 and all(t["state"] == "success" for t in mapped)
    assert all(t["hostname"] for t in mapped)  # run by Celery workers
    by_id = {id_: key for key, id_ in crawled.items()}
    failed = {by_id[id_]: check for id_, check in checks.items() if check[0] != "unchanged"}
    assert not failed, failed
    assert set(checks) == set(by_id), f"not checked: {sorted(by_id[i] for i in set(by_id) - set(checks))}"
    assert {check[3] for check in checks.values()} == {run_id}


def test_operation_checks_run_beside_the_checks_on_the_workers(crawled, revisited):
    run_id, _, _, operations, _ = revisited
    by_id = {id_: key for key, id_ in crawled.items()}
    assert {check[3] for check in operations.values()} == {run_id}
    # the echo decoy answers a GetMap with its capabilities; the ArcGIS stand-in draws no maps
    failed = {by_id[id_]: check[1] for id_, check in operations.items() if check[0] == "failed"}
    arcgis_maps = {key: "html" for key in crawled if key[1] == "ARCGIS-MAPSERVER"}
    assert failed == {(ECHO.url, "WMS"): "not_image", **arcgis_maps}
    assert {check[0] for check in operations.values()} == {"ok", "failed"}


def test_the_schedule_moves_on_after_an_unchanged_check(crawled, revisited):
    *_, before = revisited
    rows = query(
        "SELECT resource_id, state, interval_seconds, checks, failures, "
        "extract(epoch FROM next_check_at - last_checked_at)::float "
        "FROM resource_schedule WHERE resource_id = ANY(%s)",
        sorted(crawled.values()),
    )
    assert len(rows) == len(crawled) == len(before)
    for id_, state, interval, checks, failures, wait in rows:
        learned, checked = before[id_]
        # unchanged: the interval doubles (within the maximum), and the next check waits that long
        assert (state, failures, checks) == ("alive", 0, checked + 1)
        assert interval == min(2 * learned, MAX_INTERVAL)
        assert wait == pytest.approx(interval, abs=60)


def test_the_report_tab_shows_the_checks_and_the_slowest_and_least_available_services(crawled, revisited, ui):
    run_id, *_ = revisited
    ui.open_report(DAG, run_id)
    outcomes = ui.report("doc.querySelector('#outcomes').textContent")
    assert all(f"{word} " in outcomes for word in ("checked", "unchanged", "newly dead", "revived")), outcomes
    reasons = {(operation, reason): int(n) for operation, reason, n in ui.report_table("failure-reasons")}
    arcgis = sum(key[1] == "ARCGIS-MAPSERVER" for key in crawled)
    assert reasons[("GetMap", "not_image")] >= 1 and reasons.get(("Export", "html"), 0) >= arcgis
    slowest = [float(seconds) for _, _, seconds, *_ in ui.report_table("slowest")]
    assert len(slowest) == min(10, len(crawled)) and slowest == sorted(slowest, reverse=True)
    least = [float(percent.removesuffix(" %")) for _, _, percent, *_ in ui.report_table("least-available")]
    assert len(least) == min(10, len(crawled)) and least == sorted(least)
