"""What a revisit works on: a resource's schedule state, a resource due for a check, and what the check
found."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from geoweb.models.resources import OGC_TYPES, Resource


class CheckOutcome(StrEnum):
    """What a check found. A resource's own check (its capabilities, landing page or file) is unchanged,
    changed or failed, and drives the schedule; an operation check (a map, a feature, the first bytes of a
    file: ``geoweb.harvest.operations``) has no fingerprint to change, so it is ok or failed, and never
    touches the schedule."""

    UNCHANGED = "unchanged"
    CHANGED = "changed"
    FAILED = "failed"
    OK = "ok"  # an operation check that succeeded


class CheckOperation(StrEnum):
    """``resource_checks.operation``: the request a check measured."""

    GET_CAPABILITIES = "GetCapabilities"  # an OGC service's capabilities document
    GET_RESOURCE = "GetResource"  # any other resource's own URL: a file, a landing page, a catalog
    # operation checks, after a good check of the resource itself
    GET_MAP = "GetMap"  # WMS
    GET_TILE = "GetTile"  # WMTS
    GET_FEATURE = "GetFeature"  # WFS
    DESCRIBE_COVERAGE = "DescribeCoverage"  # WCS
    ITEMS = "Items"  # OGC API features: one item of a collection
    EXPORT = "Export"  # ArcGIS map service: a map image
    RANGE_READ = "RangeRead"  # a file: its first bytes


def check_operation(resource_type: str) -> CheckOperation:
    """The request that checks a resource of ``resource_type``."""
    return CheckOperation.GET_CAPABILITIES if resource_type in OGC_TYPES else CheckOperation.GET_RESOURCE


class ScheduleStatus(StrEnum):
    """``resource_schedule.state``: a dead resource is checked only at the maximum interval."""

    ALIVE = "alive"
    DEAD = "dead"


@dataclass(frozen=True, slots=True)
class ScheduleState:
    """A resource's row in ``resource_schedule``, as the schedule policy needs it."""

    interval: float  # seconds: the learned revisit interval
    failures: int = 0  # failed checks in a row
    checks: int = 0
    changes: int = 0
    dead: bool = False


@dataclass(frozen=True, slots=True)
class Due:
    """A known resource due for a check, with its schedule state and the last good check's fingerprint."""

    id: int
    url: str
    type: str
    version: str | None
    baseline: str | None  # the fingerprint of the last good check (None before the first)
    state: ScheduleState


@dataclass(slots=True)
class CheckResult:
    """One check: its outcome, the HTTP status or the reason it failed, the fingerprint seen, the resource
    as its detector read it now (None when failed), and how its request answered: time to first byte, total
    time and bytes of the answering request (None when no answer came). ``seconds`` is the whole check,
    the detector's work and follow-up requests included. ``operation`` None means the one of the resource's
    type (``check_operation``). ``warning`` is what a successful check found amiss (a map all one colour);
    ``operation_check`` the operation check that followed a good check, a result of its own (None when none
    ran)."""

    due: Due
    outcome: CheckOutcome
    seconds: float
    http_status: int | None = None
    error_reason: str | None = None
    error_message: str | None = None
    fingerprint: str | None = None
    resource: Resource | None = None
    operation: str | None = None
    first_byte_seconds: float | None = None
    total_seconds: float | None = None
    bytes: int | None = None
    warning: str | None = None
    operation_check: CheckResult | None = None
