"""Revisits: known resources re-checked on a schedule adapted to how often each one changes, by their own
detectors (``geoweb.harvest.recheck``), with the change history in PostGIS. The steps of a revisit run, as
the revisit DAG's tasks and ``geoweb revisit`` call them: plan (the due resources, split by host into
shards), check a shard, summarise.

A shard holds every due resource of some hosts, so one task at a time talks to a host and the fetcher's
per-host politeness holds. Each check is saved as it ends; a retried task checks only what is still due.

The schedule (``Schedule``): halve the interval when a resource changed, double it when it did not (bounded
by the minimum and maximum), so each resource converges to its own change rate. A failed check keeps the
learned interval but retries sooner (the minimum, doubled per failure in a row); ``dead_after`` failures in
a row make the resource dead, checked only at the maximum interval until it answers again. A URL-pattern
policy's ``revisit_hours`` replaces the learned interval.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from geoweb.crawl.factory import open_crawler
from geoweb.harvest.params import RevisitParams
from geoweb.harvest.recheck import Checker
from geoweb.links.normalize import origin
from geoweb.models import CheckOutcome, CheckResult, Due, ScheduleState
from geoweb.policy import URLPolicies
from geoweb.settings import Settings
from geoweb.store import Store, shard_of

log = logging.getLogger("geoweb.revisit")

COUNTS = ("checked", "unchanged", "changed", "failed", "newly_dead", "revived", "skipped")
# raw checks kept; older ones are summed per day. More than the 30 days resource_quality reads.
CHECKS_KEPT_DAYS = 45

ResultSink = Callable[[dict[str, Any]], None]


@dataclass(frozen=True, slots=True)
class Schedule:
    """The schedule policy: bounds in seconds, and how many failures in a row make a resource dead."""

    min_interval: float
    max_interval: float
    dead_after: int

    def __post_init__(self) -> None:
        if not 0 < self.min_interval <= self.max_interval:
            raise ValueError(
                f"need 0 < min_interval <= max_interval, not {self.min_interval}, {self.max_interval}"
            )
        if self.dead_after < 1:
            raise ValueError(f"dead_after must be at least 1, not {self.dead_after}")

    def bounded(self, seconds: float) -> float:
        return min(self.max_interval, max(self.min_interval, seconds))

    def after(
        self, state: ScheduleState, outcome: CheckOutcome, fixed: float | None = None
    ) -> tuple[ScheduleState, float]:
        """The state after a check with ``outcome``, and the seconds until the next check. ``fixed`` is a
        policy's interval, which replaces the learned one."""
        checks = state.checks + 1
        if outcome == CheckOutcome.FAILED:
            failures = state.failures + 1
            dead = failures >= self.dead_after
            interval = fixed or state.interval
            retry = self.max_interval if dead else min(interval, self.min_interval * 2 ** (failures - 1))
            return replace(state, failures=failures, checks=checks, dead=dead, interval=interval), retry
        if outcome == CheckOutcome.CHANGED:
            interval = fixed or self.bounded(state.interval / 2)
            changes = state.changes + 1
        elif outcome == CheckOutcome.UNCHANGED:
            interval = fixed or self.bounded(state.interval * 2)
            changes = state.changes
        else:
            raise ValueError(f"unknown outcome {outcome!r}; known: {', '.join(CheckOutcome)}")
        return ScheduleState(interval, 0, checks, changes, dead=False), interval


def schedule_of(settings: Settings) -> Schedule:
    return Schedule(settings.revisit_min_interval, settings.revisit_max_interval, settings.revisit_dead_after)


def plan_revisits(store: Store, params: RevisitParams, settings: Settings) -> list[list[int]]:
    """The ids of the due resources (at most ``batch_size``), one list per shard of hosts."""
    due = store.revisits.due(params.types, params.batch_size, settings.revisit_initial_interval)
    shards: dict[int, list[int]] = defaultdict(list)
    for resource in due:
        shards[shard_of(origin(resource.url), params.shards)].append(resource.id)
    log.info("%d resources due for a check, in %d shards", len(due), len(shards))
    return [shards[shard] for shard in sorted(shards)]


def check_resources(
    store: Store,
    run_id: str,
    ids: Iterable[int],
    settings: Settings,
    on_result: ResultSink | None = None,
    *,
    operations: bool = True,
) -> dict[str, Any]:
    """Check those of ``ids`` still due and save each check; returns the counts (``COUNTS``) and seconds.
    A URL policy that skips a resource's URL postpones it by the maximum interval, unchecked. Each good
    check is followed by an operation check, saved beside it, unless ``operations`` is False."""
    started = time.monotonic()
    policies = URLPolicies.from_setting(settings.url_policies)
    schedule = schedule_of(settings)
    counts = Counter(dict.fromkeys(COUNTS, 0))
    due, skipped = [], []
    for resource in store.revisits.still_due(list(ids)):
        policy = policies.match(resource.url)
        if policy is not None and policy.skips:
            log.info("%s (%s): not checked: %s", resource.url, resource.type, policy)
            skipped.append(resource.id)
        else:
            due.append(resource)
    store.revisits.postpone(skipped, schedule.max_interval)
    counts["skipped"] = len(skipped)

    def save(result: CheckResult) -> None:
        policy = policies.match(result.due.url)
        fixed = policy.revisit_seconds if policy is not None else None
        details, delay = store.revisits.record_check(
            run_id, result, lambda outcome: schedule.after(result.due.state, outcome, fixed)
        )
        counts["checked"] += 1
        counts[result.outcome] += 1
        counts["newly_dead"] += details.get("dead", False)
        counts["revived"] += details.get("revived", False)
        if on_result is not None:
            on_result(_line(result, delay, details))

    asyncio.run(_check_all(due, settings, save, operations))
    summary: dict[str, Any] = dict(counts) | {
        "seconds": round(time.monotonic() - started, 1),
        "hosts": sorted({origin(resource.url) for resource in due}),
    }
    log.info("revisit %s: %s", run_id, summary)
    return summary


async def _check_all(
    due: list[Due], settings: Settings, save: Callable[[CheckResult], None], operations: bool
) -> None:
    """Check every due resource with one fetcher (its per-host slots pace each host); save each as it ends.
    Hosts are checked at once, each host's resources one check at a time: a check's capabilities and its
    operation follow each other, never beside another check of the host."""
    by_host: defaultdict[str, list[Due]] = defaultdict(list)
    for resource in due:
        by_host[origin(resource.url)].append(resource)
    async with open_crawler(settings) as crawler:
        checker = Checker(crawler.fetch, crawler.detectors, settings, crawler.stats, operations=operations)

        async def check_host(resources: list[Due]) -> None:
            for resource in resources:
                save(await checker.check(resource))

        await asyncio.gather(*(check_host(resources) for resources in by_host.values()))


def _line(result: CheckResult, delay: float, details: dict[str, Any]) -> dict[str, Any]:
    """A check as one JSON line of ``geoweb revisit``."""
    next_check = datetime.now(UTC) + timedelta(seconds=delay)
    return {
        "url": result.due.url,
        "type": result.due.type,
        "outcome": result.outcome,
        "http_status": result.http_status,
        "error_reason": result.error_reason,
        "error_message": result.error_message,
        "seconds": round(result.seconds, 3),
        "operation": result.operation,
        "first_byte_seconds": _rounded(result.first_byte_seconds),
        "total_seconds": _rounded(result.total_seconds),
        "bytes": result.bytes,
        "next_check_at": next_check.isoformat(timespec="seconds"),
        **details,
        **({"operation_check": _operation_line(result.operation_check)} if result.operation_check else {}),
    }


def _operation_line(result: CheckResult) -> dict[str, Any]:
    """An operation check inside its check's JSON line."""
    return {
        "operation": result.operation,
        "outcome": result.outcome,
        "http_status": result.http_status,
        "error_reason": result.error_reason,
        "error_message": result.error_message,
        "warning": result.warning,
        "first_byte_seconds": _rounded(result.first_byte_seconds),
        "total_seconds": _rounded(result.total_seconds),
        "bytes": result.bytes,
    }


def _rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 3)


def summarize(store: Store, summaries: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The run's totals over its shards and the schedule's state (alive, dead, next due), logged as a table;
    checks older than ``CHECKS_KEPT_DAYS`` are summed per day and pruned (``pruned``)."""
    totals = Counter(dict.fromkeys(COUNTS, 0))
    for summary in summaries:
        totals.update({k: summary.get(k, 0) for k in COUNTS})
    pruned = store.revisits.prune_checks(CHECKS_KEPT_DAYS)
    result = dict(totals) | store.revisits.overview() | {"pruned": pruned}
    log.info("revisit summary:\n%s", table(result))
    return result


def table(summary: dict[str, Any]) -> str:
    return "\n".join(
        f"  {name:<12} {summary.get(name)}" for name in (*COUNTS, "alive", "dead", "next_due", "pruned")
    )
