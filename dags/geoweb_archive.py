"""geoweb_archive: load the scene metadata that satellite-image archives (NSPO, STAC APIs) added since the last
run into PostGIS.

Wiring only: the adapters live in ``geoweb.connectors.archive``, the harvest in ``geoweb.harvest.archive``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from airflow.sdk import dag, get_current_context, task

from geoweb.harvest.params import ARCHIVES_VARIABLE, ArchiveParams
from geoweb_airflow import (
    connector_config,
    form_params,
    harvest_store,
    migrate_harvest_database,
)
from geoweb_airflow.runs import RunRule, resolve_run, run_params

DOC = f"""
### Load new satellite scenes

Loads the scenes that satellite-image archives added since their watermark into `archive_scenes`: the NSPO
archive, whose API is undocumented, through a request and field mapping kept in
`include/geoweb/connectors/archive/nspo.json` (reconfigure it there, or with the `mapping` setting), and STAC
APIs. Runs `@daily`, one run at a time; every task retries twice, 5 minutes apart.

`archives` resolves the run's params and names the archives to read, by the rule every geoweb DAG follows
(`dags/README.md`, *Runs, Variables and nothing to do*): the run's `archives`, else the Airflow Variable
`{ARCHIVES_VARIABLE}` (a JSON list such as `["nspo", "stac"]`); with none, there is nothing to read. From the
form: choose the archives in the multi-select (or leave them empty for the Variable's), press Trigger. The run's
**GeoWeb report** tab shows each archive's counts. `harvest` runs once per archive: the
scenes acquired since the archive's watermark (scene id, satellite, sensor, acquisition time, footprint,
cloud cover, quick-look URL) go into `archive_scenes`, committed page by page and keyed by (archive, scene
id), so a repeated or resumed run changes nothing. The watermark moves only when a harvest ends well.

An archive's URL, key and other settings come from the Connection `geoweb_<name>` (extra: `url`,
`page_size`, `collections` for STAC, `mapping` for a request and field mapping of your own; password: the
key), else from `GEOWEB_<NAME>_URL`, `GEOWEB_<NAME>_KEY`... (for the test web's STAC API: the Connection
`geoweb_stac` with extra `{{"url": "http://127.0.0.1:18042"}}`). A failing archive fails its own task with the
page and the reason (kept in `catalogue_sources` too); each task returns its counts.
"""


# The archives are what a run works on: with none chosen or in the Variable, a run has nothing to do.
RUN_RULE = RunRule(work={"archives": ARCHIVES_VARIABLE})


@task.short_circuit  # no archive: every later task is skipped
def archives() -> list[str]:
    """The archives of this run, once the harvest database is migrated and the run's params resolved."""
    migrate_harvest_database()
    params = resolve_run(ArchiveParams, RUN_RULE)
    return list(params.archives) if params else []


@task(map_index_template="{{ archive }}")
def harvest(name: str) -> dict:
    """Load one archive's new scenes into archive_scenes; returns its counts."""
    from airflow.sdk.exceptions import AirflowFailException

    from geoweb.connectors import ConfigError, QuotaExceeded, load_connector
    from geoweb.harvest.archive import harvest_archive

    context = get_current_context()
    context["archive"] = name  # names the mapped task in the UI
    bbox = run_params(ArchiveParams).bbox
    try:
        adapter = load_connector(name, connector_config(name))
    except ConfigError as exc:  # retrying mends no setting
        raise AirflowFailException(str(exc)) from None
    with harvest_store() as store:
        try:
            return harvest_archive(store, adapter, bbox=tuple(bbox) if bbox else None)
        except (ConfigError, QuotaExceeded) as exc:  # nor a refused key or a spent quota
            raise AirflowFailException(str(exc)) from None


@dag(
    schedule="@daily",
    start_date=datetime(2026, 1, 1, tzinfo=UTC),
    catchup=False,
    max_active_runs=1,
    tags=["geoweb", "archive", "satellite"],
    doc_md=DOC,
    default_args={"retries": 2, "retry_delay": timedelta(minutes=5)},
    params=form_params(ArchiveParams),
)
def geoweb_archive():
    harvest.expand(name=archives())


geoweb_archive()
