"""Catalogue harvests and the deep-web path: a CSW catalogue's records loaded into the store, and the crawl
that validates the services and files those records point to.

``harvest_catalogue`` loads one catalogue (``geoweb.connectors.csw``) page by page: each page is committed as
it arrives, records gone from a complete full harvest are withdrawn, and a failed or partial harvest
withdraws nothing. ``start_catalogue_crawl`` begins the crawl run of the records' candidate links
(``catalogue_seeds``), whose steps are ``geoweb.harvest.crawl``'s.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from geoweb.connectors.candidates import candidates
from geoweb.connectors.csw import CSWConnector
from geoweb.harvest.crawl import start_run
from geoweb.harvest.params import CRAWL_RUN_PREFIX, MAX_SEEDS, HarvestParams
from geoweb.links.filters import URLFilters
from geoweb.models import OnlineResource
from geoweb.settings import Settings
from geoweb.store import Store

log = logging.getLogger("geoweb.harvest.catalogue")

DEFAULT_FULL_EVERY = timedelta(days=7)  # incremental harvests cannot see deletions; a full one can


def harvest_catalogue(
    store: Store, connector: CSWConnector, *, full_every: timedelta = DEFAULT_FULL_EVERY, full: bool = False
) -> dict[str, Any]:
    """Load the catalogue's records into the store, page by page; returns the counts.

    Incremental from the source's watermark, unless ``full`` or the last complete full harvest is older than
    ``full_every``. Only a full harvest that ends normally with every matched record received withdraws the
    records it did not see. A failure is recorded with the source and raised: pages already committed stay,
    nothing is withdrawn and the watermark does not move."""
    with store.catalogue.harvesting(connector.source, "csw", connector.url) as harvest:
        state = harvest.state
        if not full and state.watermark is not None and state.last_full_harvest is not None:
            full = datetime.now(UTC) - state.last_full_harvest >= full_every
        since = None if full or state.watermark is None else state.watermark
        counts = harvest.counts
        counts |= dict.fromkeys(("pages", "received", "new", "updated", "unchanged", "refused", "skipped",
                                 "duplicates", "withdrawn"), 0)  # fmt: skip
        seen: set[str] = set()
        for page in connector.pages(since):  # at least one page, or an error
            for key, value in store.catalogue.upsert_records(connector.source, page.records).items():
                counts[key] += value
            counts["pages"] += 1
            counts["received"] += page.returned
            counts["skipped"] += page.skipped
            counts["duplicates"] += page.duplicates
            seen.update(r.identifier for r in page.records)
            harvest.advance(r.modified for r in page.records)
        complete = page.last and len(seen) + counts["skipped"] >= page.matched
        counts |= {
            "matched": page.matched,
            "mode": "incremental" if page.incremental else "full",
            "complete": complete,
        }
        if counts["mode"] == "full" and complete:
            counts["withdrawn"] = store.catalogue.mark_withdrawn(connector.source, seen)
            harvest.full = True
        elif counts["mode"] == "full":
            log.warning(
                "%s: full harvest incomplete (%d of %d records): nothing withdrawn",
                connector.source, len(seen), counts["matched"],
            )  # fmt: skip
    log.info("%s harvested: %s", connector.source, counts)
    return counts


def catalogue_seeds(store: Store, kind: str = "csw", *, everything: bool = False) -> dict[str, str]:
    """The crawl's seeds from the catalogues of a kind: every link of an active record that looks like a
    service or a file (``candidates``), spelled as the crawl spells URLs, with its catalogue's URL; each URL
    once (the first catalogue by URL keeps it), in order. Unless ``everything``, a link an earlier catalogue
    crawl fetched after its record last changed is left out: what it proved is re-checked by the revisits."""
    filters = URLFilters.from_settings(Settings.from_env())
    validated = {} if everything else store.runs.validated_seeds(CRAWL_RUN_PREFIX)
    seeds: dict[str, str] = {}
    unchanged = 0
    for catalogue, links, changed_at in store.catalogue.active_record_links(kind):
        offered = [
            OnlineResource(link["url"], protocol=link.get("protocol"), name=link.get("name"))
            for link in links
            if isinstance(link, dict) and isinstance(link.get("url"), str)
        ]
        for url in candidates(offered):
            seed = filters(url)
            if seed is None:
                continue
            if seed in validated and validated[seed] >= changed_at:
                unchanged += 1
                continue
            seeds.setdefault(seed, catalogue)
    if unchanged:
        log.info(
            "%d catalogue links validated since their record last changed are not crawled again", unchanged
        )
    return seeds


def start_catalogue_crawl(
    store: Store, run_id: str, conf: Mapping[str, Any], kind: str = "csw", *, everything: bool = False
) -> int:
    """Begin (or resume) the crawl of the catalogues' candidate links: ``conf`` is the crawl's (a
    ``HarvestParams`` conf without seeds), the seeds are ``catalogue_seeds`` at level 0 with their catalogue as
    source page, and max_level is 0: the detectors validate each link, nothing beyond it is followed. The run
    id must start with ``CRAWL_RUN_PREFIX``. Returns the number of seeds (0: no run is begun)."""
    seeds = catalogue_seeds(store, kind, everything=everything)
    if not seeds:
        log.info("run %s: the catalogues offer no service or file to crawl", run_id)
        return 0
    if len(seeds) > MAX_SEEDS:
        log.warning("run %s: %d catalogue links; the first %d are crawled", run_id, len(seeds), MAX_SEEDS)
        seeds = dict(list(seeds.items())[:MAX_SEEDS])
    params = HarvestParams.from_conf({**conf, "seeds": list(seeds), "max_level": 0})
    start_run(store, run_id, params)
    store.runs.set_seed_sources(run_id, seeds)
    log.info("run %s: %d catalogue links to validate", run_id, len(seeds))
    return len(seeds)
