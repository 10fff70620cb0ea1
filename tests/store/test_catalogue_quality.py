"""Migration 0025: what the revisits measured, saved as a revisit saves its checks, in the catalogue's view
(``pycsw_records.quality``) and in the QGIS layers of services and files, which QGIS reads typed as before."""

from __future__ import annotations

from collections.abc import Iterator

import geopandas
import pytest
from sqlalchemy import create_engine

from geoweb.store import Store
from tests.geohub.data import checked
from tests.store.pages import kml, page, wms
from tests.store.queries import rows

SITE = "http://checked.example"
QUALITY_COLUMNS = ["checks_30d", "availability_30d_percent", "response_median", "inspire_availability",
                   "inspire_getmap"]  # fmt: skip
# 24 capabilities checks, one failed, and 24 GetMaps answered within a second: one criterion met, one not
WMS_CHECKS = [("failed", "GetCapabilities", None)] + [("unchanged", "GetCapabilities", 0.4)] * 23
WMS_CHECKS += [("ok", "GetMap", 0.8)] * 24
KML_CHECKS = [
    ("unchanged", "GetResource", 0.2),
    ("unchanged", "GetResource", 0.6),
    ("failed", "GetResource", None),
]


@pytest.fixture(scope="module")
def dsn(postgis_database) -> Iterator[str]:
    with postgis_database() as dsn, Store(dsn) as store:
        store.migrate()
        store.runs.begin("run", {})
        service, trails, unchecked = wms(SITE), kml(SITE), wms(SITE)
        unchecked.url = f"{SITE}/unchecked/wms"
        store.frontier.commit_pages("run", [page(f"{SITE}/", 1, None, [service, trails, unchecked])], 1)
        checked(store, service, WMS_CHECKS)
        checked(store, trails, KML_CHECKS)
        yield dsn


@pytest.fixture
def store(dsn) -> Iterator[Store]:
    with Store(dsn) as opened:
        yield opened


def quality(store: Store, url: str) -> dict | None:
    [(found,)] = rows(
        store,
        "SELECT p.quality FROM pycsw_records p JOIN resources r ON p.identifier = 'urn:geoweb:resource:' || r.id "
        "WHERE r.url = %s",
        url,
    )
    return found


def rules(store: Store, url: str) -> tuple[str, str]:
    [found] = rows(
        store,
        "SELECT q.inspire_availability_rule, q.inspire_getmap_rule FROM resource_quality q "
        "JOIN resources r ON r.id = q.resource_id WHERE r.url = %s",
        url,
    )
    return found


def test_a_record_s_quality_holds_the_figures_and_each_inspire_criterion_with_its_rule(store):
    availability_rule, getmap_rule = rules(store, wms(SITE).url)
    assert quality(store, wms(SITE).url) == {
        "checks_30d": 48,
        "availability_30d_percent": 97.92,  # 47 of 48: the GetMaps count too
        "response_median": 0.4,  # of the capabilities
        "inspire": [
            {"rule": availability_rule, "verdict": "not met"},
            {"rule": getmap_rule, "verdict": "met"},
        ],
    }
    assert quality(store, kml(SITE).url) == {
        "checks_30d": 3, "availability_30d_percent": 66.67, "response_median": 0.4, "inspire": None,
    }  # fmt: skip
    assert quality(store, f"{SITE}/unchecked/wms") is None


def test_pycsw_s_view_keeps_its_box_column_typed(store):
    assert rows(store, "SELECT type, srid FROM geometry_columns WHERE f_table_name = 'pycsw_records'") == [
        ("MULTIPOLYGON", 4326)
    ]


def read(dsn: str, view: str) -> geopandas.GeoDataFrame:
    engine = create_engine(dsn)
    try:
        return geopandas.read_postgis(f"SELECT * FROM {view} ORDER BY id", engine, geom_col="bbox")
    finally:
        engine.dispose()


@pytest.mark.parametrize("view", ["qgis_resources", "qgis_services", "qgis_wms_services"])  # 0027: all
def test_the_service_layers_carry_the_figures(dsn, view):
    layer = read(dsn, view).set_index("url")
    assert list(layer.columns[-len(QUALITY_COLUMNS) :]) == QUALITY_COLUMNS
    assert set(layer.geometry.geom_type) == {"MultiPolygon"} and layer.crs.to_epsg() == 4326
    service = layer.loc[wms(SITE).url]
    assert (service.checks_30d, float(service.availability_30d_percent), service.response_median) == (
        48,
        97.92,
        0.4,
    )
    assert (service.inspire_availability, service.inspire_getmap) == ("not met", "met")
    assert layer.loc[f"{SITE}/unchecked/wms", QUALITY_COLUMNS].isna().all()


def test_the_file_layer_carries_the_figures(dsn):
    trails = read(dsn, "qgis_files").set_index("url").loc[kml(SITE).url]
    assert (trails.checks_30d, float(trails.availability_30d_percent), trails.response_median) == (
        3,
        66.67,
        0.4,
    )
    assert trails.inspire_availability is None and trails.inspire_getmap is None  # not a WMS


def test_a_record_is_read_by_its_identifier_through_an_index(store):
    """GetRecordById, an OGC API - Records item and the quality of a page of them read records by identifier:
    an index lookup, never a scan of every resource, and the identifier is the record's own."""
    [(resource_id,)] = rows(store, "SELECT id FROM resources WHERE url = %s AND type = 'WMS'", wms(SITE).url)
    identifier = f"urn:geoweb:resource:{resource_id}"
    with store.transaction() as cur:
        cur.execute("SET LOCAL enable_seqscan = off")  # a table this small is scanned whatever its indexes
        cur.execute(
            "EXPLAIN SELECT identifier, quality FROM pycsw_records WHERE identifier = %s", (identifier,)
        )
        plan = "\n".join(line for (line,) in cur.fetchall())
        cur.execute("SELECT identifier, xml FROM pycsw_records WHERE identifier = %s", (identifier,))
        [(found, xml)] = cur.fetchall()
    assert "resources_record_identifier" in plan, plan
    assert found == identifier and f"<dc:identifier>{identifier}</dc:identifier>" in xml
