"""The views of migration 0011 as QGIS sees them: listed in ``geometry_columns`` with one geometry type and
SRID, read by geopandas, live over the tables, and typed whatever box a service declares."""

from __future__ import annotations

from collections.abc import Iterator

import geopandas
import pytest
import shapely
from sqlalchemy import create_engine

from geoweb.models import FILE_TYPES, Conformance, Dataset, Resource
from geoweb.store import Store
from tests.store.pages import page
from tests.store.queries import rows

SITE = "http://maps.example"
OTHER_SERVICES = ("WMTS", "WPS", "CSW", "OGCAPI-FEATURES", "STAC-API", "ARCGIS-MAPSERVER")  # no datasets
SERVICE_KINDS = (
    "wms",
    "wfs",
    "wcs",
    "wmts",
    "wps",
    "sos",
    "csw",
    "ogcapi",
    "stac",
    "arcgis",
)  # migration 0016
VIEWS = {
    "qgis_resources": "bbox", "qgis_services": "bbox", "qgis_files": "bbox", "qgis_datasets": "footprint",
    "qgis_wms_layers": "footprint", "qgis_wfs_feature_types": "footprint", "qgis_coverages": "footprint",
} | {f"qgis_{kind}_services": "bbox" for kind in SERVICE_KINDS}  # fmt: skip
ACROSS = (170.0, -20.0, -170.0, -10.0)  # crosses the antimeridian
SLOPPY_WFS = ["no OperationsMetadata section", "decimal commas in bounding boxes, read as decimal points"]


def service(type_: str, *datasets: Dataset, bbox=(120.0, 22.0, 122.0, 25.0)) -> Resource:
    return Resource(
        url=f"{SITE}/{type_.lower()}", type=type_, title=f"A {type_}", provider="Agency", keywords=["a", "b"],
        datasets=list(datasets), bbox=bbox,
    )  # fmt: skip


def loaded_resources() -> list[Resource]:
    wms = service(
        "WMS",
        Dataset(name="rivers", title="Rivers", bbox=(121.0, 24.8, 121.8, 25.3), concepts=["river", "lake"]),
        Dataset(name="pacific", bbox=ACROSS),
        Dataset(name="station", bbox=(121.5, 25.0, 121.5, 25.0)),
        Dataset(name="meridian", bbox=(121.5, 24.0, 121.5, 25.0)),
        Dataset(name="nowhere"),
        bbox=ACROSS,
    )
    box = (1.0, 2.0, 3.0, 4.0)
    files = [
        Resource(url=f"{SITE}/f.{t.lower()}", type=t, datasets=[Dataset(name=None, bbox=box)], bbox=box)
        for t in FILE_TYPES
    ]
    wms.conformance = Conformance.CONFORMANT
    wfs = service("WFS", Dataset(name="parcels", bbox=(121.0, 24.0, 121.2, 24.2)))
    wfs.conformance, wfs.defects, wfs.owslib_error = Conformance.READABLE, SLOPPY_WFS, "OWSLib: TypeError"
    return [
        wms,
        wfs,
        service("WCS", Dataset(name="dem", bbox=(119.3, 21.8, 122.1, 25.4)), bbox=(180.0, 10.0, 180.0, 10.0)),
        service("SOS", Dataset(name="gauges"), bbox=None),
        *(service(t) for t in OTHER_SERVICES),
        *files,
    ]


@pytest.fixture(scope="module")
def dsn(postgis_database) -> Iterator[str]:
    with postgis_database() as dsn, Store(dsn) as store:
        store.migrate()
        store.runs.begin("run", {})
        store.frontier.commit_pages("run", [page(f"{SITE}/", 1, None, loaded_resources())], 1)
        yield dsn


@pytest.fixture
def store(dsn) -> Iterator[Store]:
    with Store(dsn) as opened:
        yield opened


def read(dsn: str, view: str) -> geopandas.GeoDataFrame:
    engine = create_engine(dsn)
    try:
        return geopandas.read_postgis(f"SELECT * FROM {view} ORDER BY id", engine, geom_col=VIEWS[view])
    finally:
        engine.dispose()


def test_geometry_columns_lists_each_view_as_multipolygons_in_4326(store):
    listed = rows(
        store,
        "SELECT f_table_name, f_geometry_column, type, srid FROM geometry_columns WHERE left(f_table_name, 5) = 'qgis_'",
    )
    assert sorted(listed) == sorted((view, column, "MULTIPOLYGON", 4326) for view, column in VIEWS.items())


@pytest.mark.parametrize("view", VIEWS)
def test_each_view_reads_as_multipolygons_with_a_unique_integer_key(dsn, view):
    frame = read(dsn, view)
    assert frame["id"].is_unique and frame["id"].dtype.kind == "i"
    if view == "qgis_sos_services":  # its one service has no box: nothing to read a CRS or type from
        assert frame.geometry.isna().all()
        return
    assert frame.crs.to_epsg() == 4326
    assert set(frame.geometry.dropna().geom_type) == {"MultiPolygon"}


def test_the_views_hold_the_expected_rows(dsn):
    assert sorted(read(dsn, "qgis_services")["type"]) == sorted(["SOS", "WCS", "WFS", "WMS", *OTHER_SERVICES])
    assert sorted(read(dsn, "qgis_files")["type"]) == sorted(FILE_TYPES)
    for kind in SERVICE_KINDS:  # a layer per kind of service
        expected = [
            t for t in ["SOS", "WCS", "WFS", "WMS", *OTHER_SERVICES] if t.split("-")[0] == kind.upper()
        ]
        assert list(read(dsn, f"qgis_{kind}_services")["type"]) == expected, kind
    assert len(read(dsn, "qgis_resources")) == 4 + len(OTHER_SERVICES) + len(FILE_TYPES)
    assert list(read(dsn, "qgis_wms_layers")["name"]) == [
        "rivers",
        "pacific",
        "station",
        "meridian",
        "nowhere",
    ]
    assert list(read(dsn, "qgis_wfs_feature_types")["name"]) == ["parcels"]
    assert list(read(dsn, "qgis_coverages")["name"]) == ["dem"]
    assert len(read(dsn, "qgis_datasets")) == 8 + len(FILE_TYPES)


def test_layer_columns_hold_the_service_and_the_keywords_as_text(dsn):
    rivers = read(dsn, "qgis_wms_layers").iloc[0]
    assert (rivers.service_url, rivers.service_title, rivers.provider) == (f"{SITE}/wms", "A WMS", "Agency")
    assert (rivers.title, rivers.keywords, rivers.concepts) == ("Rivers", "", "river; lake")
    assert read(dsn, "qgis_services").set_index("type").loc["WFS", "keywords"] == "a; b"


def test_an_areal_box_is_the_stored_polygon(store, dsn):
    (stored,) = rows(store, "SELECT ST_AsBinary(footprint) FROM datasets WHERE name = 'rivers'")
    rivers = read(dsn, "qgis_wms_layers").set_index("name").geometry["rivers"]
    assert rivers.equals(shapely.from_wkb(bytes(stored[0])))
    assert len(rivers.geoms) == 1


def test_a_box_across_the_antimeridian_keeps_its_two_parts(dsn):
    pacific = read(dsn, "qgis_wms_layers").set_index("name").geometry["pacific"]
    assert sorted(p.bounds for p in pacific.geoms) == [
        (-180.0, -20.0, -170.0, -10.0),
        (170.0, -20.0, 180.0, -10.0),
    ]
    assert read(dsn, "qgis_services").set_index("type").geometry["WMS"].equals(pacific)


def test_a_degenerate_box_becomes_a_tiny_polygon_clipped_to_the_world(dsn):
    layers = read(dsn, "qgis_wms_layers").set_index("name").geometry
    assert layers["station"].bounds == pytest.approx((121.49999, 24.99999, 121.50001, 25.00001))
    assert layers["meridian"].bounds == pytest.approx((121.49999, 23.99999, 121.50001, 25.00001))
    assert all(layers[name].area > 0 for name in ("station", "meridian"))
    on_the_edge = read(dsn, "qgis_services").set_index("type").geometry["WCS"]
    assert on_the_edge.bounds == pytest.approx((179.99999, 9.99999, 180.0, 10.00001))


def test_no_box_is_a_null_geometry_and_the_row_stays(dsn):
    assert read(dsn, "qgis_services").set_index("type").geometry["SOS"] is None
    assert read(dsn, "qgis_wms_layers").set_index("name").geometry["nowhere"] is None


def test_the_views_show_the_tables_live(store, dsn):
    added = service("WFS", Dataset(name="roads", bbox=(121.0, 24.0, 121.2, 24.2)))
    added.url = f"{SITE}/wfs2"
    store.frontier.commit_pages("run", [page(f"{SITE}/more", 1, None, [added])], 1)
    try:
        assert list(read(dsn, "qgis_wfs_feature_types")["name"]) == ["parcels", "roads"]
    finally:
        with store.transaction() as cur:
            cur.execute("DELETE FROM resources WHERE url = %s", (added.url,))
    assert list(read(dsn, "qgis_wfs_feature_types")["name"]) == ["parcels"]


def test_a_spatial_filter_on_a_view_uses_the_index(store):
    with store.transaction() as cur:
        cur.execute("SET LOCAL enable_seqscan = off")  # the table is too small for the planner to want one
        cur.execute(
            "EXPLAIN SELECT id FROM qgis_datasets WHERE footprint && ST_MakeEnvelope(121, 24, 122, 25, 4326)"
        )
        plan = "\n".join(line for (line,) in cur.fetchall())
    assert "datasets_footprint_multipolygon" in plan


def test_a_service_s_conformance_and_defects_are_columns_of_its_layers(dsn, store):
    wfs = read(dsn, "qgis_wfs_services").iloc[0]
    assert (wfs.conformance, wfs.defects, wfs.owslib_error) == (
        "readable",
        "; ".join(SLOPPY_WFS),
        "OWSLib: TypeError",
    )
    assert read(dsn, "qgis_wms_services").iloc[0].conformance == "conformant"
    assert read(dsn, "qgis_files")["conformance"].isna().all()  # nothing judges a file's conformance
    exported = {r["type"]: r for r in store.resources.export("run")}
    assert (exported["WFS"]["conformance"], exported["WFS"]["defects"]) == ("readable", SLOPPY_WFS)
    assert (exported["WMS"]["conformance"], exported["WMS"]["defects"], exported["WMS"]["owslib_error"]) == (
        "conformant", [], None,
    )  # fmt: skip
