"""URL-pattern policies: an ordered list of (regular expression -> fetch or skip, optional revisit interval),
first match wins. Changed without code changes: the ``url_policies`` setting (a JSON file or the JSON itself)
or, on Airflow, the Variable ``geoweb_url_policies``.

A rule is ``{"pattern": REGEX, "action": "fetch" | "skip", "revisit_hours": HOURS}`` (``revisit_hours`` only
with fetch). Patterns are searched in the normalised URL (anchor them with ``^`` to match from the start).
Python's ``re`` has no time limit, so patterns are bounded instead: at most ``MAX_PATTERN`` characters, and
no quantified group that holds a quantifier (``(a+)+``, ``(.*)*``: the shapes that backtrack exponentially).
Every problem is an ``InvalidPolicy`` naming the rule.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from geoweb.errors import GeowebError

ACTIONS = ("fetch", "skip")
MAX_RULES = 1_000
MAX_CHARACTERS = 1_000_000  # of the whole list: room for every rule at its longest
MAX_PATTERN = 500  # characters
MAX_REVISIT_HOURS = 24 * 366
_KEYS = frozenset(("pattern", "action", "revisit_hours"))
# After escapes and character classes are blanked: a quantifier, then one that may follow a group.
_ESCAPE = re.compile(r"\\.")
_CLASS = re.compile(r"\[\^?\]?[^\]]*\]")
_QUANTIFIER = re.compile(r"[*+]|\{\d*,\d*\}|\{\d+\}")


class InvalidPolicy(GeowebError):
    """Raised when loading URL policies: unreadable JSON, or a rule that is wrong (the message names it)."""

    reason = "url_policy"
    user_msg = "The URL policies are invalid"


@dataclass(frozen=True, slots=True)
class Policy:
    """One rule: its position (from 1) in the list, its compiled pattern, its action and revisit interval."""

    number: int
    pattern: re.Pattern[str]
    action: str
    revisit_seconds: float | None = None

    @property
    def skips(self) -> bool:
        return self.action == "skip"

    def __str__(self) -> str:
        every = f", revisit every {self.revisit_seconds / 3600:g} h" if self.revisit_seconds else ""
        return f"rule {self.number} {self.pattern.pattern!r} -> {self.action}{every}"


class URLPolicies:
    """The ordered rules; ``match`` gives the first whose pattern is found in a URL."""

    def __init__(self, policies: list[Policy]):
        self.policies = policies

    def __bool__(self) -> bool:
        return bool(self.policies)

    def __len__(self) -> int:
        return len(self.policies)

    def match(self, url: str) -> Policy | None:
        return next((p for p in self.policies if p.pattern.search(url)), None)

    @classmethod
    def from_setting(cls, value: str) -> URLPolicies:
        """The policies of the ``url_policies`` setting: JSON text when it starts with ``[``, else a file
        path; empty: none."""
        value = value.strip()
        if not value:
            return cls([])
        if value.startswith("["):
            return cls.from_json(value, "url_policies")
        try:
            with Path(value).open(encoding="utf-8") as file:
                text = file.read(MAX_CHARACTERS + 1)
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidPolicy(f"cannot read the URL policy file {value}: {exc}") from None
        return cls.from_json(text, value)

    @classmethod
    def from_json(cls, text: str, source: str) -> URLPolicies:
        """Parse and validate a JSON list of rules; ``source`` names it in errors."""
        if len(text) > MAX_CHARACTERS:
            raise InvalidPolicy(f"{source}: more than {MAX_CHARACTERS} characters")
        try:
            rules = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise InvalidPolicy(f"{source}: not JSON: {exc}") from None
        if not isinstance(rules, list):
            raise InvalidPolicy(f"{source}: expected a JSON list of rules, not {type(rules).__name__}")
        if len(rules) > MAX_RULES:
            raise InvalidPolicy(f"{source}: {len(rules)} rules, at most {MAX_RULES}")
        return cls([_rule(number, rule, source) for number, rule in enumerate(rules, 1)])


def _rule(number: int, rule: Any, source: str) -> Policy:
    where = f"{source}: rule {number}"
    if not isinstance(rule, dict):
        raise InvalidPolicy(f"{where}: expected an object, not {type(rule).__name__}")
    unknown = sorted(set(rule) - _KEYS)
    if unknown:
        raise InvalidPolicy(
            f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(_KEYS))}"
        )
    pattern, action = rule.get("pattern"), rule.get("action")
    if not isinstance(pattern, str) or not pattern:
        raise InvalidPolicy(f"{where}: 'pattern' must be a non-empty string")
    where = f"{where} ({pattern[:80]!r})"
    if len(pattern) > MAX_PATTERN:
        raise InvalidPolicy(f"{where}: pattern of {len(pattern)} characters, at most {MAX_PATTERN}")
    if nested_quantifier(pattern):
        raise InvalidPolicy(f"{where}: a quantified group holds a quantifier, which can backtrack for ever")
    try:
        compiled = re.compile(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        raise InvalidPolicy(f"{where}: not a regular expression: {exc}") from None
    if action not in ACTIONS:
        raise InvalidPolicy(f"{where}: 'action' must be one of {', '.join(ACTIONS)}, not {action!r}")
    hours = rule.get("revisit_hours")
    if hours is None:
        return Policy(number, compiled, action)
    if action == "skip":
        raise InvalidPolicy(f"{where}: 'revisit_hours' needs action fetch: skipped URLs are never revisited")
    if (
        isinstance(hours, bool)
        or not isinstance(hours, int | float)
        or not math.isfinite(hours)
        or not 0 < hours <= MAX_REVISIT_HOURS
    ):
        raise InvalidPolicy(
            f"{where}: 'revisit_hours' must be a number above 0 and at most {MAX_REVISIT_HOURS}"
        )
    return Policy(number, compiled, action, float(hours) * 3600)


def nested_quantifier(pattern: str) -> bool:
    """Whether a quantified group holds a quantifier (star height above one), as in ``(a+)+`` or ``(\\w*)*``.
    Conservative: it may refuse a harmless pattern, never accept one of these shapes."""
    flat = _CLASS.sub("x", _ESCAPE.sub("x", pattern))
    holds: list[bool] = []  # per open group: whether it holds a quantifier
    for i, char in enumerate(flat):
        if char == "(":
            holds.append(False)
        elif char == ")" and holds:
            inner = holds.pop()
            if inner and _QUANTIFIER.match(flat, i + 1):
                return True
            if holds:
                holds[-1] = holds[-1] or inner
        elif holds and _QUANTIFIER.match(flat, i):
            holds[-1] = True
    return False
