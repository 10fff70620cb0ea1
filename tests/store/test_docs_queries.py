"""The queries of docs/postgis.md, run against a database loaded with two known runs."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from geoweb.errors import HTTPStatusError
from geoweb.models import Dataset, LevelStats, Resource, RunStatus
from geoweb.store import Store
from tests.store.pages import page

DOC = Path(__file__).resolve().parents[2] / "docs" / "postgis.md"
SITE = "http://geoportal.example"
WMS = f"{SITE}/wms"


def code_blocks(language: str) -> dict[str, str]:
    """The doc's ``language`` code blocks by the heading above them."""
    text = DOC.read_text(encoding="utf-8")
    pattern = re.compile(r"^#+ ([^\n]+)$|^```(\w*)\n(.*?)^```$", re.M | re.S)
    blocks, heading = {}, None
    for match in pattern.finditer(text):
        if match[1]:
            heading = match[1]
        elif match[2] == language:
            blocks[heading] = match[3]
    return blocks


def resource(url: str, type_: str, title: str, datasets: list[Dataset], keywords=()) -> Resource:
    return Resource(url=url, type=type_, title=title, keywords=list(keywords), datasets=datasets)


def layer(name: str, title: str, bbox) -> Dataset:
    return Dataset(name=name, title=title, bbox=bbox)


@pytest.fixture(scope="module")
def loaded_dsn(postgis_database) -> Iterator[str]:
    with postgis_database() as dsn:
        load(dsn)
        yield dsn


@pytest.fixture
def loaded(loaded_dsn) -> Iterator[Store]:
    with Store(loaded_dsn) as store:
        yield store


def load(dsn: str) -> None:
    """run-1: a WMS, a WFS and a WCS; run-2 (the latest): the WMS, a WMTS, then an SOS and a KML a level deeper."""
    rivers_wms = resource(WMS, "WMS", "Rivers and lakes of Taiwan", [
        layer("rivers", "Rivers", (121.0, 24.8, 121.8, 25.3)),
        layer("reservoirs", "Reservoirs", (120.2, 22.5, 120.8, 23.2)),
        layer("alps", "Alpine lakes", (6.0, 45.0, 10.0, 47.0)),
    ])  # fmt: skip
    tiles = resource(
        f"{SITE}/wmts",
        "WMTS",
        "Base maps",
        [layer("rivers_tiles", "Rivers tiles", (121.0, 24.8, 121.5, 25.0))],
    )
    gauges = resource(f"{SITE}/sos", "SOS", "River gauge stations", [
        layer("river_gauges", "River gauges", (120.5, 22.0, 121.9, 25.2)),
    ], keywords=["hydrology"])  # fmt: skip
    trails = resource(
        f"{SITE}/trails.kml", "KML", "Hiking trails", [layer("trails", None, (121.5, 25.0, 121.6, 25.1))]
    )
    features = resource(
        f"{SITE}/wfs", "WFS", "Parcels", [layer("parcels", "Parcels", (121.0, 24.0, 121.2, 24.2))]
    )
    elevation = resource(f"{SITE}/wcs", "WCS", "Elevation", [
        layer("dem", "Digital elevation model", (119.3, 21.8, 122.1, 25.4)),
    ])  # fmt: skip
    elevation.bbox = (119.3, 21.8, 122.1, 25.4)
    with Store(dsn) as store:
        store.migrate()
        store.runs.begin("run-1", {})
        store.frontier.commit_pages(
            "run-1", [page(f"{SITE}/", 1, None, [rivers_wms, features, elevation])], 2
        )
        store.runs.end("run-1", RunStatus.SUCCESS, {})
        store.runs.begin("run-2", {})
        store.frontier.add_urls("run-2", 0, [(f"{SITE}/", None, "rivers")], 2)
        store.frontier.commit_pages(
            "run-2", [page(f"{SITE}/", 0, None, links=[f"{SITE}/maps", f"{SITE}/gone"])], 2
        )
        store.frontier.commit_pages("run-2", [
            page(f"{SITE}/maps", 1, f"{SITE}/", [rivers_wms, tiles], links=[f"{SITE}/data"]),
            page(f"{SITE}/gone", 1, f"{SITE}/", error=HTTPStatusError(404, url=f"{SITE}/gone")),
        ], 2)  # fmt: skip
        store.frontier.commit_pages("run-2", [page(f"{SITE}/data", 2, f"{SITE}/maps", [gauges, trails])], 2)
        store.runs.save_level_stats("run-2", 0, 0, LevelStats(0, urls=1, seconds=0.5))
        store.runs.save_level_stats(
            "run-2", 1, 0, LevelStats(1, urls=3, resources=1, failures=1, seconds=1.0)
        )
        store.runs.save_level_stats("run-2", 1, 1, LevelStats(1, urls=2, resources=1, seconds=2.0))


def query(store: Store, heading: str) -> list[tuple]:
    with store.conn, store.conn.cursor() as cur:
        cur.execute(code_blocks("sql")[heading])
        return cur.fetchall()


def test_every_sql_query_of_the_doc_is_tested():
    assert len(code_blocks("sql")) == 14


def test_wms_layers_in_a_box(loaded):
    assert query(loaded, "WMS layers intersecting a bounding box") == [(WMS, "rivers", "Rivers")]


def test_services_per_type_per_run(loaded):
    assert query(loaded, "Services per type per run") == [
        ("run-1", "WCS", 1), ("run-1", "WFS", 1), ("run-1", "WMS", 1),
        ("run-2", "KML", 1), ("run-2", "SOS", 1), ("run-2", "WMS", 1), ("run-2", "WMTS", 1),
    ]  # fmt: skip


def test_datasets_per_level_of_the_latest_run(loaded):
    assert query(loaded, "Datasets found at each level of the latest run") == [(1, 2, 4), (2, 2, 2)]


def test_full_text_search(loaded):
    found = query(loaded, "Full-text search of services and files")
    assert [(t, url, title) for t, url, title, _ in found] == [("SOS", f"{SITE}/sos", "River gauge stations")]


def test_layers_about_a_subject_in_a_box(loaded):
    assert sorted((t, name) for t, _, name, _ in query(loaded, "Layers about a subject inside a box")) == [
        ("SOS", "river_gauges"), ("WMS", "rivers"), ("WMTS", "rivers_tiles"),
    ]  # fmt: skip


def test_per_level_table(loaded):
    rows = query(loaded, "The per-level table of a run")
    assert [(lv, u, r, f, float(ratio), s) for lv, u, r, f, ratio, s in rows] == [
        (0, 1, 0, 0, 0.0, 0.5),
        (1, 2, 2, 1, 1.0, 2.0),
        (2, 1, 2, 0, 2.0, 0.0),
    ]


def test_frontier_state(loaded):
    assert query(loaded, "Where the latest run stands, and why URLs failed") == [
        (0, "fetched", None, 1), (1, "fetched", None, 1), (1, "error", "http_status", 1), (2, "fetched", None, 1),
    ]  # fmt: skip  # statuses sort in their order of the crawl, not alphabetically


def test_the_geopandas_example(loaded_dsn, monkeypatch):
    monkeypatch.setenv("GEOWEB_DB", loaded_dsn)
    namespace: dict = {}
    exec(code_blocks("python")["In Python with geopandas"], namespace)
    layers = namespace["layers"]
    assert sorted(layers["name"]) == ["alps", "reservoirs", "rivers"]
    assert layers.crs.to_epsg() == 4326
    assert set(layers.geometry.geom_type) == {"MultiPolygon"}


def test_resources_seen_last_week(loaded):
    assert query(loaded, "Every resource seen in the last week, per type") == [
        ("KML", 1), ("SOS", 1), ("WCS", 1), ("WFS", 1), ("WMS", 1), ("WMTS", 1),
    ]  # fmt: skip


def test_services_in_a_box(loaded):
    assert query(loaded, "Services whose box meets a box") == [("WCS", f"{SITE}/wcs", "Elevation")]


def test_files_per_type(loaded):
    assert query(loaded, "Files per type, and how many have a box") == [("KML", 1, 0)]


def test_datasets_in_a_box_per_type(loaded):
    assert query(loaded, "Datasets in a box, per type of resource") == [
        ("KML", 1), ("SOS", 1), ("WCS", 1), ("WFS", 1), ("WMS", 2), ("WMTS", 1),
    ]  # fmt: skip


def test_wms_layers_in_southern_taiwan(loaded):
    assert query(loaded, "WMS layers in southern Taiwan") == [(WMS, "reservoirs", "Reservoirs")]


def test_feature_types_by_area(loaded):
    ((url, name, km2),) = query(loaded, "WFS feature types by the area they cover")
    assert (url, name) == (f"{SITE}/wfs", "parcels")
    assert 400 < km2 < 500  # 0.2 by 0.2 degrees at 24 degrees north


def test_coverages_over_a_point(loaded):
    assert query(loaded, "WCS coverages over a point") == [(f"{SITE}/wcs", "dem", "Digital elevation model")]
