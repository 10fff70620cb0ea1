"""Revisits on the test web: the services and files a crawl loaded (MapServer, MapProxy, PyWPS, pycsw,
pygeoapi, stac-fastapi, lighttpd, the ArcGIS stand-in) are re-checked by the revisit steps and by
``geoweb revisit``, and found unchanged; a copy of a real capabilities document, served from a test-local
server and then edited, is found changed and reloaded; a MapServer WMS whose layer's data file is missing
answers its capabilities while its GetMap fails, and its operations are failing."""

from __future__ import annotations

import json
import urllib.request

import pytest

from geoweb.cli import main
from geoweb.detect.ogc.common import capabilities_url
from geoweb.harvest.crawl import crawl_shard, plan_level, start_run
from geoweb.harvest.params import HarvestParams, RevisitParams
from geoweb.harvest.revisit import check_resources, plan_revisits, summarize
from geoweb.models import ALL_TYPES, OGC_TYPES
from geoweb.settings import Settings
from geoweb.store import Store
from tests.hostile.servers import PagesServer
from testweb.mapserver import ECHO, OUTAGE

pytestmark = pytest.mark.testweb

TYPES = list(ALL_TYPES)  # OGC services, OGC APIs, STAC, ArcGIS REST and files: every detector's own request


@pytest.fixture(scope="module")
def database(postgis_database):
    """A database of this module's own: every resource in it is one this module crawled."""
    with postgis_database() as dsn:
        with Store(dsn) as store:
            store.migrate()
        yield dsn


def crawl(store: Store, run_id: str, seeds: list[str], allowed: list[str]) -> None:
    """Load what the seeds are, with the harvest steps of the crawl DAG (level 0 only)."""
    params = HarvestParams.from_conf(
        {"seeds": seeds, "max_level": 0, "allowed_hosts": allowed, "shards": 1, "types": TYPES}
    )
    start_run(store, run_id, params)
    for shard in plan_level(store, run_id, 0, params):
        crawl_shard(store, run_id, 0, shard, params)


def revisit(store: Store, allowed: list[str]) -> list[dict]:
    """One revisit run as the DAG does it (plan, a check per shard, summary); each check's JSON line."""
    params = RevisitParams.from_conf({"allowed_hosts": allowed, "types": TYPES})
    settings = params.settings(Settings.from_env(revisit_initial_interval=1e-6))
    lines: list[dict] = []
    summaries = [
        check_resources(store, "revisit-test", ids, settings, lines.append)
        for ids in plan_revisits(store, params, settings)
    ]
    assert summarize(store, summaries)["checked"] == len(lines)
    return lines


def test_real_servers_are_rechecked_unchanged_by_the_steps_and_the_cli(
    testweb, database, monkeypatch, capsys
):
    planted = [r for r in testweb["resources"] if r["type"] in TYPES and r["via"] != "robots-excluded"]
    seeds = sorted(
        {capabilities_url(r["url"], r["type"]) if r["type"] in OGC_TYPES else r["url"] for r in planted}
    )
    with Store(database) as store:
        crawl(store, "testweb-crawl", seeds, ["127.0.0.1"])
        lines = revisit(store, ["127.0.0.1"])
        with store.transaction() as cur:
            cur.execute("SELECT url, type FROM resources")
            loaded = set(cur.fetchall())
            cur.execute("UPDATE resource_schedule SET next_check_at = now()")  # due again, for the CLI
    assert {(r["url"], r["type"]) for r in planted} <= loaded
    assert {(line["url"], line["type"]) for line in lines} == loaded
    assert {(line["url"], line["type"]): line["outcome"] for line in lines} == dict.fromkeys(
        loaded, "unchanged"
    )
    # the real servers answer their operation checks; the echo decoy answers a GetMap with its capabilities,
    # and the ArcGIS stand-in, which draws no maps, an export with its HTML page
    failed = {
        (line["url"], line["type"]): line["operation_check"]["error_reason"]
        for line in lines
        if line.get("operation_check", {}).get("outcome") == "failed"
    }
    arcgis_maps = {key: "html" for key in loaded if key[1] == "ARCGIS-MAPSERVER"}
    assert failed == {(ECHO.url, "WMS"): "not_image", **arcgis_maps}
    # MapProxy's KVP and RESTful WMTS are asked for a tile each (and are not among the failed)
    tiles = [line["operation_check"]["operation"] for line in lines if line["type"] == "WMTS"]
    assert tiles == ["GetTile", "GetTile"]

    monkeypatch.setenv("GEOWEB_DB", database)
    assert main(["revisit", "--allow-host", "127.0.0.1", "--types", ",".join(TYPES), "--no-operations"]) == 0
    out, err = capsys.readouterr()
    cli_lines = [json.loads(line) for line in out.splitlines()]
    assert {(line["url"], line["type"]) for line in cli_lines} == loaded
    assert {line["outcome"] for line in cli_lines} == {"unchanged"}
    assert not any("operation_check" in line for line in cli_lines)  # the capabilities alone, as asked
    assert f"checked      {len(loaded)}" in err and "dead         0" in err


def test_an_edited_copy_of_a_real_capabilities_document_is_found_changed(testweb, database):
    csw = next(r["url"] for r in testweb["resources"] if r["type"] == "CSW")
    original = urllib.request.urlopen(capabilities_url(csw, "CSW") + "&version=2.0.2", timeout=30).read()
    assert b"<ows:Title>" in original
    with PagesServer({"/csw": ("application/xml", original)}) as server, Store(database) as store:
        crawl(store, "copy-crawl", [capabilities_url(server.url("/csw"), "CSW")], [server.hostport])
        mine = [server.hostport]
        assert [line["outcome"] for line in revisit(store, mine)] == ["unchanged"]
        with store.transaction() as cur:
            cur.execute(
                "UPDATE resource_schedule SET next_check_at = now() "
                "WHERE resource_id = (SELECT id FROM resources WHERE url = %s)",
                (server.url("/csw"),),
            )
        edited = original.replace(b"<ows:Title>", b"<ows:Title>Edited: ", 1)
        server.pages["/csw"] = ("application/xml", edited)
        [line] = revisit(store, mine)
        with store.transaction() as cur:
            cur.execute("SELECT title FROM resources WHERE url = %s", (server.url("/csw"),))
            (title,) = cur.fetchone()
    assert line["outcome"] == "changed" and line["url"] == server.url("/csw")
    assert title.startswith("Edited: ")


def test_a_wms_whose_maps_fail_while_its_capabilities_answer_has_failing_operations(testweb, database):
    with Store(database) as store:
        crawl(store, "outage-crawl", [capabilities_url(OUTAGE.url, "WMS")], ["127.0.0.1"])
        [line] = [line for line in revisit(store, ["127.0.0.1"]) if line["url"] == OUTAGE.url]
        with store.transaction() as cur:
            cur.execute(
                "SELECT c.run_id, c.operation, c.outcome, c.http_status, c.error_reason FROM resource_checks c "
                "JOIN resources r ON r.id = c.resource_id WHERE r.url = %s ORDER BY c.id",
                (OUTAGE.url,),
            )
            rows = cur.fetchall()
            cur.execute("SELECT id FROM resources WHERE url = %s", (OUTAGE.url,))
            [(resource_id,)] = cur.fetchall()
        [quality] = store.revisits.quality([resource_id])
    assert line["outcome"] == "unchanged"  # the failing GetMap leaves the capabilities check as it is
    assert rows == [
        ("outage-crawl", "GetCapabilities", "unchanged", 200, None),  # the crawl's fetch, measured too
        ("revisit-test", "GetCapabilities", "unchanged", 200, None),
        ("revisit-test", "GetMap", "failed", 200, "ogc_exception"),
    ]
    assert quality["operations_status"] == "failing"
    assert quality["operations_error"].startswith("GetMap ogc_exception: OGC exception report")
    assert "Unable to access file" in quality["operations_error"]  # MapServer's word for the missing data
    capabilities = quality["operations_30d"]["GetCapabilities"]
    assert (capabilities["checks"], capabilities["successes"]) == (2, 2)
