"""A crawl's measured capabilities fetches on PostGIS: each OGC service the crawl proved by a timed fetch
gets a ``resource_checks`` row of the crawl run, changed or unchanged by its stored content hash, counted as
available by ``resource_quality``; resources without a measured fetch get none, and the revisit schedule is
left to revisits."""

from __future__ import annotations

import threading
from decimal import Decimal

from geoweb.models import ProofFetch
from geoweb.store import Store
from geoweb.store.resources import upsert_run_resources
from geoweb.store.rows import resource_rows
from tests.store.pages import kml, page, wms
from tests.store.queries import rows

TINY = 1e-6  # seconds: due at once
CHECKS = """
SELECT c.run_id, c.operation, c.outcome, c.http_status, c.first_byte_seconds, c.total_seconds, c.seconds,
       c.bytes, c.content_sha256, c.details
FROM resource_checks c JOIN resources r ON r.id = c.resource_id
WHERE r.url LIKE %s ORDER BY c.id
"""


def crawl(store: Store, run_id: str, site: str, sha: str, proof: ProofFetch) -> None:
    """A run that finds the site's WMS (proved by a measured fetch) and its KML (no measurement)."""
    store.runs.begin(run_id, {"seeds": [f"{site}/"]})
    service = wms(site, 1, f"{site}/")
    service.content_sha256, service.proof = sha, proof
    pages = [page(f"{site}/", 0, resources=[service, kml(site, 1, f"{site}/")])]
    store.frontier.commit_pages(run_id, pages, 4)


def test_each_crawl_of_a_service_is_a_measured_check_changed_by_its_content(store, site):
    first, second, third = (f"crawl-{n}-{site}" for n in (1, 2, 3))
    crawl(store, first, site, "ab" * 32, ProofFetch(200, 0.125, 0.5, 4096))
    crawl(store, second, site, "cd" * 32, ProofFetch(200, 0.25, 1.5, 8192))
    crawl(store, third, site, "cd" * 32, ProofFetch(200, 0.375, 2.5, 8192))

    assert rows(store, CHECKS, f"{site}/%") == [
        (first, "GetCapabilities", "unchanged", 200, 0.125, 0.5, 0.5, 4096, "ab" * 32, {"first_sighting": True}),
        (second, "GetCapabilities", "changed", 200, 0.25, 1.5, 1.5, 8192, "cd" * 32, {}),
        (third, "GetCapabilities", "unchanged", 200, 0.375, 2.5, 2.5, 8192, "cd" * 32, {}),
    ]  # fmt: skip
    # the KML had no measured fetch: no row of its own
    assert rows(store, CHECKS, f"{site}/files/%") == []

    [(checks, availability, operations, median)] = rows(
        store,
        "SELECT q.checks_30d, q.availability_30d_percent, q.operations_30d, r.response_median "
        "FROM resource_quality q JOIN resources r ON r.id = q.resource_id WHERE r.url = %s AND r.type = 'WMS'",
        wms(site).url,
    )
    assert (checks, availability, median) == (3, Decimal("100.00"), 1.5)
    assert operations["GetCapabilities"]["checks"] == 3


def test_the_schedule_and_its_fingerprint_stay_the_revisits(store, site):
    crawl(store, f"crawl-{site}", site, "ef" * 32, ProofFetch(200, 0.1, 0.2, 100))
    url = wms(site).url
    assert rows(
        store,
        "SELECT count(*) FROM resource_schedule s JOIN resources r ON r.id = s.resource_id WHERE r.url = %s",
        url,
    ) == [(0,)]
    [due] = [d for d in store.revisits.due(["WMS"], 100_000, TINY) if d.url == url]
    assert due.baseline is None  # the first revisit takes its own fingerprint


def test_a_resource_found_twice_in_a_batch_is_checked_once(store, run_id, site):
    service = wms(site, 1, f"{site}/")
    service.proof = ProofFetch(200, 0.1, 0.2, 100)
    store.frontier.commit_pages(run_id, [page(f"{site}/{n}", 1, f"{site}/", [service]) for n in range(2)], 4)
    assert [row[:3] for row in rows(store, CHECKS, f"{site}/%")] == [(run_id, "GetCapabilities", "unchanged")]


def test_two_shards_committing_a_service_at_once_label_their_checks_one_after_the_other(
    store, postgis_dsn, site
):
    """One shard's commit holds a new hash of the service uncommitted when another commits the same: the other
    waits, then compares with that hash (unchanged), not with the older one both began with (changed twice)."""
    crawl(store, f"crawl-0-{site}", site, "ab" * 32, ProofFetch(200, 0.1, 0.2, 100))
    first, second = f"crawl-1-{site}", f"crawl-2-{site}"
    store.runs.begin(first, {"seeds": [f"{site}/"]})
    service = wms(site, 1, f"{site}/")
    service.content_sha256, service.proof = "cd" * 32, ProofFetch(200, 0.1, 0.2, 100)
    with Store(postgis_dsn) as other, other.transaction() as cur:
        rows_ = resource_rows(service, 1, f"{site}/", None)
        upsert_run_resources(cur, first, [rows_], {rows_.key: f"{site}/"})
        waiting = threading.Thread(target=crawl, args=(store, second, site, "cd" * 32, service.proof))
        waiting.start()
        waiting.join(1.0)
        assert waiting.is_alive()  # held by the first shard's lock on the service's row
    waiting.join(30)
    assert [row[:3] for row in rows(store, CHECKS, f"{site}/%")] == [
        (f"crawl-0-{site}", "GetCapabilities", "unchanged"),
        (first, "GetCapabilities", "changed"),
        (second, "GetCapabilities", "unchanged"),
    ]
