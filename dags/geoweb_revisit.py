"""geoweb_revisit: re-check the known resources that are due, at intervals adapted to how often each changes.

Wiring only: the steps live in ``geoweb.harvest.revisit`` and the parameters in ``geoweb.harvest.params``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from airflow.sdk import TriggerRule, dag, get_current_context, task

from geoweb.harvest.params import ALLOWED_HOSTS_VARIABLE, POLICIES_VARIABLE, RevisitParams
from geoweb_airflow import (
    CRAWL_POOL,
    SHARD_LABEL,
    form_params,
    harvest_store,
    hosts_label,
    migrate_harvest_database,
)
from geoweb_airflow.runs import RunRule, resolve_run, run_params

DOC = f"""
### Re-check known services and files

Re-checks the known resources that are due, at intervals adapted to how often each one changes: `plan` →
`check[shard…]` → `summarize`. Runs `@hourly`, one run at a time; every task retries twice, 30 s apart; with
nothing due a run checks nothing. The schedule, the policies and SQL on the history: `docs/revisits.md` in
the repository.

`plan` takes up to `batch_size` resources whose next check is due (a resource new to the schedule is due one
day after it was found) and splits them by host into shards. `check` runs once per shard in the pool
`{CRAWL_POOL}`, politely (robots.txt, per-host delay and concurrency, the address guard): each resource's
document is fetched again (an OGC service's GetCapabilities of its type and version, a file's URL with the
Range reads its detector makes) and read by its own detector. A changed document updates the resource and its
datasets as the crawl loads them; every check is a row of `resource_checks`.

The next check comes sooner after a change (interval halved, down to `min_interval_hours`) and later when
nothing changed (doubled, up to `max_interval_hours`); a failed check retries sooner, and `dead_after`
failures in a row mark the resource dead (kept, checked at the maximum interval, alive again when it answers).
URL-pattern policies (`url_policies`) skip URLs or fix their interval. `summarize` logs checked, changed,
unchanged, failed, newly dead and the next due check. From the form every field has its default (add
`allowed_hosts` for resources on a local network). The run's **GeoWeb report** tab counts its checks by
outcome and lists what changed or failed.

**Variables**, by the rule every geoweb DAG follows (`dags/README.md`, *Runs, Variables and nothing to do*):
`plan` resolves the params; `allowed_hosts` left empty takes the Variable `{ALLOWED_HOSTS_VARIABLE}`,
`url_policies` the Variable `{POLICIES_VARIABLE}`, else `GEOWEB_URL_POLICIES`. A revisit always has work (the
resources already known), so a scheduled run needs no Variable.
"""


# A revisit works on the resources already known: a run always has work, though none may be due.
RUN_RULE = RunRule(variables={"allowed_hosts": ALLOWED_HOSTS_VARIABLE, "url_policies": POLICIES_VARIABLE})


def _settings(params: RevisitParams):
    """The run's settings; bad policies from GEOWEB_URL_POLICIES fail the task at once (the params' own
    were checked with them)."""
    from airflow.sdk.exceptions import AirflowFailException

    from geoweb.policy import InvalidPolicy, URLPolicies

    settings = params.settings()
    try:
        URLPolicies.from_setting(settings.url_policies)
    except InvalidPolicy as exc:
        raise AirflowFailException(str(exc)) from None
    return settings


@task
def plan() -> list[list[int]]:
    """The due resources' ids, one list per shard of hosts (empty: nothing is due, the checks are skipped),
    once the harvest database is migrated and the run's params resolved."""
    from geoweb.harvest import revisit

    migrate_harvest_database()
    params = resolve_run(RevisitParams, RUN_RULE)
    settings = _settings(params)
    with harvest_store() as store:
        return revisit.plan_revisits(store, params, settings)


@task(pool=CRAWL_POOL, map_index_template=SHARD_LABEL)
def check(ids: list[int]) -> dict:
    """Check one shard's resources; each check is saved as it ends."""
    from geoweb.harvest import revisit

    context = get_current_context()
    context["shard_label"] = f"{len(ids)} resources"  # names the mapped task in the UI, with its hosts
    params = run_params(RevisitParams)
    with harvest_store() as store:
        summary = revisit.check_resources(
            store, context["dag_run"].run_id, ids, _settings(params), operations=params.operations
        )
    if summary["hosts"]:
        context["shard_label"] = f"{len(ids)} resources on {hosts_label(summary['hosts'])}"
    return summary


@task(trigger_rule=TriggerRule.NONE_FAILED)
def summarize(summaries: list[dict]) -> dict:
    """Log the run's totals and when the next check is due."""
    from geoweb.harvest import revisit

    with harvest_store() as store:
        return revisit.summarize(store, summaries)


@dag(
    schedule="@hourly",
    start_date=datetime(2026, 1, 1, tzinfo=UTC),
    catchup=False,
    max_active_runs=1,
    tags=["geoweb", "revisit"],
    doc_md=DOC,
    default_args={"retries": 2, "retry_delay": timedelta(seconds=30)},
    params=form_params(RevisitParams),
)
def geoweb_revisit():
    summarize(check.expand(ids=plan()))


geoweb_revisit()
