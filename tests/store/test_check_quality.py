"""Every check measured, on PostGIS: a check's timing and operation are stored, old checks are summed per day
and pruned with their change events kept, and ``resource_quality`` gives the figures of a known history."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from geoweb.harvest.revisit import Schedule
from geoweb.models import CheckResult, Due
from geoweb.store import Store
from tests.store.pages import kml, page, wms

H = 3600.0
SCHEDULE = Schedule(min_interval=1 * H, max_interval=64 * H, dead_after=3)
NOW = datetime.now(UTC)
INSERT = """
INSERT INTO resource_checks (resource_id, checked_at, outcome, seconds, operation, first_byte_seconds,
    total_seconds, bytes, details)
VALUES (%s, %s, %s, 0.1, %s, %s, %s, %s, %s)
"""
AVAILABILITY_RULE = (
    "INSPIRE view service availability: at least 99 % of checks successful over 30 days, judged on 24 checks "
    "or more"
)


def rows(store: Store, sql: str, *args) -> list[tuple]:
    with store.transaction() as cur:
        cur.execute(sql, args)
        return cur.fetchall() if cur.description else []


def crawled(store: Store, site: str, *resources) -> list[Due]:
    """The resources loaded as a crawl of ``site`` loads them, enrolled in the schedule, due at once."""
    run_id = f"quality-{site}"
    store.runs.begin(run_id, {})
    store.frontier.commit_pages(run_id, [page(f"{site}/", 0, resources=resources)], shards=1)
    urls = [r.url for r in resources]
    due = {d.url: d for d in store.revisits.due(["WMS", "KML"], 100_000, 1e-6) if d.url in urls}
    return [due[url] for url in urls]


def insert(store: Store, resource_id: int, checks: list[tuple]) -> None:
    """Checks as (hours ago or a time, outcome, operation, first byte, total, bytes[, details])."""
    with store.transaction() as cur:
        for ago, outcome, operation, first_byte, total, size, *details in checks:
            when = ago if isinstance(ago, datetime) else NOW - timedelta(hours=ago)
            cur.execute(
                INSERT,
                (
                    resource_id,
                    when,
                    outcome,
                    operation,
                    first_byte,
                    total,
                    size,
                    details[0] if details else "{}",
                ),
            )


def test_a_check_stores_its_operation_and_its_request_s_timing(store, site):
    [due] = crawled(store, site, wms(site))
    result = CheckResult(due, "unchanged", 0.4, 200, fingerprint="ab" * 32)
    result.first_byte_seconds, result.total_seconds, result.bytes = 0.12, 0.3, 5120
    store.revisits.record_check("timed", result, lambda outcome: SCHEDULE.after(due.state, outcome))
    failed = CheckResult(due, "failed", 1.5, None, "timeout", "read timeout")
    store.revisits.record_check("timed", failed, lambda outcome: SCHEDULE.after(due.state, outcome))
    history = rows(
        store,
        "SELECT operation, outcome, http_status, first_byte_seconds, total_seconds, bytes FROM resource_checks "
        "WHERE resource_id = %s ORDER BY id",
        due.id,
    )
    assert history == [
        ("GetCapabilities", "unchanged", 200, 0.12, 0.3, 5120),
        ("GetCapabilities", "failed", None, None, None, None),
    ]


def test_the_quality_figures_of_a_known_history(store, site):
    service, trails = crawled(store, site, wms(site), kml(site))
    # 30 days of capabilities checks every 20 hours (36): 9 in the last 7 days, one of them failed
    capabilities = [
        (
            20 * n + 1,
            "failed" if n == 3 else "unchanged",
            "GetCapabilities",
            0.1 * (n % 10 + 1),
            0.2 * (n % 10 + 1),
            100,
        )
        for n in range(36)
    ]
    capabilities.append((24 * 40, "unchanged", "GetCapabilities", 9.0, 9.0, 100))  # out of the window
    insert(store, service.id, capabilities)
    insert(store, trails.id, [(2, "failed", "GetResource", None, None, None)])
    service_quality, trails_quality = store.revisits.quality([service.id, trails.id])
    assert (service_quality["checks_7d"], float(service_quality["availability_7d_percent"])) == (9, 88.89)
    assert (service_quality["checks_30d"], float(service_quality["availability_30d_percent"])) == (36, 97.22)
    assert service_quality["last_success_at"] == NOW - timedelta(hours=1)
    timings = service_quality["operations_30d"]["GetCapabilities"]
    # the successful checks' first bytes: 0.1 to 0.6 s four times each (0.4 s three), 0.7 to 1.0 s three times
    assert (timings["checks"], timings["successes"]) == (36, 35)
    assert (timings["first_byte_median"], timings["first_byte_p95"]) == (0.5, 1.0)
    assert (timings["total_median"], timings["total_p95"]) == (1.0, 2.0)
    assert service_quality["inspire_availability"] == "not met"  # 97.22 % on 36 checks
    assert service_quality["inspire_availability_rule"] == AVAILABILITY_RULE
    assert (
        service_quality["inspire_getmap"] == "not enough checks"
    )  # no GetMap check: capabilities are no map
    assert service_quality["inspire_getmap_rule"].startswith("INSPIRE view service performance: GetMap first")
    assert trails_quality["availability_30d_percent"] == 0 and trails_quality["last_success_at"] is None
    assert trails_quality["inspire_availability"] is trails_quality["inspire_getmap"] is None  # not a WMS


@pytest.mark.parametrize(
    ("getmap_first_bytes", "availability", "getmap"),
    [
        ([0.5] * 22 + [7.0] * 2, "met", "met"),  # 2 of 24 over 5 s: the 90th percentile is within
        ([0.5] * 20 + [7.0] * 4, "met", "not met"),
        ([0.5] * 23, "not enough checks", "not enough checks"),
    ],
)
def test_the_inspire_criteria_are_met_not_met_or_not_judged(
    store, site, getmap_first_bytes, availability, getmap
):
    [service] = crawled(store, site, wms(site))
    insert(
        store,
        service.id,
        [(n + 1, "unchanged", "GetMap", s, s, 1000) for n, s in enumerate(getmap_first_bytes)],
    )
    [quality] = store.revisits.quality([service.id])
    assert (quality["inspire_availability"], quality["inspire_getmap"]) == (availability, getmap)


def noon(when: datetime) -> datetime:
    return when.replace(hour=12, minute=0, second=0, microsecond=0)


@pytest.fixture
def own_store(postgis_database):
    """A database of its own: pruning reads and deletes every resource's old checks."""
    with postgis_database() as dsn, Store(dsn) as opened:
        opened.migrate()
        yield opened


def test_old_checks_are_summed_per_day_and_pruned_keeping_change_events(own_store):
    store, site = own_store, "http://pruned.example"
    [service] = crawled(store, site, wms(site))
    noon_60, noon_50 = (noon(NOW - timedelta(days=days)) for days in (60, 50))
    old = [
        (noon_60 + timedelta(hours=4), "unchanged", "GetCapabilities", 0.1, 0.2, 100),
        (noon_60 + timedelta(hours=3), "failed", "GetCapabilities", None, None, None),
        (
            noon_60 + timedelta(hours=2),
            "changed",
            "GetCapabilities",
            0.3,
            0.4,
            100,
            '{"datasets_added": ["floods"]}',
        ),
        (noon_60 + timedelta(hours=1), "failed", "GetCapabilities", None, None, None, '{"dead": true}'),
        (noon_50, "unchanged", "GetCapabilities", 0.5, 0.6, 100),
    ]
    recent = [(n, "unchanged", "GetCapabilities", 0.1, 0.2, 100) for n in range(1, 25)]
    insert(store, service.id, old + recent)
    with pytest.raises(Exception, match="keep at least 31 days"):
        store.revisits.prune_checks(7)
    assert store.revisits.prune_checks(45) == 3  # the two routine checks of day -60 and the one of day -50
    assert store.revisits.prune_checks(45) == 0  # nothing twice
    kept = rows(store, "SELECT outcome, details FROM resource_checks WHERE resource_id = %s AND checked_at < %s "
                "ORDER BY checked_at", service.id, NOW - timedelta(days=45))  # fmt: skip
    assert kept == [("failed", {"dead": True}), ("changed", {"datasets_added": ["floods"]})]
    days = rows(store, "SELECT checks, successes, changes, first_byte_median, bytes FROM resource_check_days "
                "WHERE resource_id = %s ORDER BY day", service.id)  # fmt: skip
    assert days == [(4, 2, 1, 0.2, 200), (1, 1, 0, 0.5, 100)]
    [quality] = store.revisits.quality([service.id])
    assert quality["checks_30d"] == 24 and quality["inspire_availability"] == "met"
    # with nothing recent, the last success comes from the days summed
    rows(
        store,
        "DELETE FROM resource_checks WHERE resource_id = %s AND checked_at > %s",
        service.id,
        NOW - timedelta(days=40),
    )
    [quality] = store.revisits.quality([service.id])
    assert quality["last_success_at"] == noon_50
    assert quality["checks_30d"] == 0 and quality["inspire_availability"] == "not enough checks"
