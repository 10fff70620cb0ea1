"""Making crawled values storable in PostgreSQL, noting every change so that none is made silently.

PostgreSQL text and jsonb refuse NUL characters and lone surrogates, jsonb refuses NaN, a btree key holds
about 2.7 kB and a tsvector 1 MB: hostile documents carry all of these. The limits below keep a resource's
full-text column far under 1 MB.
"""

from __future__ import annotations

import json
import logging
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import urlsplit

from geoweb.models import BBox
from geoweb.store.geometry import clean_box

log = logging.getLogger("geoweb.store")

MAX_URL_BYTES = 2048  # keys of the unique indexes; the link filters drop longer URLs anyway
SHORT_TEXT = 2_000  # characters: titles, names, versions, providers, error messages
LONG_TEXT = 20_000  # characters: abstracts
WORD = 200  # characters of one keyword
MAX_WORDS = 200  # keywords of one resource or dataset


def storable_url(url: Any) -> str | None:
    """The URL if it can be a key as it is (a URL is never altered to fit: it would name another resource)."""
    if not isinstance(url, str) or not url or "\x00" in url:
        return None
    try:
        size = len(url.encode("utf-8"))
        urlsplit(url)  # its origin is taken apart from it
    except (UnicodeEncodeError, ValueError):
        return None
    return url if size <= MAX_URL_BYTES else None


class Cleaner:
    """Cleans the values of one record, counting each change; ``summary()`` is the line to log."""

    def __init__(self) -> None:
        self.changes: Counter[str] = Counter()

    def note(self, change: str) -> None:
        self.changes[change] += 1

    def summary(self) -> str:
        return "; ".join(f"{c} ({n}x)" if n > 1 else c for c, n in self.changes.items())

    def log_changes(self, subject: str) -> None:
        """One warning listing the changes made to ``subject``'s values, if any."""
        if self.changes:
            log.warning("%s stored with changes: %s", subject, self.summary())

    def text(self, value: Any, field: str, limit: int = SHORT_TEXT) -> str | None:
        if value is None:
            return None
        if not isinstance(value, str):
            value = str(value)
            self.note(f"{field}: not text, stored as its string")
        if "\x00" in value:
            value = value.replace("\x00", "")
            self.note(f"{field}: NUL characters removed")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            value = value.encode("utf-8", "replace").decode("utf-8")
            self.note(f"{field}: unencodable characters replaced")
        if len(value) > limit:
            value = value[:limit]
            self.note(f"{field}: cut to {limit} characters")
        return value

    def words(self, values: Iterable[Any] | None, field: str) -> list[str]:
        values = list(values or [])
        if len(values) > MAX_WORDS:
            self.note(f"{field}: only the first {MAX_WORDS} of {len(values)} kept")
        return [w for w in (self.text(v, field, WORD) for v in values[:MAX_WORDS]) if w is not None]

    def json(self, value: Any, field: str) -> str:
        """JSON text for a jsonb column; a value that cannot be JSON at all becomes {}."""
        try:
            return json.dumps(self._jsonable(value, field), ensure_ascii=False, allow_nan=False)
        except (RecursionError, ValueError, TypeError):
            self.note(f"{field}: not storable as JSON, dropped")
            return "{}"

    def _jsonable(self, value: Any, field: str) -> Any:
        if isinstance(value, dict):
            return {
                self.text(str(k), f"{field} key", LONG_TEXT): self._jsonable(v, field)
                for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [self._jsonable(v, field) for v in value]
        if isinstance(value, str):
            return self.text(value, field, LONG_TEXT)
        if isinstance(value, float) and not math.isfinite(value):
            self.note(f"{field}: non-finite number stored as null")
            return None
        if value is None or isinstance(value, bool | int | float):
            return value
        return self.text(value, field, LONG_TEXT)

    def box(self, bbox: Sequence | None, field: str) -> BBox | None:
        """The clean box (see ``geometry.clean_box``), or None with a note when it was refused."""
        if bbox is None:
            return None
        box, note = clean_box(bbox)
        if note:
            self.note(f"{field}: {note}")
        return box
