"""Revisits against hostile servers, on PostGIS: a service flipping between two documents, one that stalls,
HTML 200 where a service was, a redirect to a private address, URL policies. Each bad one ends as a failed
check with its reason in the history; the good ones in the same batch are checked as usual."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest

from geoweb.detect.ogc import read_capabilities
from geoweb.harvest.revisit import check_resources
from geoweb.models import ALL_TYPES, Resource
from geoweb.semantic import tag_datasets
from geoweb.settings import Settings
from geoweb.store import Store
from tests.hostile.servers import HostileServer, PagesServer, loopback_settings
from tests.store.pages import page

CAPABILITIES = (Path(__file__).parents[1] / "data" / "capabilities" / "mapserver_wms_130.xml").read_bytes()
EDITED = CAPABILITIES.replace(b"Regions of the test web", b"Regions, second edition").replace(
    b"<Name>lakes</Name>", b"<Name>reservoirs</Name>"
)
XML = "text/xml"
HTML = ("text/html", b"<!doctype html><html><body>Maintenance: back soon</body></html>")
MS = 1e-3  # intervals in milliseconds keep the schedule's arithmetic and the test fast


@pytest.fixture
def store(postgis_dsn):
    with Store(postgis_dsn) as opened:
        yield opened


def crawled(store: Store, *resources: Resource) -> None:
    """Load resources as a crawl run does (datasets tagged with their concepts)."""
    for resource in resources:
        tag_datasets(resource.datasets, Settings().concept_lcs_threshold)
    run_id = f"hostile-{uuid.uuid4().hex[:12]}"
    store.runs.begin(run_id, {})
    store.frontier.commit_pages(
        run_id, [page("http://seed.example/", 0, resources=list(resources))], shards=1
    )


def revisit(store: Store, settings, *resources: Resource) -> dict[str, dict]:
    """One revisit run over those of ``resources`` that are due: each URL's JSON line."""
    urls = {r.url for r in resources}
    due = store.revisits.due(ALL_TYPES, 100_000, settings.revisit_initial_interval)
    lines: list[dict] = []
    check_resources(store, "hostile", [d.id for d in due if d.url in urls], settings, lines.append)
    return {line["url"]: line for line in lines}


def history(store: Store, url: str) -> list[tuple]:
    """The checks of the resource at ``url`` itself (its capabilities, or its own URL), not its operation
    checks."""
    with store.transaction() as cur:
        cur.execute(
            "SELECT c.outcome, c.http_status, c.error_reason, c.details, s.interval_seconds, s.state "
            "FROM resource_checks c JOIN resources r ON r.id = c.resource_id "
            "JOIN resource_schedule s ON s.resource_id = r.id "
            "WHERE r.url = %s AND c.operation IN ('GetCapabilities', 'GetResource') ORDER BY c.id",
            (url,),
        )
        return cur.fetchall()


def revisit_settings(*servers, **changes):
    return loopback_settings(
        *servers, revisit_initial_interval=8 * MS, revisit_min_interval=1 * MS, revisit_max_interval=64 * MS,
        revisit_dead_after=2, **changes,
    )  # fmt: skip


def wms_at(url: str, body: bytes = CAPABILITIES) -> Resource:
    resource = read_capabilities(body, url)
    resource.discovered_at = "2026-11-01T00:00:00+00:00"
    return resource


def test_a_service_flipping_between_two_documents_is_changed_each_time_and_checked_more_often(store):
    with PagesServer({"/wms": (XML, CAPABILITIES)}) as server:
        settings = revisit_settings(server)
        wms = wms_at(server.url("/wms"))
        crawled(store, wms)
        time.sleep(10 * MS)
        outcomes = []
        for body in (CAPABILITIES, EDITED, CAPABILITIES, EDITED):
            server.pages["/wms"] = (XML, body)
            outcomes.append(revisit(store, settings, wms)[wms.url]["outcome"])
            time.sleep(20 * MS)  # past the longest interval below
    assert outcomes == ["unchanged", "changed", "changed", "changed"]
    capabilities = [path for path in server.seen if "request=GetCapabilities" in path]
    assert capabilities[-1] == "/wms?service=WMS&request=GetCapabilities&version=1.3.0"
    rows = history(store, wms.url)
    assert [row[4] for row in rows][-1] == 2 * MS  # 8 ms, doubled to 16, then halved three times
    assert rows[1][3] == {"datasets_added": ["reservoirs"], "datasets_removed": ["lakes"]}
    with store.transaction() as cur:
        cur.execute("SELECT title FROM resources WHERE url = %s AND type = 'WMS'", (wms.url,))
        assert cur.fetchone() == ("Regions, second edition",)


def test_hostile_answers_fail_with_their_reasons_and_the_good_service_is_still_checked(store, caplog):
    pages = {"/wms": (XML, CAPABILITIES), "/ows": HTML, "/trails.kml": HTML}
    with PagesServer(pages) as site, HostileServer() as hostile:
        settings = revisit_settings(site, hostile)
        good, html_wms = wms_at(site.url("/wms")), wms_at(site.url("/ows"))
        html_kml = Resource(site.url("/trails.kml"), "KML", content_sha256="ab" * 32)
        stalled = Resource(hostile.url("/stall"), "KML", content_sha256="cd" * 32)
        to_metadata = Resource(
            hostile.url("/redirect?to=http://169.254.169.254/latest/meta-data/"),
            "GEOJSON",
            content_sha256="ef" * 32,
        )
        resources = (good, html_wms, html_kml, stalled, to_metadata)
        crawled(store, *resources)
        time.sleep(10 * MS)
        first = revisit(store, settings, *resources)
        time.sleep(10 * MS)
        second = revisit(store, settings, *resources)
    assert first[good.url]["outcome"] == second[good.url]["outcome"] == "unchanged"
    failed = {
        url: (line["error_reason"], line["http_status"]) for url, line in first.items() if url != good.url
    }
    assert failed == {
        html_wms.url: ("not_found", 200),
        html_kml.url: ("not_found", 200),
        stalled.url: ("timeout", None),
        to_metadata.url: ("blocked_address", None),
    }
    assert "no WMS in the answer (text/html)" in first[html_wms.url]["error_message"]
    assert first[html_kml.url]["error_message"].startswith("kml: ")
    # the second failure in a row (dead_after=2) marks them dead: kept, with their history
    assert all(second[url].get("dead") for url in failed)
    assert history(store, stalled.url)[-1][:3] == ("failed", None, "timeout")
    assert history(store, stalled.url)[-1][5] == "dead"


def test_url_policies_skip_a_resource_and_fix_the_interval_of_another(store):
    with PagesServer({"/wms": (XML, CAPABILITIES), "/tiles/wms": (XML, CAPABILITIES)}) as server:
        policies = [
            {"pattern": "/tiles/", "action": "skip"},
            {"pattern": r"/wms$", "action": "fetch", "revisit_hours": 0.001},
        ]
        settings = revisit_settings(server, url_policies=json.dumps(policies))
        fixed, skipped = wms_at(server.url("/wms")), wms_at(server.url("/tiles/wms"))
        crawled(store, fixed, skipped)
        time.sleep(10 * MS)
        lines = revisit(store, settings, fixed, skipped)
    assert list(lines) == [fixed.url]
    assert history(store, fixed.url) == [("unchanged", 200, None, {}, 3.6, "alive")]
    assert history(store, skipped.url) == []
    assert "/tiles/wms" not in " ".join(server.seen)
