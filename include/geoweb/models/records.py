"""The records outside sources yield: catalogue and portal records with their online resources, and the scenes
of image archives."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from geoweb.models.resources import BBox


class RecordStatus(StrEnum):
    """A stored catalogue record's status: withdrawn once a complete full harvest no longer sees it."""

    ACTIVE = "active"
    WITHDRAWN = "withdrawn"


class SourceStatus(StrEnum):
    """How the last harvest of an outside source (a catalogue, an archive) went."""

    RUNNING = "running"
    SUCCESS = "success"
    FAILED = "failed"


@dataclass(slots=True)
class OnlineResource:
    """An online resource of a record: a page, a service endpoint or a file."""

    url: str
    protocol: str | None = None  # e.g. OGC:WMS, a DCAT format or media type, as the source says it
    name: str | None = None


@dataclass(slots=True)
class Record:
    """One item of a source: a search hit, a portal dataset, a catalogue record."""

    source: str  # the connector instance's name, e.g. "searxng", "datagov", "csw:<url>"
    identifier: str  # unique within the source
    title: str | None = None
    abstract: str | None = None
    keywords: list[str] = field(default_factory=list)
    bbox: BBox | None = None  # WGS84
    modified: datetime | None = None
    links: list[OnlineResource] = field(default_factory=list)
    keyword: str | None = None  # the search keyword that produced it
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The JSON-lines form the connector commands print."""
        record = asdict(self)
        record["bbox"] = list(self.bbox) if self.bbox else None
        record["modified"] = self.modified.isoformat() if self.modified else None
        return record


@dataclass(slots=True)
class Scene(Record):
    """One scene of an archive: a Record (identifier = scene id, bbox = the footprint's box) with its scene
    metadata. ``footprint`` is a GeoJSON geometry in WGS84 lon/lat; ``cloud_cover`` a percentage."""

    satellite: str | None = None
    sensor: str | None = None
    acquired_at: datetime | None = None
    footprint: dict[str, Any] | None = None
    cloud_cover: float | None = None
    quicklook_url: str | None = None

    def to_json(self) -> dict[str, Any]:
        record = Record.to_json(self)
        record["acquired_at"] = self.acquired_at.isoformat() if self.acquired_at else None
        return record
