"""python -m stack.demo: crawl the local test web with the geoweb_crawl DAG, through Airflow's REST API as the
UI does, then show what the run loaded into PostGIS and where to look. The stack and the test web must be up.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from urllib.parse import quote

from geoweb.crawl import CrawlReport
from geoweb.harvest.crawl import level_table
from geoweb.harvest.params import ALLOWED_HOSTS_VARIABLE, CATALOGUES_VARIABLE, SEEDS_VARIABLE
from geoweb.settings import Settings
from geoweb.store import Store
from stack.airflow import MAIN_DAG
from stack.airflow_api import ADMIN, AirflowClient, AirflowError, admin_password
from stack.catalogue import PUBLIC_URL as CATALOGUE
from stack.layout import API_URL, GEOWEB_DB, PG_LOG, REPO
from testweb import catalogue

MANIFEST = REPO / "var" / "testweb" / "manifest.json"
OUT = REPO / "var" / "demo"
RUN_TIMEOUT = 900.0
SHOWN = 50  # resources listed; all of them are in resources.jsonl
REPORT_ROUTE = "geoweb_report"  # the url_route of the plugin's dag_run view (plugins/geohub_plugin.py)


def crawl_conf(manifest: dict) -> dict:
    """The run's conf: the test web's seeds, its loopback hosts allowed, five levels deep."""
    return {"seeds": manifest["seeds"], "allowed_hosts": ["127.0.0.1"], "max_level": 5}


def schedule_variables(manifest: dict) -> dict[str, list[str]]:
    """The Airflow Variables that make the scheduled runs harvest the test web: the weekly crawl its seeds,
    the daily catalogue harvest its pycsw, both on its loopback hosts."""
    return {
        SEEDS_VARIABLE: manifest["seeds"],
        ALLOWED_HOSTS_VARIABLE: ["127.0.0.1"],
        CATALOGUES_VARIABLE: [catalogue.URL],
    }


def set_schedule_variables(client: AirflowClient, manifest: dict) -> None:
    for key, value in schedule_variables(manifest).items():
        client.set_variable(key, value, "set by make demo: scheduled runs harvest the local GeoWeb")
        print(f"Variable {key} = {json.dumps(value)}")


def run_crawl(client: AirflowClient, conf: dict, timeout: float = RUN_TIMEOUT) -> tuple[str, str]:
    """Unpauses the DAG, triggers a run with ``conf`` and waits for it: (run id, final state)."""
    client.unpause(MAIN_DAG)
    run_id = client.trigger(MAIN_DAG, conf)
    print(f"triggered {MAIN_DAG} run {run_id}; follow it at {API_URL}/dags/{MAIN_DAG}")
    return run_id, client.wait(MAIN_DAG, run_id, timeout)


def show_run(store: Store, run_id: str, out: Path) -> None:
    """Prints the run's per-level table, resources per type and a list of resources, and writes them out:
    resources.jsonl (the ``geoweb crawl`` records) and levels.png (the plot the run stored)."""
    records = list(store.resources.export(run_id))
    report = CrawlReport(levels=store.runs.level_stats(run_id))
    report.resources_by_type = Counter(r["type"] for r in records)
    report.seconds = sum(s.seconds for s in report.levels)  # levels run one after the other
    print(level_table(report))
    out.mkdir(parents=True, exist_ok=True)
    with (out / "resources.jsonl").open("w", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    png = store.runs.report_png(run_id)
    if png:
        (out / "levels.png").write_bytes(png)
    print(f"\n== resources found (first {min(SHOWN, len(records))} of {len(records)})")
    shown = sorted(records, key=lambda r: (r["level"], r["type"], r["url"]))[:SHOWN]
    width = max((len(r["type"]) for r in shown), default=0)
    for r in shown:
        title, version, kind = (r["title"] or "")[:40], r["version"] or "", r["type"]
        print(f"L{r['level']} {kind:{width}} {version:6} {r['datasets']:>3} datasets  {title:40}  {r['url']}")
    print(f"\nResources: {out / 'resources.jsonl'}" + (f", plot: {out / 'levels.png'}" if png else ""))


def report_url(dag_id: str, run_id: str) -> str:
    """The GeoWeb report tab of a DAG run's page in the Airflow UI."""
    return f"{API_URL}/dags/{dag_id}/runs/{quote(run_id, safe='')}/plugin/{REPORT_ROUTE}"


def where_to_look() -> None:
    if Settings.from_env().catalogue_public:  # the stack's processes read the same environment
        access = "both open to anyone (GEOWEB_CATALOGUE_PUBLIC is set: docs/catalogue.md)"
    else:
        access = "both behind the Airflow login (docs/catalogue.md: GEOWEB_CATALOGUE_PUBLIC=yes opens them)"
    print(f"""
Where to look (everything keeps running):
  Airflow UI   {API_URL}   login {ADMIN} / {admin_password()}
               trigger a harvest: DAG geoweb_crawl, Trigger, fill Seeds (and Allowed Hosts), Trigger
               geoweb_catalogues harvests the local pycsw daily once unpaused (Variables set above)
  GeoHub       {API_URL}/geohub   (search what was found; also in the UI's navigation)
  Catalogue    {CATALOGUE}/csw       CSW 2.0.2 (QGIS MetaSearch: Web > MetaSearch > New)
               {CATALOGUE}/records   OGC API - Records
               {access}
  PostGIS      psql {GEOWEB_DB}   (tables resources, datasets, crawl_runs, crawl_levels)
  logs         var/stack/logs (services), {PG_LOG} (PostgreSQL),
               var/stack/airflow/logs (tasks), var/testweb/logs (test web)
  stop it all  make stop""")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m stack.demo", description=__doc__)
    parser.add_argument("--out", type=Path, default=OUT, help="where resources.jsonl and levels.png go")
    args = parser.parse_args(argv)
    started = time.monotonic()
    client = AirflowClient.from_environment()
    manifest = json.loads(MANIFEST.read_text())
    try:
        set_schedule_variables(client, manifest)
        run_id, state = run_crawl(client, crawl_conf(manifest))
    except AirflowError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"run {run_id}: {state} after {time.monotonic() - started:.0f} s\n")
    if state != "success":
        failed = [t for t in client.task_instances(MAIN_DAG, run_id) if t["state"] == "failed"]
        for ti in failed:
            print(
                f"failed: {ti['task_id']} (map index {ti['map_index']}); its log is in the UI",
                file=sys.stderr,
            )
        where_to_look()
        return 1
    with Store(GEOWEB_DB) as store:
        show_run(store, run_id, args.out)
    print(f"\nThe run's report in the UI (its tab GeoWeb report): {report_url(MAIN_DAG, run_id)}")
    where_to_look()
    return 0


if __name__ == "__main__":
    sys.exit(main())
