"""The records the crawl produces: resources (services and files) and their datasets."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any

BBox = tuple[float, float, float, float]

# The resource types, one family per detector. An OGC API landing page is one resource per API it conforms
# to, as a MapServer endpoint is one per OGC service it serves.
OGC_TYPES = ("WMS", "WFS", "WCS", "WMTS", "WPS", "SOS", "CSW")
OGCAPI_TYPES = (
    "OGCAPI-FEATURES", "OGCAPI-RECORDS", "OGCAPI-MAPS", "OGCAPI-TILES", "OGCAPI-PROCESSES", "OGCAPI-COVERAGES",
    "OGCAPI-EDR",
)  # fmt: skip
STAC_TYPES = ("STAC", "STAC-API")  # a static catalog or collection; an API with /search
ARCGIS_TYPES = ("ARCGIS-DIRECTORY", "ARCGIS-MAPSERVER", "ARCGIS-FEATURESERVER", "ARCGIS-IMAGESERVER")
FILE_TYPES = ("KML", "SHAPEFILE", "GEOJSON", "GEOTIFF")
ALL_TYPES = OGC_TYPES + OGCAPI_TYPES + STAC_TYPES + ARCGIS_TYPES + FILE_TYPES


class ResourceStatus(StrEnum):
    """A stored resource's ``last_status``: answering (a crawl found it or a check read it), or not."""

    OK = "ok"
    FAILED = "failed"  # its last check failed
    DEAD = "dead"  # failed checks in a row made it dead (``revisit.schedule``)


class Conformance(StrEnum):
    """How well an OGC capabilities document follows its standard. Its root, namespace and version decide
    that it is a service; OWSLib, whether it is a conformant one."""

    CONFORMANT = "conformant"  # OWSLib reads it whole, and no defect was found
    READABLE = "readable"  # read, with its defects named: a title or datasets came out of it
    IDENTIFIED = "identified"  # its type and version, nothing more could be read


@dataclass(slots=True)
class Dataset:
    """A layer, feature type, coverage, process, offering or file content inside a resource."""

    name: str | None
    title: str | None = None
    bbox: BBox | None = None  # WGS84 minx, miny, maxx, maxy
    keywords: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    concepts: list[str] = field(default_factory=list)  # ids of the ontology's concepts (geoweb.semantic)


DATASET_FIELDS = fields(Dataset)


@dataclass(frozen=True, slots=True)
class ProofFetch:
    """How the fetch of the document that proved a resource answered: its HTTP status, time to first byte,
    total time and body bytes (``fetch.Timing``). The crawl stores it as a check of the resource."""

    status: int
    first_byte_seconds: float
    total_seconds: float
    bytes: int


@dataclass(slots=True)
class Resource:
    """One discovered service or file, keyed by (canonical url, type)."""

    url: str
    type: str
    version: str | None = None
    title: str | None = None
    abstract: str | None = None
    keywords: list[str] = field(default_factory=list)
    provider: str | None = None
    datasets: list[Dataset] = field(default_factory=list)
    bbox: BBox | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    content_sha256: str | None = None  # of the document that proved it: revisits compare it to see changes
    # OGC capabilities only (None elsewhere): the level, the defects found in the document, OWSLib's reason
    # where its reader failed.
    conformance: Conformance | None = None
    defects: list[str] = field(default_factory=list)
    owslib_error: str | None = None
    # Filled in by the crawl, not by detectors.
    level: int | None = None
    source_page: str | None = None
    discovered_at: str | None = None
    # The measured fetch of its OGC capabilities, set by that detector. Not in its record, nor in equality:
    # records and resources are compared between runs to see what changed, and the times always change.
    proof: ProofFetch | None = field(default=None, compare=False)

    @property
    def key(self) -> tuple[str, str]:
        return (self.url, self.type)

    def to_record(self) -> dict[str, Any]:
        """The JSON-lines record of ``geoweb crawl`` (and ``geoweb export``)."""
        return {
            "url": self.url,
            "type": self.type,
            "version": self.version,
            "level": self.level,
            "source_page": self.source_page,
            "title": self.title,
            "abstract": self.abstract,
            "keywords": self.keywords,
            "provider": self.provider,
            "datasets": len(self.datasets),
            "bbox": list(self.bbox) if self.bbox else None,
            "extra": self.extra,
            "conformance": self.conformance,
            "defects": self.defects,
            "owslib_error": self.owslib_error,
            "discovered_at": self.discovered_at,
            # last, because the JSON-lines writer encodes it in batches; field by field, not asdict's deep copy:
            # 5 ms instead of 50 for 2,000 layers, on the crawl's loop
            "dataset_list": [_dataset_record(d) for d in self.datasets],
        }


def _dataset_record(dataset: Dataset) -> dict[str, Any]:
    """A dataset in JSON's types (its bbox a list), so a record equals the one a state file gives back."""
    record = {f.name: getattr(dataset, f.name) for f in DATASET_FIELDS}
    if dataset.bbox:
        record["bbox"] = list(dataset.bbox)
    return record


def resource_from_record(record: dict[str, Any]) -> Resource:
    """The resource a ``Resource.to_record()`` record describes, as JSON gives it back."""
    datasets = [
        Dataset(**{**d, "bbox": tuple(d["bbox"]) if d.get("bbox") else None}) for d in record["dataset_list"]
    ]
    return Resource(
        url=record["url"], type=record["type"], version=record["version"], title=record["title"],
        abstract=record["abstract"], keywords=record["keywords"], provider=record["provider"], datasets=datasets,
        bbox=tuple(record["bbox"]) if record["bbox"] else None, extra=record["extra"],
        content_sha256=record.get("content_sha256"), conformance=record.get("conformance"),
        defects=record.get("defects", []), owslib_error=record.get("owslib_error"), level=record["level"],
        source_page=record["source_page"],
        discovered_at=record["discovered_at"],
    )  # fmt: skip


def sha256(data: bytes) -> str | None:
    """The hex digest of a document, or None for an empty one (a body that was not downloaded)."""
    return hashlib.sha256(data).hexdigest() if data else None


def union_bbox(boxes) -> BBox | None:
    """The smallest box holding every non-null box, or None."""
    boxes = [b for b in boxes if b is not None]
    if not boxes:
        return None
    return (
        min(b[0] for b in boxes),
        min(b[1] for b in boxes),
        max(b[2] for b in boxes),
        max(b[3] for b in boxes),
    )
