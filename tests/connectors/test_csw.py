"""The CSW harvest against the real pycsw of the test web: every record in both schemas, paging, the
modification-date filter, the load into PostGIS with withdrawals, and the deep-web path that finds the
services and the file only the catalogue knows."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from geoweb.connectors import ConnectorError
from geoweb.connectors.csw import CSWConnector, source_name
from geoweb.harvest import crawl
from geoweb.harvest.catalogue import catalogue_seeds, harvest_catalogue, start_catalogue_crawl
from geoweb.harvest.params import HarvestParams
from geoweb.models import Record
from geoweb.store import Store
from tests.integration.conftest import testweb  # noqa: F401  (the fixture that starts the test web)
from testweb.catalogue import RECORDS
from testweb.catalogue import URL as PYCSW
from testweb.layout import MANIFEST

pytestmark = [pytest.mark.testweb, pytest.mark.usefixtures("testweb")]
LOCAL = ["127.0.0.1:18004", "127.0.0.1:18010", "127.0.0.1:18030", "127.0.0.1:18031"]
SOURCE = source_name(PYCSW)
CRAWL_CONF = {"allowed_hosts": LOCAL, "shards": 2}
OWN = {r.identifier: r for r in RECORDS}  # our records: modified 2024-05-01, with boxes and links


@pytest.fixture(scope="module")
def manifest() -> dict:
    return json.loads(MANIFEST.read_text())


@pytest.fixture(scope="module")
def identifiers(manifest) -> set[str]:
    (catalogue,) = [r for r in manifest["resources"] if r["type"] == "CSW"]
    return set(catalogue["datasets"])


@pytest.fixture
def store(postgis_database) -> Iterator[Store]:
    """A store of this test's own: the catalogue's state is one row per source."""
    with postgis_database() as dsn, Store(dsn) as opened:
        opened.migrate()
        yield opened


def connector(**settings) -> CSWConnector:
    return CSWConnector({"url": PYCSW, "allowed_hosts": LOCAL, **settings})


def statuses(store: Store) -> dict[str, str]:
    with store.conn, store.conn.cursor() as cur:
        cur.execute("SELECT identifier, status FROM catalogue_records WHERE source = %s", (SOURCE,))
        return dict(cur.fetchall())


@pytest.mark.parametrize("schema", ["dc", "iso"])
def test_every_record_is_harvested_in_both_schemas(schema, identifiers):
    pages = list(connector(schema=schema, page_size=5).pages())
    assert [(p.start, p.returned, p.next_record) for p in pages] == [
        (1, 5, 6),
        (6, 5, 11),
        (11, 5, 16),
        (16, 2, 0),
    ]
    records = {r.identifier: r for p in pages for r in p.records}
    assert set(records) == identifiers and all(p.matched == 17 for p in pages)
    for identifier, truth in OWN.items():
        record = records[identifier]
        assert record.title == truth.title and record.abstract == truth.abstract
        assert record.keywords == list(truth.subjects)
        assert record.bbox == pytest.approx(truth.bbox)  # stored lat/lon, read lon/lat
        assert record.modified == datetime(2024, 5, 1, tzinfo=UTC)
        assert {(link.protocol, link.url) for link in record.links} == set(truth.links)


@pytest.mark.parametrize(("page_size", "requests"), [(1, 17), (17, 1), (1000, 1)])
def test_paging_edges(page_size, requests, identifiers):
    pages = list(connector(page_size=page_size).pages())
    assert len(pages) == requests and pages[-1].last
    assert {r.identifier for p in pages for r in p.records} == identifiers


def test_modification_date_filter(identifiers):
    recent = list(connector().pages(since=datetime(2024, 5, 1, 23, tzinfo=UTC)))
    assert recent[0].incremental and {r.identifier for r in recent[0].records} == set(OWN)
    assert [r.records for r in connector().pages(since=datetime(2031, 1, 1, tzinfo=UTC))] == [[]]


def test_an_unreachable_catalogue_is_a_clear_error():
    with pytest.raises(ConnectorError, match=r"records from 1: The host resolves to an address that may not"):
        list(CSWConnector({"url": PYCSW}).records())  # loopback, not allowed


def test_harvest_loads_records_with_footprints_then_goes_incremental(store):
    first = harvest_catalogue(store, connector(page_size=5))
    assert first["mode"] == "full" and first["complete"] and first["new"] == 17 and first["withdrawn"] == 0
    state = store.catalogue.source_state(SOURCE)
    assert state.last_status == "success" and state.watermark == datetime(2024, 5, 1, tzinfo=UTC)
    assert state.last_full_harvest is not None and state.last_counts["new"] == 17
    with store.conn, store.conn.cursor() as cur:
        cur.execute(
            "SELECT identifier FROM catalogue_records WHERE footprint && ST_MakeEnvelope(89.1, 22.1, 89.2, 22.2, 4326) "
            "AND ST_Intersects(footprint, ST_MakeEnvelope(89.1, 22.1, 89.2, 22.2, 4326))"
        )
        assert {row[0] for row in cur.fetchall()} == {
            "urn:uuid:c41d0f2e-wetlands",
            "urn:uuid:90c3d7aa-geoprocessing",
        }
        cur.execute(
            "SELECT identifier FROM catalogue_records WHERE search @@ websearch_to_tsquery('english', 'wetland')"
        )
        assert [row[0] for row in cur.fetchall()] == ["urn:uuid:c41d0f2e-wetlands"]

    second = harvest_catalogue(store, connector(page_size=5))
    assert second["mode"] == "incremental" and second["received"] == 5 and second["unchanged"] == 5
    assert second["new"] == 0 and second["withdrawn"] == 0
    assert set(statuses(store).values()) == {"active"}


def test_only_a_complete_full_harvest_withdraws(store):
    gone = Record(source=SOURCE, identifier="urn:uuid:gone-from-the-catalogue", title="Gone")
    store.catalogue.upsert_records(SOURCE, [gone])

    with pytest.raises(ConnectorError):  # a failed harvest: nothing withdrawn
        harvest_catalogue(store, CSWConnector({"url": PYCSW}), full=True)
    assert statuses(store)[gone.identifier] == "active"
    failed = store.catalogue.source_state(SOURCE)
    assert failed.last_status == "failed" and "may not be fetched" in failed.last_error

    partial = harvest_catalogue(store, connector(page_size=5, max_pages=2), full=True)  # stops early
    assert partial["complete"] is False and partial["withdrawn"] == 0
    assert statuses(store)[gone.identifier] == "active"

    complete = harvest_catalogue(store, connector(page_size=5), full=True)
    assert complete["complete"] and complete["withdrawn"] == 1
    assert statuses(store)[gone.identifier] == "withdrawn"
    assert list(statuses(store).values()).count("active") == 17

    # a withdrawn record that comes back is active again
    assert store.catalogue.upsert_records(SOURCE, [gone]) == {
        "new": 0,
        "updated": 1,
        "unchanged": 0,
        "refused": 0,
    }
    assert statuses(store)[gone.identifier] == "active"


def validate(store: Store, run_id: str) -> dict:
    """The rest of the DAG's validation crawl of a begun run: its one level, then finish_run."""
    params = HarvestParams.from_conf(store.runs.conf(run_id))
    assert params.max_level == 0
    for shard in crawl.plan_level(store, run_id, 0, params):
        crawl.crawl_shard(store, run_id, 0, shard, params)
    return crawl.finish_run(store, run_id)


def test_the_catalogue_leads_the_crawl_to_what_no_page_links(store, manifest):
    """The catalogue DAG's steps: harvest, then validate the records' service and file links."""
    harvest_catalogue(store, connector(schema="iso"))
    run_id = "catalogues__test"
    seeds = start_catalogue_crawl(store, run_id, CRAWL_CONF)
    assert seeds == 6  # the 7 links of our records, two of them on one endpoint; the CITE records have none
    summary = validate(store, run_id)
    found = {(r["url"], r["type"]): r for r in store.resources.export(run_id)}
    only_in_catalogue = [(r["url"], r["type"]) for r in manifest["resources"] if r["via"] == "catalogue"]
    assert len(only_in_catalogue) == 5
    for key in only_in_catalogue:
        assert key in found, f"{key} not found through the catalogue"
        assert found[key]["source_page"] == PYCSW and found[key]["level"] == 0
    assert summary["resources"] == len(found) and summary["levels"][0]["failures"] == 0


def test_links_validated_since_their_record_changed_are_not_crawled_again(store):
    """The daily catalogue crawl validates the links of new and changed records only (the revisits re-check
    what the others proved); a full run validates them all again."""
    harvest_catalogue(store, connector(schema="iso"))
    assert start_catalogue_crawl(store, "catalogues__first", CRAWL_CONF) == 6
    validate(store, "catalogues__first")
    assert catalogue_seeds(store) == {}
    assert start_catalogue_crawl(store, "catalogues__second", CRAWL_CONF) == 0  # no run is begun
    assert len(catalogue_seeds(store, everything=True)) == 6

    with store.conn, store.conn.cursor() as cur:  # one of our records changes after the crawl
        cur.execute(
            "UPDATE catalogue_records SET changed_at = now() WHERE source = %s AND identifier = %s "
            "RETURNING jsonb_array_length(links)",
            (SOURCE, next(iter(OWN))),
        )
        (links,) = cur.fetchone()
    again = catalogue_seeds(store)
    assert 0 < len(again) <= links < 6  # its links only


def test_harvest_csw_command_prints_records_and_fails_in_one_line():
    command = [sys.executable, "-m", "geoweb.cli", "harvest-csw", "--url", PYCSW, "--since", "2024-05-01"]
    allowed = [arg for host in LOCAL for arg in ("--allow-host", host)]
    done = subprocess.run([*command, "--schema", "iso", *allowed], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert {json.loads(line)["identifier"] for line in done.stdout.splitlines()} == set(OWN)
    refused = subprocess.run(command, capture_output=True, text=True, timeout=60)  # loopback, not allowed
    assert refused.returncode == 1 and refused.stdout == ""
    assert (
        refused.stderr.strip().splitlines()[-1].startswith(f"geoweb harvest-csw: {SOURCE}: records from 1:")
    )
