"""The revisit tables on PostGIS: resources join the schedule, checks become history rows, a changed resource
is reloaded as the crawl loads it, a dead one is kept and comes back to life."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from geoweb.harvest.revisit import Schedule
from geoweb.models import CheckResult, Dataset, Due
from tests.store.pages import page, wms

H = 3600.0
SCHEDULE = Schedule(min_interval=1 * H, max_interval=64 * H, dead_after=3)
TINY = 1e-6  # seconds: due at once
DOC = Path(__file__).parents[2] / "docs" / "revisits.md"


@pytest.fixture
def due(store, run_id, site) -> Due:
    """A crawled WMS with two layers, just enrolled (a tiny initial interval: due at once)."""
    resource = wms(site)
    store.frontier.commit_pages(run_id, [page(f"{site}/", 0, resources=[resource])], shards=1)
    [enrolled] = [d for d in store.revisits.due(["WMS"], 100_000, TINY) if d.url == resource.url]
    return enrolled


def rows(store, sql: str, *args) -> list[tuple]:
    with store.transaction() as cur:
        cur.execute(sql, args)
        return cur.fetchall()


def save(store, due: Due, outcome: str, **result) -> tuple[Due, dict]:
    """Record one check as a revisit does; returns the resource as due next time (forced due) and details."""
    details, _ = store.revisits.record_check(
        "revisit-test",
        CheckResult(due, outcome, 0.25, **result),
        lambda final: SCHEDULE.after(due.state, final),
    )
    rows(
        store, "UPDATE resource_schedule SET next_check_at = now() WHERE resource_id = %s RETURNING 1", due.id
    )
    [again] = store.revisits.still_due([due.id])
    return again, details


def test_enrolment_takes_the_initial_interval_and_has_no_fingerprint_yet(store, due):
    assert due.type == "WMS" and due.version == "1.3.0" and due.baseline is None
    assert (due.state.interval, due.state.failures, due.state.checks, due.state.dead) == (TINY, 0, 0, False)
    store.revisits.due(["WMS"], 10, 5 * H)  # enrolling again changes nothing
    assert store.revisits.still_due([due.id]) == [due]


def test_unchanged_check_is_history_and_schedules_later(store, due):
    rows(
        store,
        "UPDATE resource_schedule SET interval_seconds = %s WHERE resource_id = %s RETURNING 1",
        4 * H,
        due.id,
    )
    [due] = store.revisits.still_due([due.id])
    before = datetime.now(UTC)
    result = CheckResult(due, "unchanged", 0.5, 200, fingerprint="ab" * 32)
    _, delay = store.revisits.record_check(
        "run-a", result, lambda outcome: SCHEDULE.after(due.state, outcome)
    )
    assert delay == 8 * H
    [(next_at, interval, checks, last)] = rows(
        store, "SELECT next_check_at, interval_seconds, checks, last_outcome FROM resource_schedule "
        "WHERE resource_id = %s", due.id)  # fmt: skip
    assert (interval, checks, last) == (8 * H, 1, "unchanged")
    assert before + timedelta(hours=8) <= next_at <= datetime.now(UTC) + timedelta(hours=8)
    assert store.revisits.still_due([due.id]) == []  # a retried task does not check it again
    history = rows(store, "SELECT run_id, outcome, http_status, content_sha256, seconds, details "
                          "FROM resource_checks WHERE resource_id = %s", due.id)  # fmt: skip
    assert history == [("run-a", "unchanged", 200, "ab" * 32, 0.5, {})]


def test_changed_resource_is_reloaded_with_its_datasets_and_the_change_listed(store, due, site):
    changed = wms(site, layers=3)
    changed.title, changed.datasets[2].name = "Rivers, new edition", "floods"
    changed.datasets = [changed.datasets[0], changed.datasets[2]]  # layer1 gone, floods new
    changed.content_sha256 = "cd" * 32
    again, details = save(store, due, "changed", http_status=200, fingerprint="cd" * 32, resource=changed)
    assert details == {"datasets_added": ["floods"], "datasets_removed": ["layer1"]}
    assert again.baseline == "cd" * 32 and again.state.changes == 1
    [(title, sha, status)] = rows(
        store, "SELECT title, content_sha256, last_status FROM resources WHERE id = %s", due.id
    )
    assert (title, sha, status) == ("Rivers, new edition", "cd" * 32, "ok")
    names = rows(store, "SELECT name FROM datasets WHERE resource_id = %s ORDER BY position", due.id)
    assert names == [("layer0",), ("floods",)]
    assert rows(store, "SELECT outcome, details FROM resource_checks WHERE resource_id = %s", due.id) == [
        ("changed", details)
    ]


def test_dead_after_n_failures_is_a_state_never_a_deletion_and_a_success_revives(store, due, site):
    outcomes = []
    for status, reason in ((503, "http_status"), (None, "timeout"), (None, "connection"), (None, "timeout")):
        due, details = save(store, due, "failed", http_status=status, error_reason=reason, error_message="x")
        outcomes.append((due.state.failures, due.state.dead, details))
    assert outcomes == [(1, False, {}), (2, False, {}), (3, True, {"dead": True}), (4, True, {})]
    [(state, last_status)] = rows(
        store, "SELECT s.state, r.last_status FROM resource_schedule s JOIN resources r ON r.id = s.resource_id "
        "WHERE r.id = %s", due.id)  # fmt: skip
    assert (state, last_status) == ("dead", "dead")
    assert rows(store, "SELECT count(*) FROM datasets WHERE resource_id = %s", due.id) == [(2,)]  # kept
    due, details = save(store, due, "unchanged", http_status=200, fingerprint="ab" * 32)
    assert details == {"revived": True} and not due.state.dead and due.state.failures == 0
    history = rows(store, "SELECT outcome, http_status, error_reason FROM resource_checks WHERE resource_id = %s "
                          "ORDER BY id", due.id)  # fmt: skip
    assert history == [("failed", 503, "http_status"), ("failed", None, "timeout"), ("failed", None, "connection"),
                       ("failed", None, "timeout"), ("unchanged", 200, None)]  # fmt: skip
    assert store.revisits.overview()["alive"] >= 1


def test_postponed_resources_are_not_due_and_hostile_text_is_cleaned(store, due):
    store.revisits.postpone([due.id], 2 * H)
    assert store.revisits.still_due([due.id]) == []
    rows(
        store, "UPDATE resource_schedule SET next_check_at = now() WHERE resource_id = %s RETURNING 1", due.id
    )
    [due] = store.revisits.still_due([due.id])
    save(store, due, "failed", error_reason="not_found", error_message="nul\x00 byte " + "x" * 100_000)
    [(message,)] = rows(store, "SELECT error_message FROM resource_checks WHERE resource_id = %s", due.id)
    assert "\x00" not in message and len(message) < 100_000


def test_unstorable_changed_resource_is_logged_and_the_check_still_recorded(store, due, caplog):
    broken = wms("http://x")
    broken.url, broken.datasets = "http://x/" + "a" * 10_000, [Dataset("a")]
    save(store, due, "changed", http_status=200, fingerprint="ef" * 32, resource=broken)
    assert "not stored" in caplog.text
    assert rows(store, "SELECT outcome FROM resource_checks WHERE resource_id = %s", due.id) == [("changed",)]


def test_a_first_check_is_changed_only_when_the_reload_changes_what_the_store_holds(store, due, site):
    same = wms(site)
    same.content_sha256 = "01" * 32  # another variant of the document, describing the same service
    due, details = save(store, due, "unchanged", http_status=200, fingerprint="01" * 32, resource=same)
    assert details == {} and due.state.changes == 0 and due.baseline == "01" * 32
    retitled = wms(site)
    retitled.title, retitled.content_sha256 = "Rivers and lakes", "01" * 32  # same hash, new metadata
    due, details = save(store, due, "unchanged", http_status=200, fingerprint="01" * 32, resource=retitled)
    assert due.state.changes == 1 and details == {}
    outcomes = rows(store, "SELECT outcome FROM resource_checks WHERE resource_id = %s ORDER BY id", due.id)
    assert outcomes == [("unchanged",), ("changed",)]


def test_the_docs_queries_run_on_the_history(store, due, site):
    """Every SQL block of docs/revisits.md runs, and the dead and changed resources made here show in them."""
    changed = wms(site, layers=1)
    changed.content_sha256 = "cd" * 32
    save(store, due, "changed", http_status=200, fingerprint="cd" * 32, resource=changed)
    for _ in range(3):
        due, _ = save(
            store, due, "failed", http_status=503, error_reason="http_status", error_message="HTTP 503"
        )
    blocks = re.findall(r"```sql\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 5
    results = [rows(store, sql.replace("%", "%%")) for sql in blocks]
    assert (due.url, 1) in [(row[1], row[2]) for row in results[0]]  # changed once
    [dead] = [row for row in results[1] if row[1] == due.url]
    assert dead[2] == 3 and dead[4] == "http_status (HTTP 503)"
    assert "WMS" in [row[0] for row in results[2]]
    [quality] = [row for row in results[3] if row[0] == due.url]
    assert quality[1:3] == (4, 25) and quality[5:8:2] == ("not enough checks", "not enough checks")
    assert any(row[0] == due.url and row[3] == ["layer1"] for row in results[4])
