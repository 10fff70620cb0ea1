"""What a search asks for, checked before it reaches the database: a request from the web is hostile input."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from geoweb.errors import GeowebError
from geoweb.models import ALL_TYPES, Conformance
from geoweb.semantic import default_ontology

MAX_TEXT = 500  # characters of a query
MAX_TYPES = 20
MAX_NAME = 250  # characters of a type, run id, concept id or provider
MAX_LIMIT = 100
MAX_OFFSET = 10_000  # deeper pages cost a scan of everything before them: narrow the search instead
DEFAULT_LIMIT = 20
MIN_PREFIX = 3  # characters of a last word searched as a prefix: shorter ones would match nearly everything
NO_FOOTPRINT = "none"  # the footprint filter's one value: only resources without a box, which no box finds
# The INSPIRE view-service verdicts (resource_quality, migration 0020); a WMS is `met` when both criteria are.
INSPIRE_VERDICTS = ("met", "not met", "not enough checks")

Box = tuple[float, float, float, float]  # west, south, east, north in WGS84 degrees

# One word holding an address's punctuation (a URL, a host name, a path): searched also as the phrase of its
# words, which is how URLs are indexed (migration 0005).
_ADDRESS = re.compile(r"\S*[./:]\S*")
# A last word still being typed: letters or digits right at the end, not a closed phrase or a lone letter.
_TYPING = re.compile(rf"\w{{{MIN_PREFIX},}}$")


class InvalidSearch(GeowebError):
    """Raised for a search parameter out of range or malformed; the message names the parameter."""

    reason = "invalid_search"
    user_msg = "The search parameters are not valid"


@dataclass(frozen=True, slots=True)
class SearchQuery:
    """A checked search: free text, resource types, a box (west > east crosses the antimeridian), the run
    and level that found a resource, a concept some dataset of it is about, whether only resources that still
    answer count, a provider (its exact name), whether only resources without a footprint count, conformance
    levels of OGC services, the least availability over 30 days (percent) and INSPIRE verdicts of WMS, and a
    page. Build it with ``SearchQuery.checked``."""

    text: str = ""
    types: tuple[str, ...] = ()
    bbox: Box | None = None
    run: str | None = None
    level: int | None = None
    limit: int = DEFAULT_LIMIT
    offset: int = 0
    concept: str | None = None
    answering: bool = False  # leave out the resources the revisits found dead
    provider: str | None = None
    no_footprint: bool = False  # only resources without a box: the ones a box never finds
    conformance: tuple[str, ...] = ()  # only services judged at one of these levels (Conformance)
    min_availability: float | None = None  # percent of the checks of 30 days that succeeded
    inspire: tuple[str, ...] = ()  # only WMS with one of these INSPIRE verdicts (INSPIRE_VERDICTS)

    @classmethod
    def checked(
        cls,
        text: str | None = None,
        types: Iterable[str] = (),
        bbox: str | Box | None = None,
        run: str | None = None,
        level: int | None = None,
        limit: int = DEFAULT_LIMIT,
        offset: int = 0,
        concept: str | None = None,
        answering: bool = False,
        provider: str | None = None,
        footprint: str | None = None,
        conformance: Iterable[str] = (),
        min_availability: float | None = None,
        inspire: Iterable[str] = (),
    ) -> SearchQuery:
        """The query, or InvalidSearch naming the first bad parameter."""
        text = " ".join(_checked_text(text or "", "q", MAX_TEXT).split())
        names = [_checked_text(t, "type", MAX_NAME).strip().upper() for t in types]
        if len(names) > MAX_TYPES:
            raise InvalidSearch(f"type: at most {MAX_TYPES} types")
        unknown = sorted(set(filter(None, names)) - set(ALL_TYPES))
        if unknown:
            raise InvalidSearch(f"type: no type {', '.join(unknown)} (known: {', '.join(ALL_TYPES)})")
        run = _checked_text(run, "run", MAX_NAME) if run else None
        if level is not None and not 0 <= level <= 1000:
            raise InvalidSearch("level: must be between 0 and 1000")
        if not 1 <= limit <= MAX_LIMIT:
            raise InvalidSearch(f"limit: must be between 1 and {MAX_LIMIT}")
        if not 0 <= offset <= MAX_OFFSET:
            raise InvalidSearch(f"offset: must be between 0 and {MAX_OFFSET}")
        box = parse_bbox(bbox) if isinstance(bbox, str) else bbox
        if box is not None:
            _check_box(box)
        concept = _checked_text(concept, "concept", MAX_NAME).strip() or None
        if concept is not None and concept not in default_ontology():
            raise InvalidSearch(f"concept: no concept {concept!r} (GET /api/concepts lists them)")
        provider = _checked_text(provider, "provider", MAX_NAME).strip() or None
        footprint = _checked_text(footprint, "footprint", MAX_NAME).strip() or None
        if footprint not in (None, NO_FOOTPRINT):
            raise InvalidSearch(f"footprint: only {NO_FOOTPRINT!r} (resources without a footprint)")
        if footprint and box is not None:
            raise InvalidSearch("footprint: resources without a footprint are in no box; leave out bbox")
        types = tuple(sorted(set(filter(None, names))))
        return cls(
            text, types, box, run, level, limit, offset, concept, bool(answering), provider, bool(footprint),
            _checked_conformance(conformance), _checked_availability(min_availability), _checked_inspire(inspire),
        )  # fmt: skip

    @property
    def is_address(self) -> bool:
        """Whether the text is one address (``data.example.org``, a pasted URL) rather than words."""
        return bool(_ADDRESS.fullmatch(self.text))

    @property
    def is_typing(self) -> bool:
        """Whether the last word is searched as a prefix too (``riv`` finds rivers), as the user types it."""
        return bool(_TYPING.search(self.text))

    def boxes(self) -> list[Box]:
        """The box as boxes that do not cross the antimeridian (two when it does)."""
        if self.bbox is None:
            return []
        west, south, east, north = self.bbox
        if west <= east:
            return [self.bbox]
        return [(west, south, 180.0, north), (-180.0, south, east, north)]


def _checked_text(value: str | None, name: str, limit: int) -> str:
    """A search parameter's text ("" when absent), refused when too long or holding NUL."""
    if value is None:
        return ""
    if len(value) > limit:
        raise InvalidSearch(f"{name}: at most {limit} characters")
    if "\x00" in value:  # PostgreSQL text cannot hold NUL
        raise InvalidSearch(f"{name}: contains a NUL character")
    return value


def _checked_conformance(values: Iterable[str]) -> tuple[str, ...]:
    """The conformance levels asked for, each once, in the order of the levels; an unknown one is refused."""
    names = [_checked_text(v, "conformance", MAX_NAME).strip().lower() for v in values]
    levels = [c.value for c in Conformance]
    unknown = sorted(set(filter(None, names)) - set(levels))
    if unknown:
        raise InvalidSearch(f"conformance: no level {', '.join(unknown)} (known: {', '.join(levels)})")
    return tuple(level for level in levels if level in names)


def _checked_availability(value: float | None) -> float | None:
    """A percentage from 0 to 100, or None."""
    if value is None:
        return None
    if not (math.isfinite(value) and 0 <= value <= 100):
        raise InvalidSearch("min_availability: a percentage from 0 to 100")
    return float(value)


def _checked_inspire(values: Iterable[str]) -> tuple[str, ...]:
    """The INSPIRE verdicts asked for, each once, in the order of INSPIRE_VERDICTS; an unknown one is refused."""
    names = [" ".join(_checked_text(v, "inspire", MAX_NAME).lower().split()) for v in values]
    unknown = sorted(set(filter(None, names)) - set(INSPIRE_VERDICTS))
    if unknown:
        raise InvalidSearch(
            f"inspire: no verdict {', '.join(unknown)} (known: {', '.join(INSPIRE_VERDICTS)})"
        )
    return tuple(verdict for verdict in INSPIRE_VERDICTS if verdict in names)


def parse_bbox(value: str) -> Box | None:
    """``west,south,east,north`` in degrees; an empty string is no box."""
    if not value.strip():
        return None
    parts = value.split(",")
    if len(parts) != 4:
        raise InvalidSearch("bbox: must be west,south,east,north in degrees")
    try:
        west, south, east, north = (float(p) for p in parts)
    except ValueError:
        raise InvalidSearch("bbox: must be four numbers: west,south,east,north") from None
    return west, south, east, north


def _check_box(box: Box) -> None:
    west, south, east, north = box
    if not all(math.isfinite(v) for v in box):
        raise InvalidSearch("bbox: numbers must be finite")
    if not (-180 <= west <= 180 and -180 <= east <= 180):
        raise InvalidSearch("bbox: longitudes must be between -180 and 180")
    if not -90 <= south <= north <= 90:
        raise InvalidSearch("bbox: latitudes must be between -90 and 90, south not above north")
