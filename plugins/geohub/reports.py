"""The GeoWeb report of a DAG run: the tab Airflow shows on every run's page (an ``external_views`` entry with
destination ``dag_run``), served by GeoHub behind Airflow's login as a page (``/runs/{dag_id}/{run_id}``,
templates/report.html) and as JSON (``/api/runs/{dag_id}/{run_id}``), with a crawl run's plot.

A crawl run's figures come from the harvest database (``geoweb.geohub.reports``); the per-source counts of a
catalogue or archive harvest are the return values of its mapped tasks, read from Airflow's own database.
Titles and URLs come from strangers' servers: the template escapes every value it writes.
"""

from __future__ import annotations

import html
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, HTTPException, Query, Request, status
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from geohub.access import User
from geohub.harvest_db import HarvestDatabase
from geoweb.crawl.report import CrawlReport
from geoweb.geohub.query import MAX_NAME
from geoweb.geohub.reports import (
    CrawlRunReport,
    RevisitRunReport,
    crawl_run_plot,
    crawl_run_report,
    revisit_run_report,
)
from geoweb.harvest.params import CRAWL_RUN_PREFIX
from geoweb.models import DeferReason

CRAWL_DAG, CATALOGUE_DAG, ARCHIVE_DAG, REVISIT_DAG = (
    "geoweb_crawl",
    "geoweb_catalogues",
    "geoweb_archive",
    "geoweb_revisit",
)
HARVEST_TASK = "harvest"  # the mapped task of the catalogue and archive DAGs, one per source
RunId = Annotated[str, PathParam(max_length=MAX_NAME)]  # a DAG's or a DAG run's id

router = APIRouter()


@dataclass(slots=True)
class SourceHarvest:
    """One mapped harvest task of a run: its source (the task's label), state and returned counts."""

    source: str
    state: str | None
    counts: dict[str, Any] | None


@dataclass(slots=True)
class RunReport:
    dag_id: str
    run_id: str
    crawl: CrawlRunReport | None = None  # the crawl run, or the catalogue run's validation crawl
    harvests: list[SourceHarvest] = field(default_factory=list)
    revisit: RevisitRunReport | None = None

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def run_report(conn, dag_id: str, run_id: str) -> RunReport:
    """What GeoHub knows of the DAG run; empty for a DAG that is not GeoWeb's."""
    report = RunReport(dag_id, run_id)
    if dag_id == CRAWL_DAG:
        report.crawl = crawl_run_report(conn, run_id)
    elif dag_id == CATALOGUE_DAG:
        report.harvests = source_harvests(dag_id, run_id)
        report.crawl = crawl_run_report(conn, CRAWL_RUN_PREFIX + run_id)
    elif dag_id == ARCHIVE_DAG:
        report.harvests = source_harvests(dag_id, run_id)
    elif dag_id == REVISIT_DAG:
        report.revisit = revisit_run_report(conn, run_id)
    return report


def source_harvests(dag_id: str, run_id: str) -> list[SourceHarvest]:
    """The run's mapped harvest tasks, in map order: label, state and returned counts (None until done)."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    tasks = TaskInstance.__table__.c
    with create_session() as session:
        instances = session.execute(
            select(tasks.map_index, tasks.rendered_map_index, tasks.state).where(
                tasks.dag_id == dag_id, tasks.run_id == run_id, tasks.task_id == HARVEST_TASK
            )
        ).all()
        values = {
            xcom.map_index: XComModel.deserialize_value(xcom)
            for xcom in session.scalars(
                select(XComModel).where(
                    XComModel.dag_id == dag_id,
                    XComModel.run_id == run_id,
                    XComModel.task_id == HARVEST_TASK,
                    XComModel.key == "return_value",
                )
            )
        }
    return [
        SourceHarvest(label or f"task {index}", str(state) if state else None, values.get(index))
        for index, label, state in sorted(instances)
        if index >= 0  # -1: the task was never expanded (no source)
    ]


@router.get("/runs/{dag_id}/{run_id}", include_in_schema=False)
def report_page(
    dag_id: RunId, run_id: RunId, request: Request, user: User, db: HarvestDatabase
) -> HTMLResponse:
    """The GeoWeb report tab of a DAG run's page in the Airflow UI."""
    with db.connection() as conn:
        report = run_report(conn, dag_id, run_id)
    return HTMLResponse(render(report, request.scope.get("root_path", "")))


@router.get("/runs/plot.png", include_in_schema=False)
def report_plot(run: Annotated[str, Query(max_length=MAX_NAME)], user: User, db: HarvestDatabase) -> Response:
    with db.connection() as conn:
        png = crawl_run_plot(conn, run)
    if png is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no plot for run {run}")
    return Response(png, media_type="image/png")


@router.get("/api/runs/{dag_id}/{run_id}", summary="The report of a DAG run")
def run_report_json(dag_id: RunId, run_id: RunId, user: User, db: HarvestDatabase) -> dict:
    """A crawl run's per-level figures, resources per type and recall curve (the validation crawl for a
    catalogue run), the per-source counts of a catalogue or archive run; for a revisit run, its checks by
    outcome, its operation checks by outcome with the failures' reasons, its 10 slowest and 10 least available
    services (times, availability over 30 days) and the checks that changed or failed."""
    with db.connection() as conn:
        return run_report(conn, dag_id, run_id).as_json()


# --- the page -----------------------------------------------------------------------------------------------


def _escaped(value: Any) -> Markup:
    """A value as the page writes it: escaped by the standard library (a quote as ``&quot;``, where
    markupsafe writes ``&#34;``), markup the template made itself left as it is."""
    return value if isinstance(value, Markup) else Markup(html.escape(str(value)))


PAGES = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=select_autoescape(["html"]),
    finalize=_escaped,
    trim_blocks=True,
    lstrip_blocks=True,
)


def render(report: RunReport, geohub: str) -> str:
    """The report as an HTML page; ``geohub`` is GeoHub's root path (links into its search)."""
    return PAGES.get_template("report.html").render(
        report=report,
        geohub=geohub,
        known=report.dag_id in (CRAWL_DAG, CATALOGUE_DAG, ARCHIVE_DAG, REVISIT_DAG),
        harvested=bool(report.harvests) or report.dag_id in (CATALOGUE_DAG, ARCHIVE_DAG),
        catalogue=report.dag_id == CATALOGUE_DAG,
        crawled=report.dag_id in (CRAWL_DAG, CATALOGUE_DAG),
        crawl=_crawl_figures(report.crawl, geohub),
    )


def _defer_message(reason: str) -> str:
    """A deferral's reason as the frontier words it; a reason this version does not know, as it is."""
    return DeferReason(reason).message if reason in DeferReason.__members__.values() else reason


def _crawl_figures(crawl: CrawlRunReport | None, geohub: str) -> dict[str, Any] | None:
    """What the page shows of a finished crawl beyond its report: its levels and totals as its stored summary
    gives them (``CrawlReport.from_summary``), links, resources per type, most first; None before its figures
    are stored."""
    summary = crawl.summary if crawl else None
    if not summary or "levels" not in summary:
        return None
    stored = CrawlReport.from_summary(summary)
    totals = stored.totals()
    return {
        "levels": stored.levels,
        "total": totals,
        "costs": summary.get("costs"),
        "deferred": [
            (_defer_message(reason), n) for reason, n in summary.get("deferred_by_reason", {}).items()
        ],
        "by_type": sorted(totals.by_type, key=lambda item: (-item[1], item[0])),
        "search": f"{geohub}/?" + urlencode({"run": crawl.run_id, "in_view": "false"}),
        "plot": f"{geohub}/runs/plot.png?" + urlencode({"run": crawl.run_id}) if crawl.has_plot else None,
    }
