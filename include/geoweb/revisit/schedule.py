"""When to check a resource next: halve the interval when it changed, double it when it did not (bounded by
the minimum and maximum), so each resource converges to its own change rate. A failed check keeps the learned
interval but retries sooner (the minimum, doubled per failure in a row); ``dead_after`` failures in a row make
the resource dead, checked only at the maximum interval until it answers again. A URL-pattern policy's
``revisit_hours`` replaces the learned interval.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from geoweb.models import CheckOutcome, ScheduleState


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
