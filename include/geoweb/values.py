"""Null-safe readers of the values documents and answers hold (OWSLib's style): any value in, text or None
out, so a missing element, a number where text belongs or a blank string never reaches a record."""

from __future__ import annotations

from collections.abc import Iterable


def stripped(value: object) -> str | None:
    """A text value stripped; None when missing, blank or not text."""
    if not isinstance(value, str):
        return None
    return value.strip() or None


def words(values: Iterable[object] | None) -> list[str]:
    """Keywords (or any texts) stripped, without blanks or repeats, in their order."""
    return list(dict.fromkeys(filter(None, map(stripped, values or ()))))
