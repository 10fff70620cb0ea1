"""What a revisit works on: a resource due for a check, and what the check found."""

from __future__ import annotations

from dataclasses import dataclass

from geoweb.models import Resource
from geoweb.revisit.schedule import ScheduleState


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
    """One check: its outcome (unchanged, changed or failed), the HTTP status or the reason it failed, the
    fingerprint seen, and the resource as its detector read it now (None when failed)."""

    due: Due
    outcome: str
    seconds: float
    http_status: int | None = None
    error_reason: str | None = None
    error_message: str | None = None
    fingerprint: str | None = None
    resource: Resource | None = None
