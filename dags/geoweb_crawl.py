"""geoweb_crawl: crawl the web breadth-first from seed pages and load the resources found into PostGIS.

Wiring only: the steps live in ``geoweb.harvest.crawl`` and the parameters in ``geoweb.harvest.params``.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from airflow.sdk import TriggerRule, dag, get_current_context, task

from geoweb.harvest.params import (
    ALLOWED_HOSTS_VARIABLE,
    MAX_LEVEL,
    POLICIES_VARIABLE,
    PROVIDERS_VARIABLE,
    SEEDS_VARIABLE,
    HarvestParams,
)
from geoweb.models import RunStatus
from geoweb_airflow import (
    CRAWL_POOL,
    SHARD_LABEL,
    connector_config,
    crawl_shard,
    form_params,
    harvest_store,
    migrate_harvest_database,
    url_policies,
    with_allowed_hosts,
)

log = logging.getLogger("geoweb.dags")

DOC = f"""
### Crawl the web for geospatial resources

Seeds go into the run's crawl frontier (level 0). Each level is split by host into shards, crawled in
parallel on the Celery workers (pool `{CRAWL_POOL}`): pages are fetched politely (robots.txt, per-host
delay and concurrency), OGC services, KML and shapefiles are recognised and validated, and resources are
loaded into PostGIS page by page. `finish_run` logs the per-level table (URLs, resources, discovery ratio)
and stores a PNG plot of it with the run.

**From the form**: give the seed pages (and, for a web on a local network, its hosts under `allowed_hosts`),
press Trigger; every other field has its default. The run's page then has a **GeoWeb report** tab: the
per-level table, the plot, resources per type and links into GeoHub. Each crawl task is labelled with its
shard and hosts, and its log lists every resource it finds.

A failed run resumes: clear its failed tasks and only the URLs not yet done are crawled. The same keys work
as run conf from the CLI (`airflow dags trigger geoweb_crawl --conf '{{"seeds": ["https://..."]}}'`) and
the REST API. Levels beyond `max_level` (at most {MAX_LEVEL}) are skipped. A run that names neither `seeds`
nor `search_providers` (a scheduled run) takes them from the Airflow Variables `{SEEDS_VARIABLE}` (a JSON list
of URLs) and `{PROVIDERS_VARIABLE}` (a JSON list of provider names); with neither set, a scheduled run does
nothing (its tasks are skipped) and `start_run` logs which Variable to set, while a run triggered by hand
fails, naming the fields to fill. `allowed_hosts` left empty takes the Variable `{ALLOWED_HOSTS_VARIABLE}`. A
bad conf fails `start_run` at once, naming the key. The params a run began with are stored with it
(`crawl_runs.params`) and every later task works with them. URL-pattern policies (skip or fetch
by regular expression) come from `url_policies`, else the Variable `{POLICIES_VARIABLE}`, else
`GEOWEB_URL_POLICIES`.

`seed_search` searches the keywords of the run's types (`keywords_by_type`, then `keywords`) with each of
`search_providers` (web search: `searxng`, `google`, `brave`; data portals: `datagov`, `ckan`), reading
`search_pages` result pages each, and adds the pages and service/file links found at level 0, each with
the keyword that found it. A provider's URL and key come from the Connection `geoweb_<name>` (extra: `url`
and other settings; password: the key), else from `GEOWEB_<NAME>_URL`, `GEOWEB_<NAME>_KEY`... A spent
quota or a missing key fails the task at once; without providers it does nothing. A retry skips the searches
an earlier try finished, so no quota is spent twice.
"""


def _begin():
    """(run_id, params) of a new run from its conf, with the Variables' defaults: a run that names neither
    seeds nor search providers (a scheduled run) takes both from SEEDS_VARIABLE and PROVIDERS_VARIABLE, and
    a run without url_policies those of POLICIES_VARIABLE. None when a scheduled run has nothing to crawl. A
    bad conf fails the task at once: retrying cannot mend it."""
    from airflow.sdk import Variable
    from airflow.sdk.exceptions import AirflowFailException

    from geoweb.paramspec import InvalidParams

    context = get_current_context()
    conf = with_allowed_hosts(dict(context["params"]))
    if not conf.get("seeds") and not conf.get("search_providers"):
        conf["seeds"] = Variable.get(SEEDS_VARIABLE, default=[], deserialize_json=True)
        conf["search_providers"] = Variable.get(PROVIDERS_VARIABLE, default=[], deserialize_json=True)
    if not conf["seeds"] and not conf["search_providers"]:
        if context["dag_run"].run_type == "manual":
            raise AirflowFailException(
                "nothing to crawl: give seeds (or search_providers) in the trigger form or the run's conf"
            )
        log.warning("nothing to crawl: set the Airflow Variable %s (a JSON list of seed URLs) or %s (a JSON "
                    "list of search providers) for scheduled runs; this run does nothing", SEEDS_VARIABLE,
                    PROVIDERS_VARIABLE)  # fmt: skip
        return None
    if not conf.get("url_policies"):
        conf["url_policies"] = url_policies()
    try:
        return context["dag_run"].run_id, HarvestParams.from_conf(conf)
    except InvalidParams as exc:
        raise AirflowFailException(str(exc)) from None


def _run(store):
    """(run_id, params) of the running task: the params start_run began the run with, stored with it, so
    every task of a run works with the same ones whatever the Variables say meanwhile."""
    run_id = get_current_context()["dag_run"].run_id
    return run_id, HarvestParams.from_conf(store.runs.conf(run_id))


@task.short_circuit  # nothing to crawl: every later task is skipped
def start_run() -> dict | None:
    """Migrate the harvest database, begin (or resume) the run and add its seeds at level 0."""
    from geoweb.harvest import crawl

    migrate_harvest_database()
    begun = _begin()
    if begun is None:
        return None
    run_id, params = begun
    with harvest_store() as store:
        return {"seeds": len(params.seeds), "new": crawl.start_run(store, run_id, params)}


@task
def seed_search() -> int:
    """Search the run's keywords with its search providers; what they find joins level 0 with its keyword."""
    from airflow.sdk.exceptions import AirflowFailException

    from geoweb.connectors import ConfigError, QuotaExceeded
    from geoweb.harvest import crawl

    with harvest_store() as store:
        run_id, params = _run(store)
        try:
            return crawl.seed_search(store, run_id, params, connector_config)
        except (ConfigError, QuotaExceeded) as exc:  # retrying mends neither a missing key nor a spent quota
            raise AirflowFailException(str(exc)) from None


@task(trigger_rule=TriggerRule.NONE_FAILED)  # runs after an empty (skipped) level too
def plan_level(level: int) -> list[int]:
    """The shards of the level with URLs to fetch: the map of the level's crawl tasks (empty: skipped)."""
    from geoweb.harvest import crawl

    with harvest_store() as store:
        run_id, params = _run(store)
        return crawl.plan_level(store, run_id, level, params)


@task(pool=CRAWL_POOL, map_index_template=SHARD_LABEL)
def crawl_level(level: int, shard: int) -> dict:
    """Crawl one shard of the level: its pages, resources and links are committed in batches."""
    with harvest_store() as store:
        run_id, params = _run(store)
        return crawl_shard(store, run_id, level, shard, params)


@task(trigger_rule=TriggerRule.NONE_FAILED)
def finish_run() -> dict:
    """Log the per-level report, store its plot with the run, and mark the run a success."""
    from geoweb.harvest import crawl

    with harvest_store() as store:
        return crawl.finish_run(store, get_current_context()["dag_run"].run_id)


def _mark_failed(context) -> None:
    """A failed DAG run is failed in the store too, so no run row stays 'running'."""
    with harvest_store() as store:
        store.runs.end(
            context["dag_run"].run_id,
            RunStatus.FAILED,
            {"reason": str(context.get("reason") or "a task failed")},
        )


@dag(
    schedule="@weekly",
    start_date=datetime(2026, 1, 1, tzinfo=UTC),
    catchup=False,
    max_active_runs=1,
    tags=["geoweb", "crawl"],
    doc_md=DOC,
    default_args={"retries": 2, "retry_delay": timedelta(seconds=30)},
    on_failure_callback=_mark_failed,
    params=form_params(HarvestParams),
)
def geoweb_crawl():
    done = start_run() >> seed_search()
    for level in range(MAX_LEVEL + 1):
        shards = plan_level.override(task_id=f"plan_level_{level}")(level)
        done >> shards
        # shard ids, never URL lists, go through XCom; at most MAX_SHARDS per level
        done = crawl_level.override(task_id=f"crawl_level_{level}").partial(level=level).expand(shard=shards)
    done >> finish_run()


geoweb_crawl()
