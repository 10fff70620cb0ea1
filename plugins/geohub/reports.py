"""The GeoWeb report of a DAG run: the tab Airflow shows on every run's page (an ``external_views`` entry with
destination ``dag_run``), served by GeoHub behind Airflow's login.

A crawl run's figures come from the harvest database (``geoweb.geohub.reports``); the per-source counts of a
catalogue or archive harvest are the return values of its mapped tasks, read from Airflow's own database.
The page is built here as escaped HTML: titles and URLs come from strangers' servers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from html import escape
from typing import Any
from urllib.parse import urlencode

from geoweb.geohub.reports import CrawlRunReport, RevisitRunReport, crawl_run_report, revisit_run_report
from geoweb.harvest.params import CRAWL_RUN_PREFIX

CRAWL_DAG, CATALOGUE_DAG, ARCHIVE_DAG, REVISIT_DAG = (
    "geoweb_crawl",
    "geoweb_catalogues",
    "geoweb_archive",
    "geoweb_revisit",
)
HARVEST_TASK = "harvest"  # the mapped task of the catalogue and archive DAGs, one per source


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


# --- the page -----------------------------------------------------------------------------------------------


def render(report: RunReport, geohub: str) -> str:
    """The report as an HTML page; ``geohub`` is GeoHub's root path (links into its search)."""
    title = f"GeoWeb report: {report.dag_id} {report.run_id}"
    body = [
        f"<h1>GeoWeb report</h1><p class='meta'>{escape(report.dag_id)} · run {escape(report.run_id)}</p>"
    ]
    if report.dag_id not in (CRAWL_DAG, CATALOGUE_DAG, ARCHIVE_DAG, REVISIT_DAG):
        body.append("<p>This DAG is not one of GeoWeb Harvester's: there is no report for its runs.</p>")
    if report.harvests or report.dag_id in (CATALOGUE_DAG, ARCHIVE_DAG):
        body.append(_harvests(report))
    if report.dag_id in (CRAWL_DAG, CATALOGUE_DAG):
        body.append(_crawl(report.crawl, geohub, validation=report.dag_id == CATALOGUE_DAG))
    if report.revisit is not None:
        body.append(_revisit(report.revisit))
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{escape(title)}</title><link rel='stylesheet' href='{escape(geohub)}/static/report.css'>"
        f"</head><body><main id='report'>{''.join(body)}</main></body></html>"
    )


def _crawl(crawl: CrawlRunReport | None, geohub: str, *, validation: bool) -> str:
    heading = "<h2>Validation crawl of the records' links</h2>" if validation else "<h2>Crawl</h2>"
    if crawl is None:
        what = (
            "the records offered no service or file to validate"
            if validation
            else "it found nothing to crawl"
        )
        return f"{heading}<p id='crawl-status'>No crawl was run: {what}, or it has not begun yet.</p>"
    parts = [
        heading,
        f"<p id='crawl-status'>Status <b>{escape(crawl.status)}</b> · started {crawl.started_at:%Y-%m-%d %H:%M:%S}"
        + (f" · finished {crawl.finished_at:%Y-%m-%d %H:%M:%S}" if crawl.finished_at else "")
        + f" · {crawl.resources} resources found</p>",
    ]
    summary = crawl.summary
    if not summary or "levels" not in summary:
        parts.append("<p>The run's figures are stored when it finishes.</p>")
        return "".join(parts)
    plot = (
        f"<img id='plot' alt='Resources and discovery ratio per level, and the recall curve' "
        f"src='{escape(geohub)}/runs/plot.png?{escape(urlencode({'run': crawl.run_id}))}'>"
        if crawl.has_plot
        else ""
    )
    parts.append(f"<div class='figures'><div>{_level_table(summary)}</div>{plot}</div>")
    by_type = sorted((summary.get("resources_by_type") or {}).items(), key=lambda item: (-item[1], item[0]))
    search = f"{geohub}/?" + urlencode({"run": crawl.run_id, "in_view": "false"})
    rows = "".join(
        f"<tr><td><a target='_blank' rel='noopener' href='{escape(search)}&amp;type={escape(kind)}'>"
        f"{escape(kind)}</a></td><td class='n'>{count}</td></tr>"
        for kind, count in by_type
    )
    parts.append(
        f"<p><a id='geohub-link' target='_blank' rel='noopener' href='{escape(search)}'>"
        f"All {crawl.resources} resources of this run in GeoHub</a></p>"
        "<h3>Resources per type</h3><table id='types'><thead><tr><th>type</th><th>resources</th></tr></thead>"
        f"<tbody>{rows or '<tr><td colspan=2>none</td></tr>'}</tbody></table>"
    )
    return "".join(parts)


def _level_table(summary: dict[str, Any]) -> str:
    rows = "".join(
        f"<tr><td class='n'>{s['level']}</td><td class='n'>{s['urls']}</td><td class='n'>{s['resources']}</td>"
        f"<td class='n'>{s['failures']}</td><td class='n'>{s.get('deferred', 0)}</td>"
        f"<td class='n'>{s['discovery_ratio']:.4f}</td>"
        f"<td class='n'>{s['seconds']:.1f}</td></tr>"
        for s in summary["levels"]
    )
    urls, resources = summary.get("urls", 0), summary.get("resources", 0)
    ratio = resources / urls if urls else 0.0
    seconds = sum(s["seconds"] for s in summary["levels"])
    failures = sum(s["failures"] for s in summary["levels"])
    deferred = sum(s.get("deferred", 0) for s in summary["levels"])
    total = (
        f"<tr class='total'><td>all</td><td class='n'>{urls}</td><td class='n'>{resources}</td>"
        f"<td class='n'>{failures}</td><td class='n'>{deferred}</td><td class='n'>{ratio:.4f}</td>"
        f"<td class='n'>{seconds:.1f}</td></tr>"
    )
    aside = max((s.get("deferred_hosts", 0) for s in summary["levels"]), default=0)
    note = (
        f"<p id='deferred'>{deferred} URLs deferred: their hosts ({aside} at most in a level) were set aside "
        "for stalling, tarpitting or failing (time or failure budget, level deadline).</p>"
        if deferred
        else ""
    )
    return (
        "<h3>Per level</h3><table id='levels'><thead><tr><th>level</th><th>URLs fetched</th><th>resources</th>"
        "<th>failures</th><th>deferred</th><th>discovery ratio</th><th>seconds</th></tr></thead>"
        f"<tbody>{rows}{total}</tbody></table>{note}"
    )


def _harvests(report: RunReport) -> str:
    heading = "<h2>Catalogues harvested</h2>" if report.dag_id == CATALOGUE_DAG else "<h2>Archives read</h2>"
    if not report.harvests:
        return f"{heading}<p id='harvests'>Nothing was harvested: no source was configured for this run.</p>"
    rows = "".join(
        f"<tr><td>{escape(h.source)}</td><td>{escape(h.state or 'not started')}</td><td>"
        + (escape(", ".join(f"{k} {v}" for k, v in h.counts.items())) if isinstance(h.counts, dict) else "")
        + "</td></tr>"
        for h in report.harvests
    )
    return (
        f"{heading}<table id='harvests'><thead><tr><th>source</th><th>state</th><th>counts</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
    )


def _revisit(revisit: RevisitRunReport) -> str:
    outcomes = " · ".join(f"{escape(k)} <b>{v}</b>" for k, v in revisit.outcomes.items())
    parts = [f"<h2>Checks</h2><p id='outcomes'>{outcomes}</p>"]
    for name, listed in (("Changed", revisit.changed), ("Failed", revisit.failed)):
        if listed:
            rows = "".join(
                f"<tr><td>{escape(c.type)}</td><td class='url'>{escape(c.url)}</td><td>{escape(c.detail or '')}</td></tr>"
                for c in listed
            )
            parts.append(
                f"<h3>{name}</h3><table><thead><tr><th>type</th><th>URL</th><th>detail</th></tr></thead>"
                f"<tbody>{rows}</tbody></table>"
            )
    return "".join(parts)
