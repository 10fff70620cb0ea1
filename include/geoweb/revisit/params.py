"""The parameters of a revisit run, declared as the crawl's are (``geoweb.harvest.params``): each field
carries its JSON schema and description, so the DAG's trigger form and the steps validate alike."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from geoweb.harvest.params import MAX_SHARDS, POLITENESS
from geoweb.models import ALL_TYPES
from geoweb.params import (
    InvalidParams,
    allowed_hosts_param,
    choices_of,
    param,
    per_host_delay_param,
    to_conf,
    values_from_conf,
)
from geoweb.params import param_specs as declared_specs
from geoweb.settings import Settings

HOUR = 3600.0
MAX_BATCH = 10_000
MAX_HOURS = 24 * 366

_DEFAULTS = Settings()
SCHEDULE = "Revisit schedule"


@dataclass(frozen=True)
class RevisitParams:
    """What one revisit run does."""

    batch_size: int = param(
        500,
        f"Resources checked in this run at most, those due longest first; the rest wait for the next run: 1 "
        f"to {MAX_BATCH}, default 500.",
        type="integer",
        minimum=1,
        maximum=MAX_BATCH,
    )
    types: tuple[str, ...] = param(
        ALL_TYPES, "Resource types to re-check; default all of them.", **choices_of(ALL_TYPES, minItems=1)
    )
    allowed_hosts: tuple[str, ...] = allowed_hosts_param()
    dead_after: int = param(
        _DEFAULTS.revisit_dead_after,
        "Failed checks in a row after which a resource is marked dead (kept, checked only at the maximum "
        f"interval, alive again when it answers): default {_DEFAULTS.revisit_dead_after}.",
        section=SCHEDULE,
        type="integer",
        minimum=1,
        maximum=100,
    )
    min_interval_hours: float = param(
        _DEFAULTS.revisit_min_interval / HOUR,
        "Shortest interval between two checks of a resource, in hours: one that changes at every check ends "
        f"here. Default {_DEFAULTS.revisit_min_interval / HOUR:g}.",
        section=SCHEDULE,
        type="number",
        exclusiveMinimum=0,
        maximum=MAX_HOURS,
    )
    max_interval_hours: float = param(
        _DEFAULTS.revisit_max_interval / HOUR,
        "Longest interval between two checks, in hours: one that never changes, or is dead, is checked this "
        f"often. Default {_DEFAULTS.revisit_max_interval / HOUR:g}.",
        section=SCHEDULE,
        type="number",
        exclusiveMinimum=0,
        maximum=MAX_HOURS,
    )
    shards: int = param(
        16,
        "Check tasks the due resources are split into by host (one host, one task), run in parallel on the "
        f"Celery workers: 1 to {MAX_SHARDS}, default 16.",
        section=POLITENESS,
        type="integer",
        minimum=1,
        maximum=MAX_SHARDS,
    )
    per_host_delay: float = per_host_delay_param(POLITENESS)

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any] | None) -> RevisitParams:
        """Defaults overridden by ``conf``, validated key by key."""
        params = cls(**values_from_conf(cls, conf))
        if params.min_interval_hours > params.max_interval_hours:
            raise InvalidParams("param min_interval_hours: above max_interval_hours")
        return params

    def to_conf(self) -> dict[str, Any]:
        return to_conf(self)

    def settings(self, base: Settings | None = None) -> Settings:
        """The settings of this run: ``base`` (default: from the environment) with the run's values."""
        return (base or Settings.from_env()).with_(
            revisit_dead_after=self.dead_after,
            revisit_min_interval=self.min_interval_hours * HOUR,
            revisit_max_interval=self.max_interval_hours * HOUR,
            allowed_hosts=frozenset(h.lower() for h in self.allowed_hosts),
            per_host_delay=float(self.per_host_delay),
            obey_robots=True,
        )


def param_specs() -> Iterator[tuple[str, Any, str, dict[str, Any]]]:
    """(name, JSON default, description, JSON schema) of every parameter, in declaration order."""
    return declared_specs(RevisitParams)
