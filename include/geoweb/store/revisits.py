"""The store's side of revisits: each resource's schedule (``resource_schedule``), its check history
(``resource_checks``, older checks summed per day in ``resource_check_days``) and its quality figures
(``resource_quality``).

A resource joins the schedule the first time due resources are asked for, due one
initial interval after it was last seen. Recording a check is one transaction: the resource reloaded as a
crawl loads it (after a good check), the new schedule, and the history row, with the operation check's row
beside it when one ran (it changes neither the resource nor its schedule). A dead resource keeps its rows;
only its state says it is dead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from datetime import UTC, datetime, timedelta
from typing import Any

from geoweb.models import (
    CheckOutcome,
    CheckResult,
    Due,
    Resource,
    ResourceStatus,
    ScheduleState,
    ScheduleStatus,
)
from geoweb.models.revisit import check_operation
from geoweb.store.clean import Cleaner
from geoweb.store.repository import Repository
from geoweb.store.resources import insert_checks, upsert_resources
from geoweb.store.rows import resource_rows

log = logging.getLogger("geoweb.store")

MAX_LISTED = 50  # dataset names listed per check in the history's details

# outcome -> (new state, seconds to the next check)
NextCheck = Callable[[CheckOutcome], tuple[ScheduleState, float]]

_ENROL = """
INSERT INTO resource_schedule (resource_id, next_check_at, interval_seconds)
SELECT id, last_seen + make_interval(secs => %(initial)s), %(initial)s FROM resources r
WHERE NOT EXISTS (SELECT 1 FROM resource_schedule s WHERE s.resource_id = r.id)
ON CONFLICT (resource_id) DO NOTHING
"""
_DUE_COLUMNS = f"""
r.id, r.url, r.type, r.version, s.fingerprint, s.interval_seconds, s.failures,
s.checks, s.changes, s.state = '{ScheduleStatus.DEAD}'
"""
_DUE = f"""
SELECT {_DUE_COLUMNS} FROM resource_schedule s JOIN resources r ON r.id = s.resource_id
WHERE s.next_check_at <= %(now)s AND r.type = ANY(%(types)s)
ORDER BY s.next_check_at, r.id LIMIT %(limit)s
"""
_DUE_OF = f"""
SELECT {_DUE_COLUMNS} FROM resource_schedule s JOIN resources r ON r.id = s.resource_id
WHERE s.resource_id = ANY(%(ids)s) AND s.next_check_at <= %(now)s
ORDER BY r.id
"""
_SCHEDULE_UPDATE = """
UPDATE resource_schedule SET state = %(state)s, next_check_at = %(next)s, interval_seconds = %(interval)s,
    failures = %(failures)s, checks = %(checks)s, changes = %(changes)s,
    fingerprint = coalesce(%(fingerprint)s, fingerprint), last_checked_at = now(), last_outcome = %(outcome)s
WHERE resource_id = %(id)s
"""
# the columns a crawl's upsert writes from what the detector read (not its hash, not when or how it was found)
_RESOURCE_SNAPSHOT = """
SELECT version, title, abstract, keywords, provider, encode(ST_AsEWKB(bbox), 'hex'), extra
FROM resources WHERE id = %s
"""
_DATASETS_SNAPSHOT = """
SELECT name, title, keywords, encode(ST_AsEWKB(footprint), 'hex'), extra FROM datasets WHERE resource_id = %s
ORDER BY position
"""
_QUALITY = """
SELECT resource_id, type, url, checks_7d, availability_7d_percent, checks_30d, availability_30d_percent,
    last_success_at, operations_30d, inspire_availability_rule, inspire_availability, inspire_getmap_rule,
    inspire_getmap, operations_status, operations_error
FROM resource_quality WHERE resource_id = ANY(%s) ORDER BY resource_id
"""


class Revisits(Repository):
    """The revisit schedule: what is due, and each check's outcome."""

    def due(self, types: Collection[str], limit: int, initial_interval: float) -> list[Due]:
        """Up to ``limit`` resources of ``types`` due for a check, longest due first; resources new to the
        schedule join it first."""
        with self._transaction() as cur:
            cur.execute(_ENROL, {"initial": initial_interval})
            cur.execute(_DUE, {"now": datetime.now(UTC), "types": list(types), "limit": limit})
            return [_due(row) for row in cur.fetchall()]

    def still_due(self, ids: Collection[int]) -> list[Due]:
        """Those of ``ids`` still due (a retried task skips what it already checked), by id."""
        with self._transaction() as cur:
            cur.execute(_DUE_OF, {"ids": list(ids), "now": datetime.now(UTC)})
            return [_due(row) for row in cur.fetchall()]

    def postpone(self, ids: Collection[int], seconds: float) -> None:
        """Move checks ``seconds`` ahead without checking (a URL policy skips them); no history row."""
        with self._transaction() as cur:
            cur.execute(
                "UPDATE resource_schedule SET next_check_at = now() + make_interval(secs => %s) "
                "WHERE resource_id = ANY(%s)",
                (seconds, list(ids)),
            )

    def record_check(
        self, run_id: str, result: CheckResult, next_check: NextCheck
    ) -> tuple[dict[str, Any], float]:
        """Save a check in one transaction. A good check reloads the resource as the crawl loads it, and is
        changed (``result.outcome`` set) when its fingerprint differs from the last check's or the reload
        changed what the store holds (metadata, datasets). Then the schedule (``next_check(outcome)``) and the
        history row, and the operation check's row when one ran. Returns the row's details and the seconds to
        the next check."""
        due = result.due
        clean = Cleaner()
        with self._transaction() as cur:
            details: dict[str, Any] = {}
            if result.resource is not None and _reload(cur, due, result.resource, details):
                result.outcome = CheckOutcome.CHANGED
            state, delay = next_check(result.outcome)
            if state.dead and not due.state.dead:
                details["dead"] = True
            if due.state.dead and not state.dead:
                details["revived"] = True
            cur.execute(
                "UPDATE resources SET last_status = %s, "
                "last_seen = CASE WHEN %s THEN now() ELSE last_seen END WHERE id = %s",
                (_status(result, state), result.outcome != CheckOutcome.FAILED, due.id),
            )
            cur.execute(
                _SCHEDULE_UPDATE,
                {"id": due.id, "state": ScheduleStatus.DEAD if state.dead else ScheduleStatus.ALIVE,
                 "next": datetime.now(UTC) + timedelta(seconds=delay), "interval": state.interval,
                 "failures": state.failures, "checks": state.checks, "changes": state.changes,
                 "fingerprint": result.fingerprint, "outcome": result.outcome},
            )  # fmt: skip
            checks = [_check_row(clean, run_id, result, details)]
            if result.operation_check is not None:
                checks.append(_check_row(clean, run_id, result.operation_check, {}))
            insert_checks(cur, checks)
        clean.log_changes(f"check of {due.url} ({due.type})")
        return details, delay

    def prune_checks(self, keep_days: float) -> int:
        """Sum the checks older than ``keep_days`` (whole UTC days, at least 31) per resource, day and operation
        into ``resource_check_days`` and delete them, change events excepted; returns the rows deleted."""
        with self._transaction() as cur:
            cur.execute("SELECT prune_resource_checks(make_interval(secs => %s))", (keep_days * 86400,))
            (pruned,) = cur.fetchone()
        if pruned:
            log.info("%d checks older than %g days summed per day and pruned", pruned, keep_days)
        return pruned

    def quality(self, ids: Collection[int]) -> list[dict[str, Any]]:
        """The ``resource_quality`` rows of ``ids``, by id."""
        with self._transaction() as cur:
            cur.execute(_QUALITY, (list(ids),))
            names = [column.name for column in cur.description]
            return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def overview(self) -> dict[str, Any]:
        """Resources per schedule state, and when the next check is due."""
        with self._transaction() as cur:
            cur.execute("SELECT state, count(*) FROM resource_schedule GROUP BY state")
            states = dict(cur.fetchall())
            cur.execute("SELECT min(next_check_at) FROM resource_schedule")
            (next_due,) = cur.fetchone()
        return {
            "alive": states.get(ScheduleStatus.ALIVE, 0),
            "dead": states.get(ScheduleStatus.DEAD, 0),
            "next_due": next_due.astimezone(UTC).isoformat(timespec="seconds") if next_due else None,
        }


def _check_row(clean: Cleaner, run_id: str, result: CheckResult, details: dict[str, Any]) -> dict[str, Any]:
    """A check's row of ``resource_checks`` (``insert_checks``), its texts cleaned."""
    return {
        "id": result.due.id, "run_id": clean.text(run_id, "run id"), "outcome": result.outcome,
        "status": result.http_status, "reason": clean.text(result.error_reason, "error reason"),
        "message": clean.text(result.error_message, "error message"), "sha": result.fingerprint,
        "seconds": result.seconds, "details": clean.json(details, "details"),
        "operation": result.operation or check_operation(result.due.type),
        "first_byte": result.first_byte_seconds, "total": result.total_seconds, "bytes": result.bytes,
        "warning": clean.text(result.warning, "warning"),
    }  # fmt: skip


def _reload(cur, due: Due, resource: Resource, details: dict[str, Any]) -> bool:
    """Upsert the resource and its datasets as a crawl does; whether that changed what the store holds.
    The dataset names added and removed go into ``details``. The resource's row exists, so the level and
    source page a crawl fills new rows with are never read."""
    rows = resource_rows(resource, 0, None, None)
    if rows is None:
        return False
    before = _snapshot(cur, due.id)
    upsert_resources(cur, [rows])
    after = _snapshot(cur, due.id)
    had, has = [d[0] for d in before[1]], [d[0] for d in after[1]]
    old_names, new_names = set(had), set(has)
    added = [name for name in has if name not in old_names][:MAX_LISTED]
    removed = [name for name in had if name not in new_names][:MAX_LISTED]
    details |= {k: v for k, v in (("datasets_added", added), ("datasets_removed", removed)) if v}
    return before != after


def _snapshot(cur, resource_id: int) -> tuple[tuple, list[tuple]]:
    """What the store holds of a resource: its metadata row and its datasets, in order."""
    cur.execute(_RESOURCE_SNAPSHOT, (resource_id,))
    resource = cur.fetchone()
    cur.execute(_DATASETS_SNAPSHOT, (resource_id,))
    return resource, cur.fetchall()


def _due(row: tuple) -> Due:
    id_, url, type_, version, baseline, interval, failures, checks, changes, dead = row[:10]
    return Due(id_, url, type_, version, baseline, ScheduleState(interval, failures, checks, changes, dead))


def _status(result: CheckResult, state: ScheduleState) -> ResourceStatus:
    """``resources.last_status``: ok, failed, or dead."""
    if result.outcome != CheckOutcome.FAILED:
        return ResourceStatus.OK
    return ResourceStatus.DEAD if state.dead else ResourceStatus.FAILED
