"""geoweb_crawl: crawl the web breadth-first from seed pages and load the resources found into PostGIS.

Wiring only: the steps live in ``geoweb.harvest.crawl`` and the parameters in ``geoweb.harvest.params``.
"""

from __future__ import annotations

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
)
from geoweb_airflow.runs import RunRule, resolve_run, run_params

DOC = f"""
### Crawl the web for geospatial resources

Crawls the web breadth-first from seed pages and loads the services and files it finds into PostGIS. Runs
`@weekly`, without catchup, one run at a time; every task retries twice, 30 s apart.

```
start_run → seed_search → plan_level_0 → crawl_level_0[shard…] → … → crawl_level_{MAX_LEVEL}[shard…] → finish_run
```

**From the form**: give the seed pages (one URL per line) and, for a web on a local network, its hosts under
`allowed_hosts` (one `host[:port]` per line), then press Trigger. The first section, Run Parameters, holds
what a crawl is about; the others (Search seeding, Politeness and scale, Link priority and URL policies) stay
collapsed with their defaults. Every field has a default, with its unit and range in its description; an
optional field left empty means its default. The same keys work as run conf from the CLI (`airflow dags
trigger geoweb_crawl --conf '{{"seeds": ["https://..."], "max_level": 3}}'`) and the REST API.

**Following a run**: each crawl task is labelled with its shard and hosts (`shard 3: data.example.org,
maps.example.org and 2 more`), and its log lists every resource as it is found (`found WMS https://... (12
datasets) on https://...`), then the shard's counts. The run's page has a **GeoWeb report** tab: the
per-level table, the plot (resources and URLs fetched per level, discovery ratio, recall curve of the link
budget, and the cost of the crawl's last runs side by side), the run's cost (requests, bytes read, pages new,
changed and gone, pages carried over and the bytes that saved), the URLs deferred to a later run per
reason, resources per type and links into GeoHub filtered to the run and to each type.

**Continuing a crawl**: the runs of one crawl (the field `crawl`; empty, it is named after the seeds and search
providers, so every scheduled run continues the one before) share what they learnt of each URL, in the table
`page_states`: a run asks with the validators the last one kept (If-None-Match, If-Modified-Since) and
carries a 304, or the same bytes, over unread, with the page's links and resources; each shard's summary
counts them (`not_modified`, `same_bytes`). With `revisit_budget`, the run asks again at most that many
known pages, those whose revisit is worth most (read once, then likeliest to have changed by their history),
and carries the others over unasked (`not_due`); `revisit_megabytes` bounds the same choice by the bytes of
their last whole reads. A page carried over unasked that gave no resource does not go through the crawler:
its task marks it fetched and adds the links its state keeps, as the crawl admitted them, in SQL (the
summary's `carried_in_sql`). With `time_budget_hours`, the run sends requests for that long from its start, then
carries over the known pages it has not asked and defers the URLs new to the crawl. Every URL is read whole at least once a week;
`full_recrawl` reads them all whole now.

**Tasks**:

- `start_run` migrates the harvest database, resolves the run's params (below), then begins (or resumes) the
  run in `crawl_runs` and adds its seeds to the run's crawl frontier at level 0.
- `seed_search` searches the keywords of the run's types (`keywords_by_type`, then `keywords`) with each of
  `search_providers` (web search: `searxng`, `google`, `brave`; data portals: `datagov`, `ckan`), reading
  `search_pages` result pages each. Pages and service or file links found join level 0, each with the keyword
  that found it; portal datasets go to `catalogue_records`. A provider's URL and key come from the Connection
  `geoweb_<name>` (extra: `url` and other settings; password: the key), else from `GEOWEB_<NAME>_URL`,
  `GEOWEB_<NAME>_KEY`... A spent quota or a missing key fails the task at once, with the provider's message;
  without providers it does nothing. A retry skips the searches an earlier try finished (`seed_searches`), so
  no quota is spent twice.
- `plan_level_N` returns the ids of level N's shards that still have URLs to fetch: none past `max_level` (at
  most {MAX_LEVEL}) or when nothing is pending. XCom carries only these ids, never URLs.
- `crawl_level_N` is mapped over those ids in the pool `{CRAWL_POOL}`. A shard holds every URL of some hosts,
  so one task at a time crawls a given host and politeness (robots.txt, per-host delay and concurrency) holds
  across workers. OGC services, OGC APIs, STAC, ArcGIS REST services and files are recognised and validated;
  pages, resources and new links are committed in batches of 50 pages or every 2 s. A URL enters the
  frontier at most once per run, whichever worker finds it. Without a link budget a shard runs on to its
  hosts' next level as its pages commit them and, with nothing left while another task of the level is
  at work, takes on the next level of shards no task of the level crawls (the summary's `adopted_shards`),
  so a slow host elsewhere holds none of them; a URL's level stays its hop count from the seeds. A level
  without shards (all of them taken on by the level before, or none pending) skips its mapped task; the next
  `plan_level` and `finish_run` still run.
- `finish_run` logs the per-level table (URLs, resources, discovery ratio), stores it and a PNG plot of it
  with the run (`crawl_runs.summary`, `crawl_runs.report_png`) and marks the run `success`. It deletes the
  frontier rows past the seeds of the crawl's earlier runs: their reports stay, and what the next run needs
  of a URL is in `page_states`.

**Failures**: a killed worker or a retried task redoes only the pages not yet committed, and redoing a page
writes the same rows, so nothing is duplicated. To resume a failed run, clear its failed tasks: only the
URLs not yet done are crawled; once a later run of its crawl has succeeded, that run has taken over and the
failed one's frontier is gone. A failed DAG run marks its `crawl_runs` row `failed`.

**Scheduled runs and Variables**, by the rule every geoweb DAG follows (`dags/README.md`, *Runs, Variables
and nothing to do*): `seeds` and `search_providers` left both empty take the Variables `{SEEDS_VARIABLE}` (a
JSON list of URLs) and `{PROVIDERS_VARIABLE}` (a JSON list of provider names); with neither, there is nothing
to crawl. `allowed_hosts` left empty takes `{ALLOWED_HOSTS_VARIABLE}`, `url_policies` (URL-pattern policies:
skip or fetch by regular expression) `{POLICIES_VARIABLE}`, else `GEOWEB_URL_POLICIES`.

**Database**: the Airflow Connection `geoweb_db`, else the environment variable `GEOWEB_DB`, read inside the
tasks; parsing the DAG opens no connection.
"""


# Seeds and search providers are what a crawl works on: with neither, a run has nothing to do.
RUN_RULE = RunRule(
    work={"seeds": SEEDS_VARIABLE, "search_providers": PROVIDERS_VARIABLE},
    variables={"allowed_hosts": ALLOWED_HOSTS_VARIABLE, "url_policies": POLICIES_VARIABLE},
)


@task.short_circuit  # nothing to crawl: every later task is skipped
def start_run() -> dict | None:
    """Migrate the harvest database, begin (or resume) the run and add its seeds at level 0."""
    from geoweb.harvest import crawl

    migrate_harvest_database()
    params = resolve_run(HarvestParams, RUN_RULE)
    if params is None:
        return None
    with harvest_store() as store:
        return {"seeds": len(params.seeds), "new": crawl.start_run(store, _run_id(), params)}


@task
def seed_search() -> int:
    """Search the run's keywords with its search providers; what they find joins level 0 with its keyword."""
    from airflow.sdk.exceptions import AirflowFailException

    from geoweb.connectors import ConfigError, QuotaExceeded
    from geoweb.harvest import crawl

    with harvest_store() as store:
        try:
            return crawl.seed_search(store, _run_id(), run_params(HarvestParams), connector_config)
        except (ConfigError, QuotaExceeded) as exc:  # retrying mends neither a missing key nor a spent quota
            raise AirflowFailException(str(exc)) from None


@task(trigger_rule=TriggerRule.NONE_FAILED)  # runs after an empty (skipped) level too
def plan_level(level: int) -> list[int]:
    """The shards of the level with URLs to fetch: the map of the level's crawl tasks (empty: skipped)."""
    from geoweb.harvest import crawl

    with harvest_store() as store:
        return crawl.plan_level(store, _run_id(), level, run_params(HarvestParams))


@task(pool=CRAWL_POOL, map_index_template=SHARD_LABEL)
def crawl_level(level: int, shard: int) -> dict:
    """Crawl one shard of the level: its pages, resources and links are committed in batches."""
    with harvest_store() as store:
        return crawl_shard(store, _run_id(), level, shard, run_params(HarvestParams))


@task(trigger_rule=TriggerRule.NONE_FAILED)
def finish_run() -> dict:
    """Log the per-level report, store its plot with the run, and mark the run a success."""
    from geoweb.harvest import crawl

    with harvest_store() as store:
        return crawl.finish_run(store, _run_id())


def _run_id() -> str:
    """The running DAG run's id: its crawl run's too."""
    return get_current_context()["dag_run"].run_id


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
