"""Null-safe readers of the values documents and answers hold (OWSLib's style): any value in, text or None
out, so a missing element, a number where text belongs or a blank string never reaches a record."""

from __future__ import annotations

from collections.abc import Iterable

TITLE_CHARS = 300  # a title read from a file's content: longer is prose or junk, cut
ABSTRACT_CHARS = 5_000  # an abstract read from a file's content


def stripped(value: object, limit: int | None = None) -> str | None:
    """A text value stripped, cut to ``limit`` characters when given; None when missing, blank or not text."""
    if not isinstance(value, str):
        return None
    return value.strip()[:limit].strip() or None


def one_line(value: object, limit: int = TITLE_CHARS) -> str | None:
    """A text value on one line (runs of whitespace, line breaks included, made one space), cut to
    ``limit`` characters: a title from a stranger's document."""
    return stripped(" ".join(value.split()), limit) if isinstance(value, str) else None


def words(values: Iterable[object] | None) -> list[str]:
    """Keywords (or any texts) stripped, without blanks or repeats, in their order."""
    return list(dict.fromkeys(filter(None, map(stripped, values or ()))))
