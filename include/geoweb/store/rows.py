"""A crawled resource as database rows: cleaned, with every change it needed logged once per resource."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime

from geoweb.models import Dataset, ProofFetch, Resource
from geoweb.store.clean import LONG_TEXT, MAX_URL_BYTES, Cleaner, storable_url
from geoweb.store.geometry import to_ewkb

log = logging.getLogger("geoweb.store")

RESOURCE_COLUMNS = (
    "url", "type", "version", "title", "abstract", "keywords", "provider", "bbox", "extra", "content_sha256",
    "source_page", "keyword", "level", "conformance", "defects", "owslib_error",
)  # fmt: skip
DATASET_COLUMNS = ("resource_id", "position", "name", "title", "keywords", "footprint", "extra", "concepts")


@dataclass(slots=True)
class ResourceRows:
    """One resource as rows: its ``resources`` row, its datasets in order (without the resource id, which the
    upsert returns) and how the run found it."""

    key: tuple[str, str]
    values: tuple  # RESOURCE_COLUMNS
    datasets: list[tuple]  # DATASET_COLUMNS[1:]
    level: int
    source_page: str | None
    discovered_at: datetime
    proof: ProofFetch | None = None  # the measured fetch that proved it: the crawl stores it as a check


def resource_rows(
    resource: Resource, level: int, source_page: str | None, keyword: str | None
) -> ResourceRows | None:
    """The rows of a resource found at ``level`` from ``source_page`` (which fill what the crawl left unset on
    the resource), or None, logged, when its (url, type) cannot be a key."""
    clean = Cleaner()
    url, type_ = storable_url(resource.url), clean.text(resource.type, "type")
    if url is None or not type_:
        log.error(
            "%.200r (%.50r) not stored: the key needs a type and a URL of at most %d bytes", resource.url,
            resource.type, MAX_URL_BYTES,
        )  # fmt: skip
        return None
    level = level if resource.level is None else resource.level
    source_page = storable_url(source_page if resource.source_page is None else resource.source_page)
    values = (
        url, type_, clean.text(resource.version, "version"), clean.text(resource.title, "title"),
        clean.text(resource.abstract, "abstract", LONG_TEXT), clean.words(resource.keywords, "keywords"),
        clean.text(resource.provider, "provider"), to_ewkb([clean.box(resource.bbox, "bbox")])[0],
        clean.json(resource.extra, "extra"), clean.text(resource.content_sha256, "content_sha256"),
        source_page, clean.text(keyword, "keyword"), level, resource.conformance,
        clean.words(resource.defects, "defects"), clean.text(resource.owslib_error, "owslib_error"),
    )  # fmt: skip
    footprints = to_ewkb([clean.box(d.bbox, "dataset bbox") for d in resource.datasets])
    datasets = [
        _dataset_row(position, d, footprint, clean)
        for position, (d, footprint) in enumerate(zip(resource.datasets, footprints, strict=True))
    ]
    discovered_at = _timestamp(resource.discovered_at, clean)
    clean.log_changes(f"{url} ({type_})")
    return ResourceRows((url, type_), values, datasets, level, source_page, discovered_at, resource.proof)


def _dataset_row(position: int, dataset: Dataset, footprint: str | None, clean: Cleaner) -> tuple:
    """DATASET_COLUMNS but the resource id."""
    return (
        position, clean.text(dataset.name, "dataset name"), clean.text(dataset.title, "dataset title"),
        clean.words(dataset.keywords, "dataset keywords"), footprint, clean.json(dataset.extra, "dataset extra"),
        clean.words(dataset.concepts, "dataset concepts"),
    )  # fmt: skip


def _timestamp(value: str | None, clean: Cleaner) -> datetime:
    """An ISO 8601 time (UTC if it has no offset); now when missing or unreadable."""
    if value is not None:
        try:
            moment = datetime.fromisoformat(value)
        except (TypeError, ValueError):
            clean.note("discovered_at: unreadable, now used")
        else:
            return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return datetime.now(UTC)
