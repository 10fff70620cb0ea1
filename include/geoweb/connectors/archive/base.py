"""What every satellite-image archive adapter shares: scenes, the field mapping, paging, and the harvest.

An adapter builds the archive's requests and reads its pages; which field of an answer holds the scene id,
satellite, sensor, acquisition time, footprint, cloud cover and quick-look URL is a mapping read from JSON
(``<adapter>.json`` beside the adapter, or the ``mapping`` setting: a file or the JSON itself), so an
archive that renames a field is reconfigured, not reprogrammed. Loading the scenes into the store is
``geoweb.harvest.archive``.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timezone
from importlib.resources import files
from pathlib import Path
from typing import Any, ClassVar

import shapely
import shapely.wkt
from shapely.geometry import mapping, shape

from geoweb.connectors.api import APIConnector, malformed
from geoweb.connectors.base import ConfigError, ConnectorError
from geoweb.models import BBox, OnlineResource, Scene

log = logging.getLogger("geoweb.connectors.archive")

FIELDS = ("scene_id", "satellite", "sensor", "acquired_at", "footprint", "cloud_cover", "quicklook_url")
MAX_PAGES = 100_000  # a paging loop that never ends stops here


# --- the field mapping -------------------------------------------------------------------------------------


def _time(value: Any, zone: timezone, formats: tuple[str, ...]) -> datetime | None:
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    for fmt in formats:
        try:
            moment = datetime.fromisoformat(text) if fmt == "iso" else datetime.strptime(text, fmt)
        except ValueError:
            continue
        return moment if moment.tzinfo else moment.replace(tzinfo=zone)
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def _geojson(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) and "type" in value else None


def _wkt(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, str):
        return None
    try:
        return mapping(shapely.wkt.loads(value))
    except shapely.errors.ShapelyError:
        return None


def _as_text(value: Any) -> str | None:
    """An item's field as text: a list joined (STAC instruments), nothing for objects and nulls."""
    if isinstance(value, list):  # STAC instruments: ["msi"]
        value = ", ".join(str(v) for v in value if v is not None)
    if value is None or isinstance(value, dict):
        return None
    return str(value).strip() or None


@dataclass(frozen=True)
class FieldMapping:
    """Where each scene field is in an item, and how to read it. A field's spec is a dotted path, or
    ``{"path": path or [paths tried in order], "type": text|time|percent|fraction|geojson|wkt}``; ``extra``
    maps names to specs of more fields kept with the scene. ``time_formats`` are ``iso`` or strptime
    formats; ``timezone`` (``+08:00``) applies to times written without one."""

    fields: Mapping[str, tuple[tuple[str, ...], str]]
    extra: Mapping[str, tuple[tuple[str, ...], str]] = field(default_factory=dict)
    time_formats: tuple[str, ...] = ("iso",)
    zone: timezone = UTC

    TYPES: ClassVar[frozenset[str]] = frozenset(
        {"text", "time", "percent", "fraction", "geojson", "wkt", "raw"}
    )

    @classmethod
    def from_config(cls, config: Mapping[str, Any], source: str) -> FieldMapping:
        """The mapping of a config's ``fields``, ``extra``, ``time_formats`` and ``timezone``; ConfigError
        names what is wrong."""
        specs = config.get("fields")
        if not isinstance(specs, dict):
            raise ConfigError(f"{source}: the mapping has no 'fields' object")
        missing = [name for name in ("scene_id", "acquired_at") if name not in specs]
        unknown = sorted(set(specs) - set(FIELDS))
        if missing or unknown:
            raise ConfigError(
                f"{source}: mapping fields: missing {missing or 'none'}, unknown {unknown or 'none'}; "
                f"known: {', '.join(FIELDS)}"
            )
        extra = config.get("extra") or {}
        if not isinstance(extra, dict):
            raise ConfigError(f"{source}: the mapping's 'extra' must be an object")
        formats = config.get("time_formats") or ["iso"]
        if not isinstance(formats, list) or not all(isinstance(f, str) for f in formats):
            raise ConfigError(f"{source}: the mapping's 'time_formats' must be a list of formats")
        return cls(
            fields={name: _spec(spec, name, source) for name, spec in specs.items()},
            extra={name: _spec(spec, name, source) for name, spec in extra.items()},
            time_formats=tuple(formats),
            zone=_zone(config.get("timezone"), source),
        )

    def scene(self, item: Any, source: str) -> Scene | None:
        """The scene of an item; None (logged) when the item is not an object or has no scene id."""
        if not isinstance(item, dict):
            log.warning("%s: an item that is not an object skipped: %.200r", source, item)
            return None
        values = {name: self._read(item, spec) for name, spec in self.fields.items()}
        scene_id = values.get("scene_id")
        if scene_id is None:
            log.warning("%s: an item without a scene id skipped: %.200r", source, item)
            return None
        footprint = values.get("footprint")
        quicklook = values.get("quicklook_url")
        return Scene(
            source=source,
            identifier=scene_id,
            title=" ".join(str(v) for v in (values.get("satellite"), values.get("sensor"), scene_id) if v),
            bbox=_bounds(footprint),
            links=[OnlineResource(quicklook, protocol="quicklook")] if quicklook else [],
            extra={name: self._read(item, spec) for name, spec in self.extra.items()},
            satellite=values.get("satellite"),
            sensor=values.get("sensor"),
            acquired_at=values.get("acquired_at"),
            footprint=footprint,
            cloud_cover=values.get("cloud_cover"),
            quicklook_url=quicklook,
        )

    def _read(self, item: dict[str, Any], spec: tuple[tuple[str, ...], str]) -> Any:
        paths, kind = spec
        for path in paths:
            value = lookup(item, path)
            if value is not None:
                return self._convert(value, kind)
        return None

    def _convert(self, value: Any, kind: str) -> Any:
        if kind == "time":
            return _time(value, self.zone, self.time_formats)
        if kind in ("percent", "fraction"):
            number = _number(value)
            return None if number is None else number * (100 if kind == "fraction" else 1)
        if kind == "geojson":
            return _geojson(value)
        if kind == "wkt":
            return _wkt(value)
        if kind == "raw":
            return value
        return _as_text(value)

    def format_time(self, moment: datetime) -> str:
        """A time as the archive writes it: the first of ``time_formats``, in ``timezone``."""
        local = moment.astimezone(self.zone)
        fmt = self.time_formats[0]
        return local.isoformat() if fmt == "iso" else local.strftime(fmt)


def _spec(spec: Any, name: str, source: str) -> tuple[tuple[str, ...], str]:
    if isinstance(spec, str):
        spec = {"path": spec}
    if not isinstance(spec, dict):
        raise ConfigError(f"{source}: mapping of {name} must be a path or an object with 'path'")
    paths = spec.get("path")
    paths = [paths] if isinstance(paths, str) else paths
    kind = spec.get("type", "text")
    if not paths or not all(isinstance(p, str) and p for p in paths) or kind not in FieldMapping.TYPES:
        raise ConfigError(
            f"{source}: mapping of {name}: 'path' must be a path or a list of them and 'type' one of "
            f"{', '.join(sorted(FieldMapping.TYPES))}"
        )
    return tuple(paths), kind


def _zone(value: Any, source: str) -> timezone:
    if value in (None, "", "Z", "UTC"):
        return UTC
    try:
        return datetime.strptime(str(value), "%z").tzinfo
    except ValueError:
        raise ConfigError(f"{source}: the mapping's timezone must look like +08:00, not {value!r}") from None


def lookup(item: Any, path: str) -> Any:
    for key in path.split("."):
        if isinstance(item, dict):
            item = item.get(key)
        elif isinstance(item, list) and key.isdigit() and int(key) < len(item):
            item = item[int(key)]
        else:
            return None
    return item


def _bounds(geojson: dict[str, Any] | None) -> BBox | None:
    if geojson is None:
        return None
    try:
        bounds = shape(geojson).bounds
    except (AttributeError, IndexError, KeyError, TypeError, ValueError, shapely.errors.ShapelyError):
        return None
    return bounds if len(bounds) == 4 and all(math.isfinite(v) for v in bounds) else None


def load_mapping(adapter: str, setting: Any) -> dict[str, Any]:
    """An adapter's mapping: ``setting`` (a dict, JSON text or a JSON file's path), else ``<adapter>.json``
    shipped beside it."""
    source = f"{adapter} mapping"
    try:
        if isinstance(setting, dict):
            return setting
        if setting is None or setting == "":
            return json.loads((files("geoweb.connectors.archive") / f"{adapter}.json").read_text("utf-8"))
        text = str(setting).strip()
        return json.loads(text if text.startswith("{") else Path(text).read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{source}: cannot be read: {exc}") from None


# --- adapters ----------------------------------------------------------------------------------------------

Request = tuple[str, dict[str, Any]]  # (URL, query parameters)


class ArchiveAdapter(APIConnector):
    """A scene archive: ``first_request`` says how to ask for scenes newer than a time in a box, and
    ``read_page`` how to find a page's items and the request of the next page. Settings: the API's ``url``,
    ``key`` (sent in the mapping's ``key_header``), ``timeout``, ``retries``, ``page_size``, and ``mapping``
    (see ``load_mapping``)."""

    options: ClassVar[frozenset[str]] = frozenset({"mapping"})
    page_size: ClassVar[int] = 100

    def __init__(self, config: Mapping[str, Any], **kwargs: Any):
        self.spec = load_mapping(self.name, config.get("mapping"))
        self.key_header = self.spec.get(
            "key_header"
        )  # the header that carries ``key``, if the archive has one
        super().__init__(config, **kwargs)
        self.mapping = FieldMapping.from_config(self.spec, f"{self.name} mapping")

    @property
    def source(self) -> str:
        """The store's name of this archive: adapter and URL, so that two archives of a kind never mix."""
        return f"{self.name}:{self.base_url}"

    def records(
        self, *, since: datetime | None = None, bbox: BBox | None = None, **query: Any
    ) -> Iterator[Scene]:
        for page in self.pages(since=since, bbox=bbox):
            yield from page

    def pages(self, *, since: datetime | None = None, bbox: BBox | None = None) -> Iterator[list[Scene]]:
        """The scenes acquired at or after ``since`` (all without it) inside ``bbox``, page by page. A page that
        fails raises ConnectorError naming it, after the earlier pages."""
        request: Request | None = self.first_request(since, bbox)
        asked: set[str] = set()
        for number in range(1, MAX_PAGES + 1):
            url, params = request
            key = json.dumps([url, params], sort_keys=True, default=str)
            if key in asked:
                raise ConnectorError(
                    f"{self.source}: page {number}: the archive pages back to a page already read"
                )
            asked.add(key)
            what = f"page {number}"
            answer = self.client.get(url, params, what)
            items, request = self.read_page(answer, what, request)
            if not isinstance(items, list):
                raise malformed(self.source, what, "the items are not a list")
            yield [scene for item in items if (scene := self.mapping.scene(item, self.source)) is not None]
            if request is None or not items:
                return
        raise ConnectorError(f"{self.source}: more than {MAX_PAGES} pages: stopped")

    def first_request(self, since: datetime | None, bbox: BBox | None) -> Request:
        raise NotImplementedError

    def read_page(self, answer: Any, what: str, request: Request) -> tuple[list[Any], Request | None]:
        """The page's items and the request of the next page (None after the last); ConnectorError when the
        answer is not what the archive sends."""
        raise NotImplementedError


def utc_iso(moment: datetime) -> str:
    """RFC 3339 in UTC with a Z, as STAC writes times."""
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
