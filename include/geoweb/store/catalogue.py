"""Outside sources (``catalogue_sources``): harvest state per source, catalogue records and archive scenes.

Records and scenes are upserted on (source, id), so a redone page or harvest never
duplicates a row. Only a complete full harvest withdraws records (``mark_withdrawn``); a withdrawn record
becomes active again when it comes back. Every value is cleaned as the crawl's are (``Cleaner``), and a record
or scene whose key cannot be stored is logged and skipped, never failing the rest.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg2
import shapely
from psycopg2.extras import execute_values
from shapely.geometry import shape

from geoweb.models import Record, RecordStatus, Scene, SourceStatus
from geoweb.store.clean import LONG_TEXT, MAX_URL_BYTES, Cleaner
from geoweb.store.geometry import SRID, to_ewkb
from geoweb.store.repository import PAGE_SIZE, Repository

log = logging.getLogger("geoweb.store")

# A date this far ahead of the harvest is a source's mistake; it must not freeze the watermark.
FUTURE_SLACK = timedelta(days=1)
KEY_RULE = f"the identifier must be text (no NUL) of at most {MAX_URL_BYTES} bytes"

_SOURCE_COLUMNS = (
    "name, kind, url, watermark, last_harvest, last_full_harvest, last_status, last_error, last_counts"
)
_RECORD_CONTENT = ("title", "abstract", "keywords", "footprint", "links", "modified", "keyword", "extra")
_RECORDS_UPSERT = f"""
INSERT INTO catalogue_records AS r (source, identifier, {", ".join(_RECORD_CONTENT)}) VALUES %s
ON CONFLICT (source, identifier) DO UPDATE SET
    {", ".join(f"{c} = EXCLUDED.{c}" for c in _RECORD_CONTENT)},
    status = '{RecordStatus.ACTIVE}', withdrawn_at = NULL, last_seen = now(),
    changed_at = CASE
        WHEN ({", ".join(f"r.{c}" for c in _RECORD_CONTENT)}, r.status)
            IS DISTINCT FROM ({", ".join(f"EXCLUDED.{c}" for c in _RECORD_CONTENT)}, '{RecordStatus.ACTIVE}')
        THEN now() ELSE r.changed_at END
RETURNING xmax = 0, changed_at = now()
"""
_SCENE_CONTENT = ("satellite", "sensor", "acquired_at", "footprint", "cloud_cover", "quicklook_url", "extra")
_SCENES_UPSERT = f"""
INSERT INTO archive_scenes (source, scene_id, {", ".join(_SCENE_CONTENT)}) VALUES %s
ON CONFLICT (source, scene_id) DO UPDATE SET
    {", ".join(f"{c} = EXCLUDED.{c}" for c in _SCENE_CONTENT)}, last_seen = now()
RETURNING xmax = 0
"""


@dataclass(frozen=True, slots=True)
class SourceState:
    """A source's row in ``catalogue_sources``."""

    name: str
    kind: str
    url: str
    watermark: datetime | None = None
    last_harvest: datetime | None = None
    last_full_harvest: datetime | None = None
    last_status: SourceStatus | None = None
    last_error: str | None = None
    last_counts: dict[str, Any] = field(default_factory=dict)


@dataclass
class Harvest:
    """One harvest of a source, as ``Catalogue.harvesting`` records it: the counts to store, the watermark it
    reached (only ever moved forward, never into the future), and whether it was a complete full harvest."""

    state: SourceState
    started: datetime
    counts: dict[str, Any] = field(default_factory=dict)
    watermark: datetime | None = None
    full: bool = False

    def advance(self, times: Iterable[datetime | None]) -> None:
        limit = self.started + FUTURE_SLACK
        newest = max((t for t in times if t is not None and t <= limit), default=None)
        if newest is not None and (self.watermark is None or newest > self.watermark):
            self.watermark = newest


class Catalogue(Repository):
    """Outside sources: their harvests, records and scenes."""

    # --- sources ---

    def source_state(self, name: str) -> SourceState | None:
        with self._transaction() as cur:
            cur.execute(f"SELECT {_SOURCE_COLUMNS} FROM catalogue_sources WHERE name = %s", (name,))
            row = cur.fetchone()
        return _state(row) if row else None

    @contextmanager
    def harvesting(self, name: str, kind: str, url: str) -> Iterator[Harvest]:
        """Record a harvest of a source: 'running' now, then 'success' with its counts and watermark, or, when
        the block raises, 'failed' with the error (and the exception goes on). A failed harvest keeps the
        source's watermark and last full harvest. One harvest of a source runs at a time across the
        deployment: another's (a manual run beside a scheduled one) waits for it, then goes on from its
        watermark."""
        with self._source_lock(name), self._recorded_harvest(name, kind, url) as harvest:
            yield harvest

    @contextmanager
    def _source_lock(self, name: str) -> Iterator[None]:
        """The session's advisory lock on a source, held until the block ends."""
        key = f"catalogue_source:{name}"
        with self._transaction() as cur:
            cur.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (key,))
            taken = cur.fetchone()[0]
        if not taken:
            log.info("%s is being harvested by another run: waiting for it to end", name)
            with self._transaction() as cur:
                cur.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (key,))
        try:
            yield
        finally:
            with suppress(psycopg2.Error), self._transaction() as cur:  # a lost session has freed its locks
                cur.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (key,))

    @contextmanager
    def _recorded_harvest(self, name: str, kind: str, url: str) -> Iterator[Harvest]:
        clean = Cleaner()
        with self._transaction() as cur:
            cur.execute(
                "INSERT INTO catalogue_sources AS s (name, kind, url, last_status) "
                "VALUES (%(name)s, %(kind)s, %(url)s, %(running)s) ON CONFLICT (name) DO UPDATE SET "
                "kind = EXCLUDED.kind, url = EXCLUDED.url, last_status = %(running)s "
                f"RETURNING {_SOURCE_COLUMNS}, now()",
                {"name": clean.text(name, "source name"), "kind": kind, "url": clean.text(url, "source url"),
                 "running": SourceStatus.RUNNING},
            )  # fmt: skip
            *row, started = cur.fetchone()
        state = _state(row)
        harvest = Harvest(state=state, started=started, watermark=state.watermark)
        try:
            yield harvest
        except Exception as exc:
            try:
                self._end_harvest(state.name, harvest, f"{exc}")
            except psycopg2.Error as store_exc:  # the store itself failed: the harvest's error matters more
                log.error("%s: the failed harvest could not be recorded: %s", state.name, store_exc)
            raise
        self._end_harvest(state.name, harvest, None)

    def _end_harvest(self, name: str, harvest: Harvest, error: str | None) -> None:
        clean = Cleaner()
        with self._transaction() as cur:
            cur.execute(
                "UPDATE catalogue_sources SET last_status = %s, last_error = %s, last_harvest = %s, "
                "last_counts = %s, watermark = CASE WHEN %s THEN %s ELSE watermark END, "
                "last_full_harvest = CASE WHEN %s THEN %s ELSE last_full_harvest END WHERE name = %s",
                (SourceStatus.FAILED if error else SourceStatus.SUCCESS, clean.text(error, "error"), harvest.started,
                 clean.json(harvest.counts, "counts"), error is None, harvest.watermark,
                 error is None and harvest.full, harvest.started, name),
            )  # fmt: skip

    # --- records ---

    def upsert_records(self, source: str, records: Iterable[Record]) -> dict[str, int]:
        """Insert or update records of a source (any connector's ``Record``) in one transaction; each becomes
        active and seen now. Returns how many were new, updated, unchanged and refused (a key that cannot be
        stored; logged)."""
        returned, refused = self._upsert_rows(_RECORDS_UPSERT, (_record_row(source, r) for r in records))
        counts = {"new": 0, "updated": 0, "unchanged": 0, "refused": refused}
        for inserted, changed in returned:
            counts["new" if inserted else "updated" if changed else "unchanged"] += 1
        return counts

    def mark_withdrawn(self, source: str, seen_identifiers: Iterable[str]) -> int:
        """Withdraw the source's active records not in ``seen_identifiers``. Call it only after a complete,
        successful full harvest: anything less would withdraw records the source still has."""
        seen = [key for key in (_key(i) for i in seen_identifiers) if key is not None]
        with self._transaction() as cur:
            cur.execute(
                "UPDATE catalogue_records SET status = %s, withdrawn_at = now(), changed_at = now() "
                "WHERE source = %s AND status = %s AND NOT (identifier = ANY(%s::text[]))",
                (RecordStatus.WITHDRAWN, source, RecordStatus.ACTIVE, seen),
            )
            withdrawn = cur.rowcount
        if withdrawn:
            log.info("%s: %d records withdrawn (gone from the source)", source, withdrawn)
        return withdrawn

    def active_record_links(self, kind: str) -> Iterator[tuple[str, list[dict[str, Any]], datetime]]:
        """(source URL, links, when the record last changed) of the active records of every source of a kind,
        by source URL and identifier, streamed: use the Store for nothing else until the iteration ends."""
        with self.conn, self.conn.cursor(name="record_links") as cur:
            cur.itersize = PAGE_SIZE
            cur.execute(
                "SELECT s.url, r.links, r.changed_at FROM catalogue_records r "
                "JOIN catalogue_sources s ON s.name = r.source "
                "WHERE r.status = %s AND s.kind = %s ORDER BY s.url, r.identifier",
                (RecordStatus.ACTIVE, kind),
            )
            yield from cur

    # --- archive scenes ---

    def upsert_scenes(self, source: str, scenes: Iterable[Scene]) -> dict[str, int]:
        """Insert or update scenes of an archive in one transaction; returns how many were new, updated and
        refused (no storable id or acquisition time; logged)."""
        returned, refused = self._upsert_rows(_SCENES_UPSERT, (_scene_row(source, s) for s in scenes))
        counts = {"new": 0, "updated": 0, "refused": refused}
        for (inserted,) in returned:
            counts["new" if inserted else "updated"] += 1
        return counts

    def _upsert_rows(self, sql: str, rows: Iterable[tuple | None]) -> tuple[list[tuple], int]:
        """Upserts rows keyed by their second column in one transaction, in key order (concurrent writers
        then never deadlock); a repeated key keeps its last row, None is a refused item (logged where it was
        made). Returns what the statement RETURNs per row, and how many were refused."""
        keyed: dict[str, tuple] = {}
        refused = 0
        for row in rows:
            if row is None:
                refused += 1
            else:
                keyed[row[1]] = row
        if not keyed:
            return [], refused
        with self._transaction() as cur:
            returned = execute_values(
                cur, sql, [keyed[k] for k in sorted(keyed)], page_size=PAGE_SIZE, fetch=True
            )
        return returned, refused


def _state(row) -> SourceState:
    """A ``catalogue_sources`` row (``_SOURCE_COLUMNS``) as a SourceState."""
    name, kind, url, watermark, last_harvest, last_full_harvest, status, *rest = row
    return SourceState(
        name, kind, url, watermark, last_harvest, last_full_harvest, status and SourceStatus(status), *rest
    )


def _key(value: Any) -> str | None:
    """An identifier as a key: text without NUL, at most MAX_URL_BYTES in UTF-8, never altered to fit."""
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        return None
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        return None
    return value if size <= MAX_URL_BYTES else None


def _refused(source: str, what: str, key: Any, reason: str) -> None:
    log.error("%s: %s %.200r not stored: %s", source, what, key, reason)


def _record_row(source: str, record: Record) -> tuple | None:
    key = _key(record.identifier)
    if key is None:
        _refused(source, "record", record.identifier, KEY_RULE)
        return None
    clean = Cleaner()
    links = [{"url": link.url, "protocol": link.protocol, "name": link.name} for link in record.links]
    row = (
        source, key, clean.text(record.title, "title"), clean.text(record.abstract, "abstract", LONG_TEXT),
        clean.words(record.keywords, "keywords"), to_ewkb([clean.box(record.bbox, "bbox")])[0],
        clean.json(links, "links"), _utc(record.modified), clean.text(record.keyword, "keyword"),
        clean.json(record.extra, "extra"),
    )  # fmt: skip
    clean.log_changes(f"{source} record {key}")
    return row


def _scene_row(source: str, scene: Scene) -> tuple | None:
    key = _key(scene.identifier)
    if key is None:
        _refused(source, "scene", scene.identifier, KEY_RULE)
        return None
    if scene.acquired_at is None:
        _refused(source, "scene", key, "no acquisition time")
        return None
    clean = Cleaner()
    row = (
        source, key, clean.text(scene.satellite, "satellite"), clean.text(scene.sensor, "sensor"),
        _utc(scene.acquired_at), footprint_ewkb(scene.footprint, clean), _cloud_cover(scene.cloud_cover, clean),
        clean.text(scene.quicklook_url, "quicklook_url"), clean.json(scene.extra, "extra"),
    )  # fmt: skip
    clean.log_changes(f"{source} scene {key}")
    return row


def _utc(moment: datetime | None) -> datetime | None:
    if moment is None:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _cloud_cover(value: Any, clean: Cleaner) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        clean.note("cloud_cover: not a number, dropped")
        return None
    if not 0 <= value <= 100:
        clean.note("cloud_cover: outside 0-100, dropped")
        return None
    return float(value)


def footprint_ewkb(geojson: Any, clean: Cleaner) -> str | None:
    """Hex EWKB of a GeoJSON geometry in WGS84 lon/lat, made valid if it is not; None, noted, when it is not a
    geometry or lies outside WGS84."""
    if geojson is None:
        return None
    try:
        geometry = shape(geojson)
        west, south, east, north = geometry.bounds
    except (AttributeError, IndexError, KeyError, TypeError, ValueError, shapely.errors.ShapelyError):
        clean.note("footprint: not a GeoJSON geometry, dropped")
        return None
    if geometry.is_empty or not all(math.isfinite(v) for v in (west, south, east, north)):
        clean.note("footprint: empty or not finite, dropped")
        return None
    if west < -180 or east > 180 or south < -90 or north > 90:
        clean.note("footprint: outside WGS84 longitudes and latitudes, dropped")
        return None
    if not geometry.is_valid:
        geometry = shapely.make_valid(geometry)
        clean.note("footprint: invalid, made valid")
    return shapely.to_wkb(shapely.set_srid(geometry, SRID), hex=True, include_srid=True)
