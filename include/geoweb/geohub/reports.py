"""The reports of harvest runs as GeoHub shows them on a DAG run's page: a crawl run's figures and plot, and
what a revisit run found. Each function takes a psycopg2 connection (``SearchDatabase.connection()``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from geoweb.models import CheckOutcome

MAX_LISTED = 200  # changed or failed resources listed in a revisit report


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
    type: str
    url: str
    detail: str | None  # why a check failed, or what changed


@dataclass(slots=True)
class RevisitRunReport:
    run_id: str
    outcomes: dict[str, int]  # unchanged, changed, failed: checks of the run
    changed: list[CheckedResource] = field(default_factory=list)
    failed: list[CheckedResource] = field(default_factory=list)


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


def revisit_run_report(conn, run_id: str) -> RevisitRunReport:
    """The checks of the revisit run ``run_id`` by outcome, with the resources that changed or failed."""
    report = RevisitRunReport(run_id, {str(outcome): 0 for outcome in CheckOutcome})
    with conn.cursor() as cur:
        cur.execute(
            "SELECT outcome, count(*) FROM resource_checks WHERE run_id = %s GROUP BY outcome", (run_id,)
        )
        report.outcomes.update(dict(cur.fetchall()))
        cur.execute(
            "SELECT k.outcome, r.type, r.url, coalesce(k.error_reason || ': ' || k.error_message, "
            "k.error_reason, k.details::text) "
            "FROM resource_checks k JOIN resources r ON r.id = k.resource_id "
            "WHERE k.run_id = %s AND k.outcome <> %s ORDER BY k.outcome, r.type, r.url LIMIT %s",
            (run_id, CheckOutcome.UNCHANGED, 2 * MAX_LISTED),
        )
        for outcome, kind, url, detail in cur.fetchall():
            listed = report.changed if outcome == CheckOutcome.CHANGED else report.failed
            if len(listed) < MAX_LISTED:
                listed.append(CheckedResource(kind, url, detail))
    return report
