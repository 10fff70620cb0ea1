"""Archive harvests: the scenes a satellite-image archive (``geoweb.connectors.archive``) acquired since the
source's watermark, loaded into the store page by page and idempotently."""

from __future__ import annotations

import logging
from typing import Any

from geoweb.connectors.archive.base import ArchiveAdapter
from geoweb.models import BBox
from geoweb.store import Store

log = logging.getLogger("geoweb.harvest.archive")


def harvest_archive(store: Store, adapter: ArchiveAdapter, *, bbox: BBox | None = None) -> dict[str, Any]:
    """Load the scenes acquired since the source's watermark into the store, committing page by page; returns
    the counts. A failure is recorded with the source and raised: scenes already committed stay (loading them
    again changes nothing) and the watermark moves only when a harvest ends well."""
    with store.catalogue.harvesting(adapter.source, adapter.name, adapter.base_url) as harvest:
        since = harvest.state.watermark
        counts = harvest.counts
        counts |= {
            "since": since.isoformat() if since else None,
            "pages": 0,
            "new": 0,
            "updated": 0,
            "refused": 0,
        }
        for scenes in adapter.pages(since=since, bbox=bbox):
            for key, value in store.catalogue.upsert_scenes(adapter.source, scenes).items():
                counts[key] += value
            counts["pages"] += 1
            harvest.advance(s.acquired_at for s in scenes)
        counts["watermark"] = harvest.watermark.isoformat() if harvest.watermark else None
    log.info("%s harvested: %s", adapter.source, counts)
    return counts
