"""Revisits measure each check, over a loopback WMS on PostGIS: when the service slows down, the recorded time
to first byte and total time grow; when it is switched off, its checks fail, its availability falls and
nothing of it is deleted."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from geoweb.detect.ogc import read_capabilities
from geoweb.harvest.revisit import check_resources
from geoweb.models import Resource
from geoweb.semantic import tag_datasets
from geoweb.settings import Settings
from geoweb.store import Store
from tests.harvest.delayed import DelayedPagesServer
from tests.hostile.servers import loopback_settings
from tests.store.pages import page

CAPABILITIES = (Path(__file__).parents[1] / "data" / "capabilities" / "mapserver_wms_130.xml").read_bytes()
MS = 1e-3


def crawled(store: Store, url: str) -> Resource:
    """The WMS at ``url`` loaded as a crawl run loads it."""
    resource = read_capabilities(CAPABILITIES, url)
    resource.discovered_at = "2026-11-01T00:00:00+00:00"
    tag_datasets(resource.datasets, Settings().concept_lcs_threshold)
    run_id = f"timings-{uuid.uuid4().hex[:12]}"
    store.runs.begin(run_id, {})
    store.frontier.commit_pages(run_id, [page("http://seed.example/", 0, resources=[resource])], shards=1)
    return resource


def revisit(store: Store, settings: Settings, url: str) -> dict:
    """One revisit of the resource at ``url``, once it is due: its JSON line."""
    time.sleep(10 * MS)  # past the longest interval of these settings
    due = [
        d.id for d in store.revisits.due(["WMS"], 100_000, settings.revisit_initial_interval) if d.url == url
    ]
    lines: list[dict] = []
    check_resources(store, "timings", due, settings, lines.append)
    [line] = lines
    return line


def measured(store: Store, url: str) -> list[tuple]:
    """The capabilities checks of the resource at ``url``; its operation checks are rows of their own."""
    with store.transaction() as cur:
        cur.execute(
            "SELECT c.outcome, c.operation, c.http_status, c.first_byte_seconds, c.total_seconds, c.bytes "
            "FROM resource_checks c JOIN resources r ON r.id = c.resource_id "
            "WHERE r.url = %s AND c.operation = 'GetCapabilities' ORDER BY c.id",
            (url,),
        )
        return cur.fetchall()


def test_a_service_slowing_down_then_switched_off_is_measured_and_kept(postgis_dsn):
    with Store(postgis_dsn) as store:
        measured_and_kept(store)


def measured_and_kept(store: Store) -> None:
    with DelayedPagesServer({"/wms": ("text/xml", CAPABILITIES)}) as server:
        settings = loopback_settings(
            server, read_timeout=1.0, total_timeout=3.0, revisit_initial_interval=MS, revisit_min_interval=MS,
            revisit_max_interval=8 * MS, revisit_dead_after=2, obey_robots=False,
        )  # fmt: skip
        url = server.url("/wms")
        service = crawled(store, url)
        outcomes = [revisit(store, settings, url)["outcome"]]
        server.first_byte_delay, server.body_delay = 0.3, 0.2
        outcomes.append(revisit(store, settings, url)["outcome"])
    assert outcomes == ["unchanged", "unchanged"]
    outcomes = [revisit(store, settings, url) for _ in range(2)]  # nothing listens any more
    assert [(line["outcome"], line["error_reason"]) for line in outcomes] == [("failed", "connection")] * 2
    assert outcomes[-1]["dead"] is True

    fast, slow, *off = measured(store, url)
    assert fast[:3] == slow[:3] == ("unchanged", "GetCapabilities", 200)
    assert fast[5] == slow[5] == len(CAPABILITIES)
    assert fast[3] < 0.2 and slow[3] >= 0.3  # time to first byte
    # total time: at least both delays; not the first byte's time plus the body's delay, since the first
    # byte's time is taken when the client has read the head, a moment after it arrived
    assert slow[4] >= 0.3 + 0.2 > fast[4]
    assert off == [("failed", "GetCapabilities", None, None, None, None)] * 2

    with store.transaction() as cur:
        cur.execute("SELECT id FROM resources WHERE url = %s", (url,))
        [(resource_id,)] = cur.fetchall()
    [quality] = store.revisits.quality([resource_id])
    capabilities = quality["operations_30d"]["GetCapabilities"]
    assert (capabilities["checks"], capabilities["successes"]) == (4, 2)
    assert quality["last_success_at"] is not None
    assert quality["inspire_availability"] == quality["inspire_getmap"] == "not enough checks"
    with store.transaction() as cur:  # dead is a state: the resource and its layers are kept
        cur.execute(
            "SELECT r.last_status, count(d.*) FROM resources r JOIN datasets d ON d.resource_id = r.id "
            "WHERE r.url = %s GROUP BY r.last_status",
            (url,),
        )
        assert cur.fetchone() == ("dead", len(service.datasets))
