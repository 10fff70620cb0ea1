"""The plain data every layer shares: resources and their datasets, outside sources' records and scenes, what
a crawl carries and records, what a revisit checks, and the statuses the store keeps. It imports nothing of
geoweb but its errors, so any module may use it."""

from geoweb.models.crawl import DeferReason, LevelStats, Link, Page, RecordedLink, RunStatus, URLStatus
from geoweb.models.records import OnlineResource, Record, RecordStatus, Scene, SourceStatus
from geoweb.models.resources import (
    ALL_TYPES,
    ARCGIS_TYPES,
    DATASET_FIELDS,
    FILE_TYPES,
    OGC_TYPES,
    OGCAPI_TYPES,
    STAC_TYPES,
    BBox,
    Conformance,
    Dataset,
    ProofFetch,
    Resource,
    ResourceStatus,
    resource_from_record,
    sha256,
    union_bbox,
)
from geoweb.models.revisit import (
    CheckOperation,
    CheckOutcome,
    CheckResult,
    Due,
    ScheduleState,
    ScheduleStatus,
)

__all__ = [
    "ALL_TYPES", "ARCGIS_TYPES", "DATASET_FIELDS", "FILE_TYPES", "OGCAPI_TYPES", "OGC_TYPES", "STAC_TYPES",
    "BBox", "CheckOperation", "CheckOutcome", "CheckResult", "Conformance", "Dataset", "DeferReason", "Due", "LevelStats", "Link",
    "OnlineResource", "Page", "ProofFetch", "Record", "RecordStatus", "RecordedLink", "Resource", "ResourceStatus",
    "RunStatus", "Scene", "ScheduleState", "ScheduleStatus", "SourceStatus", "URLStatus",
    "resource_from_record", "sha256", "union_bbox",
]  # fmt: skip
