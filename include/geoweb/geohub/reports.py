"""The reports of harvest runs as GeoHub shows them on a DAG run's page: a crawl run's figures and plot, and
what a revisit run found, with its slowest and least available services. Each function takes a psycopg2
connection (``SearchDatabase.connection()``)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from geoweb.models import CheckOperation, CheckOutcome

MAX_LISTED = 200  # changed or failed checks listed in a revisit report
TOP_LISTED = 10  # slowest and least available services listed in a revisit report
OWN_OUTCOMES = (CheckOutcome.UNCHANGED, CheckOutcome.CHANGED, CheckOutcome.FAILED)
OPERATION_OUTCOMES = (CheckOutcome.OK, CheckOutcome.FAILED)


@dataclass(slots=True)
class CrawlRunReport:
    """A crawl run as its finish_run stored it: ``summary`` holds the per-level figures, the resources per
    type and the recall curve (null while the run has not finished)."""

    run_id: str
    status: str
    started_at: datetime
    finished_at: datetime | None
    params: dict[str, Any]
    summary: dict[str, Any] | None
    has_plot: bool
    resources: int  # found by the run so far (run_resources), whether or not it has finished


@dataclass(slots=True)
class CheckedResource:
    resource_id: int
    type: str
    url: str
    operation: str  # the request checked: the resource's own (GetCapabilities, GetResource) or an operation
    detail: str | None  # why a check failed, or what changed


@dataclass(slots=True)
class FailureReason:
    operation: str
    reason: str | None  # the error reason (ogc_exception, not_image, html...), None when none was given
    checks: int


@dataclass(slots=True)
class SlowService:
    resource_id: int
    type: str
    url: str
    total_seconds: float  # of the run's check of its capabilities (or its own URL)
    median_30d_seconds: float | None  # of its successful checks of the last 30 days


@dataclass(slots=True)
class ServiceAvailability:
    resource_id: int
    type: str
    url: str
    availability_30d_percent: float
    checks_30d: int


@dataclass(slots=True)
class RevisitRunReport:
    run_id: str
    outcomes: dict[str, int]  # the resources' own checks of the run, as the revisit summary counts them
    operations: dict[str, int]  # the run's operation checks (GetMap...) by outcome: ok, failed
    failure_reasons: list[FailureReason] = field(default_factory=list)  # of operation checks, most first
    slowest: list[SlowService] = field(default_factory=list)
    least_available: list[ServiceAvailability] = field(default_factory=list)
    changed: list[CheckedResource] = field(default_factory=list)
    failed: list[CheckedResource] = field(default_factory=list)  # own and operation checks


def crawl_run_report(conn, run_id: str) -> CrawlRunReport | None:
    """The crawl run ``run_id``, or None when the store has no such run."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT c.run_id, c.status, c.started_at, c.finished_at, c.params, c.summary, "
            "c.report_png IS NOT NULL, (SELECT count(*) FROM run_resources rr WHERE rr.run_id = c.run_id) "
            "FROM crawl_runs c WHERE c.run_id = %s",
            (run_id,),
        )
        row = cur.fetchone()
    return None if row is None else CrawlRunReport(*row)


def crawl_run_plot(conn, run_id: str) -> bytes | None:
    """The PNG plot finish_run stored with the run, or None."""
    with conn.cursor() as cur:
        cur.execute("SELECT report_png FROM crawl_runs WHERE run_id = %s", (run_id,))
        row = cur.fetchone()
    return bytes(row[0]) if row and row[0] is not None else None


# Each check of a revisit run with its resource's figures of the last 30 days, as of its last check (kept in
# its row by the trigger of migration 0023 from resource_quality): one read of the run's checks.
_RUN_CHECKS = """
SELECT k.resource_id, r.type, r.url, k.operation, k.outcome, k.error_reason, k.error_message, k.details,
    k.total_seconds, r.response_median, r.availability_30d_percent, r.checks_30d
FROM resource_checks k JOIN resources r ON r.id = k.resource_id
WHERE k.run_id = %s
ORDER BY r.type, r.url, k.id
"""
OWN_CHECKS = frozenset({CheckOperation.GET_CAPABILITIES, CheckOperation.GET_RESOURCE})


@dataclass(frozen=True, slots=True)
class _RunCheck:
    resource_id: int
    type: str
    url: str
    operation: str
    outcome: str
    error_reason: str | None
    error_message: str | None
    details: dict[str, Any]
    total_seconds: float | None
    median_30d_seconds: float | None
    availability_30d_percent: Decimal | None
    checks_30d: int | None

    @property
    def own(self) -> bool:
        """A check of the resource itself, not of one of its operations."""
        return self.operation in OWN_CHECKS

    def listed(self) -> CheckedResource:
        detail = self.error_reason
        if self.error_reason and self.error_message:
            detail = f"{self.error_reason}: {self.error_message}"
        elif not self.error_reason and self.details:
            detail = json.dumps(self.details)
        return CheckedResource(self.resource_id, self.type, self.url, self.operation, detail)


def revisit_run_report(conn, run_id: str) -> RevisitRunReport:
    """The checks of the revisit run ``run_id``: its resources' own checks by outcome (with the newly dead and
    the revived), its operation checks by outcome with the failures' reasons, its ``TOP_LISTED`` slowest and
    least available services, and the resources that changed or failed."""
    with conn.cursor() as cur:
        cur.execute(_RUN_CHECKS, (run_id,))
        checks = [_RunCheck(*row) for row in cur.fetchall()]
    own = [check for check in checks if check.own]
    operations = [check for check in checks if not check.own]
    return RevisitRunReport(
        run_id,
        outcomes=_outcomes(own),
        operations={str(o): sum(c.outcome == o for c in operations) for o in OPERATION_OUTCOMES},
        failure_reasons=_failure_reasons(operations),
        slowest=_slowest(own),
        least_available=_least_available(own),
        changed=[c.listed() for c in own if c.outcome == CheckOutcome.CHANGED][:MAX_LISTED],
        failed=[c.listed() for c in checks if c.outcome == CheckOutcome.FAILED][:MAX_LISTED],
    )


def _outcomes(own: list[_RunCheck]) -> dict[str, int]:
    """The counts of the revisit summary that the history holds (a skipped resource has no row)."""
    return {
        "checked": len(own),
        **{str(o): sum(c.outcome == o for c in own) for o in OWN_OUTCOMES},
        "newly_dead": sum(bool(c.details.get("dead")) for c in own),
        "revived": sum(bool(c.details.get("revived")) for c in own),
    }


def _failure_reasons(operations: list[_RunCheck]) -> list[FailureReason]:
    counts = Counter((c.operation, c.error_reason) for c in operations if c.outcome == CheckOutcome.FAILED)
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0][0], item[0][1] or ""))
    return [FailureReason(operation, reason, n) for (operation, reason), n in ordered]


def _slowest(own: list[_RunCheck]) -> list[SlowService]:
    """The services whose check in the run took longest (a check without an answer has no time)."""
    timed = sorted(
        (c for c in own if c.total_seconds is not None), key=lambda c: (-c.total_seconds, c.resource_id)
    )
    return [
        SlowService(c.resource_id, c.type, c.url, c.total_seconds, c.median_30d_seconds)
        for c in timed[:TOP_LISTED]
    ]


def _least_available(own: list[_RunCheck]) -> list[ServiceAvailability]:
    """The checked services least available over 30 days; of equal ones, those checked more often first."""
    rated = sorted(
        (c for c in own if c.availability_30d_percent is not None),
        key=lambda c: (c.availability_30d_percent, -(c.checks_30d or 0), c.resource_id),
    )
    return [
        ServiceAvailability(
            c.resource_id, c.type, c.url, float(c.availability_30d_percent), c.checks_30d or 0
        )
        for c in rated[:TOP_LISTED]
    ]
