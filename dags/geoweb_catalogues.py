"""geoweb_catalogues: harvest every known CSW catalogue into PostGIS, then validate the services and files its
records point to (the deep-web path).

Wiring only: the harvest and the crawl's seeds live in ``geoweb.harvest.catalogue``, the crawl steps in
``geoweb.harvest.crawl``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from airflow.sdk import TriggerRule, dag, get_current_context, task

from geoweb.harvest.params import (
    ALLOWED_HOSTS_VARIABLE,
    CATALOGUES_VARIABLE,
    CRAWL_RUN_PREFIX,
    CatalogueParams,
)
from geoweb.models import RunStatus
from geoweb_airflow import (
    CRAWL_POOL,
    SHARD_LABEL,
    crawl_shard,
    form_params,
    harvest_store,
    migrate_harvest_database,
)
from geoweb_airflow.runs import RunRule, resolve_run, run_params

DOC = f"""
### Harvest the CSW catalogues

Harvests every known CSW catalogue into PostGIS, then crawls the services and files its records point to (the
deep-web path). Runs `@daily`, one run at a time; every task retries twice, 2 minutes apart.

`catalogues` resolves the run's params and lists what to harvest: the run's `catalogues` and every CSW the
crawl has loaded into `resources`. From the form, every field has its default: press Trigger. The run's
**GeoWeb report** tab shows each catalogue's counts and the validation crawl's report.

**Variables**, by the rule every geoweb DAG follows (`dags/README.md`, *Runs, Variables and nothing to do*):
`catalogues` left empty takes the Variable `{CATALOGUES_VARIABLE}` (a JSON list of endpoints), else the
environment's `GEOWEB_CSW_CATALOGUES` (separated by commas); with none of them and no CSW found by the crawl,
there is nothing to harvest. `allowed_hosts` left empty takes the Variable `{ALLOWED_HOSTS_VARIABLE}`.

`harvest` runs once per catalogue: GetRecords page by page (Dublin Core or ISO 19139), each page committed
to `catalogue_records` as it arrives, with footprints in PostGIS. Harvests are incremental from each
catalogue's watermark (its newest modification date) and full every `full_every_days`; only a complete full
harvest withdraws the records a catalogue no longer has, and a failed one changes nothing it loaded before.
A failing catalogue fails its own task, with its error also kept in `catalogue_sources`; the others go on. Each task returns its counts (new, updated, unchanged, withdrawn...).

`start_crawl` then takes every link of an active record that looks like a service or a file and starts the
crawl run `catalogues__<run id>` with them as seeds (max level 0, the catalogue as source page): `crawl`
validates each with the detectors in the pool `{CRAWL_POOL}`, `finish_run` stores the run's report. Services
that no page links to are found this way. A link an earlier run validated after its record last changed is
left out (`geoweb_revisit` re-checks what it proved), unless the run is `full`. With no link to crawl the
crawl tasks are skipped.
"""


def _crawl_run_id(dag_run) -> str:
    """The id of the validation crawl of a DAG run."""
    return f"{CRAWL_RUN_PREFIX}{dag_run.run_id}"


def _crawl_run() -> tuple[str, object]:
    """(run id, HarvestParams) of this DAG run's validation crawl, as start_crawl began it."""
    from geoweb.harvest.params import HarvestParams

    run_id = _crawl_run_id(get_current_context()["dag_run"])
    with harvest_store() as store:
        return run_id, HarvestParams.from_conf(store.runs.conf(run_id))


def _found_catalogues() -> bool:
    """Whether the crawl has found any CSW, which every run harvests."""
    with harvest_store() as store:
        return bool(store.resources.csw_urls(()))


# The catalogues are what a run works on: those of its params, else of the Variable, and every CSW found.
RUN_RULE = RunRule(
    work={"catalogues": CATALOGUES_VARIABLE},
    variables={"allowed_hosts": ALLOWED_HOSTS_VARIABLE},
    found_work=_found_catalogues,
)


@task.short_circuit  # no catalogue: every later task is skipped
def catalogues() -> list[str]:
    """The endpoints to harvest: the run's and every CSW the crawl has found, once the harvest database is
    migrated and the run's params resolved."""
    migrate_harvest_database()
    params = resolve_run(CatalogueParams, RUN_RULE)
    if params is None:
        return []
    with harvest_store() as store:
        return store.resources.csw_urls(params.catalogues)


@task(map_index_template="{{ catalogue }}")
def harvest(url: str) -> dict:
    """Harvest one catalogue into catalogue_records; returns its counts."""
    from airflow.sdk.exceptions import AirflowFailException

    from geoweb.connectors import ConfigError
    from geoweb.connectors.csw import CSWConnector
    from geoweb.harvest.catalogue import harvest_catalogue

    context = get_current_context()
    context["catalogue"] = url  # names the mapped task in the UI
    params = run_params(CatalogueParams)
    config = {"url": url, "schema": params.schema, "page_size": params.page_size, "timeout": params.timeout,
              "allowed_hosts": list(params.allowed_hosts)}  # fmt: skip
    try:
        connector = CSWConnector(config)
    except ConfigError as exc:  # retrying mends no setting
        raise AirflowFailException(str(exc)) from None
    with harvest_store() as store:
        return harvest_catalogue(
            store, connector, full=params.full, full_every=timedelta(days=params.full_every_days)
        )


@task.short_circuit(trigger_rule=TriggerRule.ALL_DONE)  # one failed catalogue leaves the others' records
def start_crawl() -> int:
    """Start the validation crawl of the records' service and file links; 0 (nothing to crawl) skips it."""
    from geoweb.harvest.catalogue import start_catalogue_crawl

    params = run_params(CatalogueParams)
    run_id = _crawl_run_id(get_current_context()["dag_run"])
    with harvest_store() as store:
        return start_catalogue_crawl(store, run_id, params.crawl_conf(), everything=params.full)


@task
def plan() -> list[int]:
    """The shards of the crawl's only level (max level 0)."""
    import geoweb.harvest.crawl  # by its full name: this DAG's task crawl is another thing

    run_id, params = _crawl_run()
    with harvest_store() as store:
        return geoweb.harvest.crawl.plan_level(store, run_id, 0, params)


@task(pool=CRAWL_POOL, map_index_template=SHARD_LABEL)
def crawl(shard: int) -> dict:
    """Fetch and validate one shard of the records' links; what they are is loaded into resources."""
    run_id, params = _crawl_run()
    with harvest_store() as store:
        return crawl_shard(store, run_id, 0, shard, params)


@task(trigger_rule=TriggerRule.NONE_FAILED)
def finish_run() -> dict:
    """Log and store the crawl's report and mark it a success."""
    import geoweb.harvest.crawl

    run_id, _ = _crawl_run()
    with harvest_store() as store:
        return geoweb.harvest.crawl.finish_run(store, run_id)


def _mark_failed(context) -> None:
    """A failed DAG run marks its crawl run failed too, when it had begun one."""
    from contextlib import suppress

    from geoweb.store import StoreError

    run_id = _crawl_run_id(context["dag_run"])
    with harvest_store() as store, suppress(StoreError):  # unknown run: the DAG failed before the crawl began
        store.runs.end(run_id, RunStatus.FAILED, {"reason": str(context.get("reason") or "a task failed")})


@dag(
    schedule="@daily",
    start_date=datetime(2026, 1, 1, tzinfo=UTC),
    catchup=False,
    max_active_runs=1,
    tags=["geoweb", "catalogues", "csw"],
    doc_md=DOC,
    default_args={"retries": 2, "retry_delay": timedelta(minutes=2)},
    on_failure_callback=_mark_failed,
    params=form_params(CatalogueParams),
)
def geoweb_catalogues():
    started = start_crawl()
    harvest.expand(url=catalogues()) >> started
    shards = plan()
    started >> shards
    crawl.expand(shard=shards) >> finish_run()


geoweb_catalogues()
