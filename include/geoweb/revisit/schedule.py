"""A resource's revisit schedule state, as the store keeps it; the schedule policy is
``geoweb.harvest.revisit.Schedule``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ScheduleState:
    """A resource's row in ``resource_schedule``, as the policy needs it."""

    interval: float  # seconds: the learned revisit interval
    failures: int = 0  # failed checks in a row
    checks: int = 0
    changes: int = 0
    dead: bool = False
