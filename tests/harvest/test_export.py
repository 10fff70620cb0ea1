"""Exports of a run written from a loaded store and read back by GDAL (pyogrio) and geopandas."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator

import geopandas
import numpy
import pyarrow.parquet
import pyogrio
import pytest
import shapely

from geoweb.harvest.export import FORMATS, GEOMETRY, LAYERS, export_run, layers_of
from geoweb.models import Dataset
from geoweb.store import Store, StoreError
from geoweb.store.resources import EXPORT_LAYERS
from tests.geohub.data import checked
from tests.store.pages import kml, page, wms
from tests.store.queries import rows

HOSTILE = "Rivers, \"lakes\" and\nreservoirs; 河川 — Ünïcode, 'quoted'\n\nand a tab\there"
LONG = " ".join(["Flüsse,"] * 2_400)  # an abstract near the longest the store keeps
# The WMS's revisits: two capabilities answered in 0.2 and 0.6 seconds, one failed; too few for INSPIRE
WMS_CHECKS = [
    ("unchanged", "GetCapabilities", 0.2),
    ("unchanged", "GetCapabilities", 0.6),
    ("failed", "GetCapabilities", None),
]
WMS_QUALITY = {
    "checks_30d": 3, "availability_30d_percent": 66.67, "response_median": 0.4,
    "inspire_availability": "not enough checks", "inspire_getmap": "not enough checks",
}  # fmt: skip
# their types as GDAL reads the fields (and pandas names Arrow's): integer, real, text
QUALITY_TYPES = {
    "checks_30d": "int32", "availability_30d_percent": "float64", "response_median": "float64",
    "inspire_availability": "object", "inspire_getmap": "object",
}  # fmt: skip


def loaded_resources(site: str) -> list:
    """A WMS with hostile texts and every kind of box; a KML without a box; a deeper WFS."""
    service = wms(site, source=f"{site}/", layers=2)
    service.title, service.abstract, service.provider = HOSTILE, LONG, 'Água, "Ltd"'
    service.keywords = ["hydrology", "a, b", 'say "x"']
    service.datasets += [
        Dataset(
            name="pacific", title=HOSTILE, bbox=(170.0, -20.0, -170.0, -10.0), concepts=["river", "lake"]
        ),
        Dataset(name="station", bbox=(121.5, 25.0, 121.5, 25.0)),
        Dataset(name="nowhere"),
    ]
    boxless = kml(site, source=f"{site}/")
    boxless.bbox = None
    deeper = wms(site, level=2, source=f"{site}/maps", layers=1)
    deeper.url, deeper.type = f"{site}/wfs", "WFS"
    return [service, boxless, deeper]


@pytest.fixture(scope="module")
def loaded(postgis_database) -> Iterator[tuple[str, str]]:
    """The DSN of a database of this module's own (saving checks puts every resource on the revisit schedule)
    and a run whose WMS has been checked."""
    site, run_id = f"http://{uuid.uuid4().hex[:12]}.example", f"test-{uuid.uuid4().hex[:12]}"
    resources = loaded_resources(site)
    with postgis_database() as dsn:
        with Store(dsn) as store:
            store.migrate()
            store.runs.begin(run_id, {})
            store.frontier.commit_pages(run_id, [page(f"{site}/maps", 1, f"{site}/", resources[:2])], 4)
            store.frontier.commit_pages(run_id, [page(f"{site}/data", 2, f"{site}/maps", resources[2:])], 4)
            checked(store, resources[0], WMS_CHECKS)
        yield dsn, run_id


@pytest.fixture
def store(loaded, monkeypatch) -> Iterator[Store]:
    monkeypatch.setattr("geoweb.store.resources.EXPORT_BATCH", 2)  # several batches per layer
    with Store(loaded[0]) as opened:
        yield opened


@pytest.fixture
def run_id(loaded) -> str:
    return loaded[1]


def stored_footprints(store: Store, run_id: str) -> dict[int, shapely.Geometry | None]:
    """What the store holds for the run's datasets, by dataset id."""
    found = rows(
        store,
        "SELECT d.id, ST_AsBinary(d.footprint) FROM datasets d "
        "JOIN run_resources rr ON rr.resource_id = d.resource_id WHERE rr.run_id = %s",
        run_id,
    )
    return {id_: None if wkb is None else shapely.from_wkb(bytes(wkb)) for id_, wkb in found}


def view_columns(store: Store, view: str) -> list[str]:
    found = rows(
        store,
        "SELECT column_name FROM information_schema.columns WHERE table_name = %s ORDER BY ordinal_position",
        view,
    )
    return [name for (name,) in found]


def assert_resources(frame: geopandas.GeoDataFrame) -> None:
    assert len(frame) == 3
    assert list(frame["level"].astype(int)) == [1, 1, 2]
    assert set(frame.geometry.dropna().geom_type) == {"MultiPolygon"}
    by_type = frame.set_index("type")
    assert by_type.geometry["KML"] is None  # no box, still a row
    assert by_type.loc["WMS", "title"] == HOSTILE
    assert by_type.loc["WMS", "abstract"] == LONG
    assert by_type.loc["WMS", "provider"] == 'Água, "Ltd"'
    assert by_type.loc["WMS", "keywords"] == 'hydrology; a, b; say "x"'
    assert by_type.geometry["WMS"].equals(shapely.MultiPolygon([shapely.box(120.0, 22.0, 122.1, 25.0)]))
    assert by_type.loc["WMS", list(WMS_QUALITY)].to_dict() == pytest.approx(WMS_QUALITY)
    assert by_type.loc[["KML", "WFS"], list(WMS_QUALITY)].isna().all(axis=None)  # never checked


def gdal_types(path, **options: str) -> dict[str, str]:
    """The quality fields' types as GDAL reads them, ``options`` those of its driver."""
    info = pyogrio.read_info(path, **options)
    return {
        name: dtype for name, dtype in zip(info["fields"], info["dtypes"], strict=True) if name in WMS_QUALITY
    }


def parquet_types(path) -> dict[str, str]:
    """The quality columns' types in a Parquet file's schema, named as pandas names them."""
    schema = pyarrow.parquet.read_schema(path)
    return {name: numpy.dtype(schema.field(name).type.to_pandas_dtype()).name for name in WMS_QUALITY}


def assert_datasets(frame: geopandas.GeoDataFrame, stored: dict) -> None:
    assert len(frame) == 8
    assert set(frame.geometry.dropna().geom_type) == {"MultiPolygon"}
    by_name = frame.set_index("name")
    assert by_name.loc["pacific", "title"] == HOSTILE
    assert by_name.loc["pacific", "concepts"] == "river; lake"
    assert len(by_name.geometry["pacific"].geoms) == 2  # across the antimeridian
    for id_, geometry in zip(frame["id"].astype(int), frame.geometry, strict=True):
        held = stored[id_]
        if held is None:
            assert geometry is None  # no box, still a row
        elif held.area:
            assert geometry.equals(held)
        else:  # a point's box, as a tiny polygon
            assert geometry.area > 0 and geometry.contains(held)


def test_layers_are_the_store_layers_and_formats_choose_them():
    assert LAYERS == EXPORT_LAYERS
    assert layers_of("gpkg") == ("resources", "datasets")
    assert layers_of("csv") == layers_of("geojson") == layers_of("parquet") == ("resources",)
    assert layers_of("parquet", "datasets") == ("datasets",)
    assert layers_of("jsonl") == ()
    with pytest.raises(ValueError, match="no layer to choose"):
        layers_of("jsonl", "datasets")
    with pytest.raises(ValueError, match="unknown format 'shp'"):
        layers_of("shp")


def test_a_geopackage_holds_both_layers(store, run_id, tmp_path):
    output = tmp_path / "run.gpkg"
    exported = export_run(store, run_id, output, "gpkg")
    assert exported.rows == {"resources": 3, "datasets": 8}
    assert [list(row) for row in pyogrio.list_layers(output)] == [
        ["resources", "MultiPolygon"], ["datasets", "MultiPolygon"],
    ]  # fmt: skip
    for layer in LAYERS:
        info = pyogrio.read_info(output, layer=layer)
        assert info["crs"] == "EPSG:4326"
        columns = view_columns(store, f"qgis_{layer}")
        geometry = {"resources": "bbox", "datasets": "footprint"}[layer]
        assert (list(info["fields"]), info["geometry_name"]) == (
            [c for c in columns if c != geometry],
            geometry,
        )
    assert gdal_types(output, layer="resources") == QUALITY_TYPES
    resources = geopandas.read_file(output, layer="resources")
    assert resources.crs.to_epsg() == 4326
    assert_resources(resources)
    assert resources["first_seen"].dt.tz is not None
    assert_datasets(geopandas.read_file(output, layer="datasets"), stored_footprints(store, run_id))
    assert list(tmp_path.iterdir()) == [output]


def test_csv_holds_the_resources_with_their_box_as_wkt(store, run_id, tmp_path):
    output = tmp_path / "run.csv"
    assert export_run(store, run_id, output, "csv").rows == {"resources": 3}
    info = pyogrio.read_info(output)
    assert (info["driver"], info["fields"][0]) == ("CSV", "WKT")
    # GDAL's CSV driver takes the WKT column as the geometry; CSV has no types, GDAL tells them from the values
    typed = {"AUTODETECT_TYPE": "YES", "EMPTY_STRING_AS_NULL": "YES"}
    assert gdal_types(output, **typed) == QUALITY_TYPES
    assert_resources(geopandas.read_file(output, **typed).set_crs(4326))
    with output.open(encoding="utf-8", newline="") as text:
        assert HOSTILE in [row["title"] for row in csv.DictReader(text)]  # exactly, quotes and newlines too


def test_csv_of_the_datasets(store, run_id, tmp_path):
    output = tmp_path / "datasets.csv"
    assert export_run(store, run_id, output, "csv", "datasets").rows == {"datasets": 8}
    assert_datasets(geopandas.read_file(output), stored_footprints(store, run_id))


@pytest.mark.parametrize("layer", LAYERS)
def test_geojson_is_one_feature_collection_of_a_layer(store, run_id, tmp_path, layer):
    output = tmp_path / f"{layer}.geojson"
    export_run(store, run_id, output, "geojson", layer)
    collection = json.loads(output.read_text(encoding="utf-8"))
    assert collection["type"] == "FeatureCollection" and "crs" not in collection  # RFC 7946: WGS84 lon/lat
    frame = geopandas.read_file(output)
    assert frame.crs.to_epsg() == 4326
    if layer == "resources":
        assert gdal_types(output) == QUALITY_TYPES
        assert_resources(frame)
    else:
        assert_datasets(frame, stored_footprints(store, run_id))


@pytest.mark.parametrize("layer", LAYERS)
def test_geoparquet_of_a_layer(store, run_id, tmp_path, layer):
    output = tmp_path / f"{layer}.parquet"
    export_run(store, run_id, output, "parquet", layer)
    frame = geopandas.read_parquet(output)
    assert frame.geometry.name == GEOMETRY[layer]
    assert frame.crs.to_epsg() == 4326
    assert list(frame.columns) == view_columns(store, f"qgis_{layer}")
    if layer == "resources":
        assert parquet_types(output) == QUALITY_TYPES
        assert_resources(frame)
    else:
        assert_datasets(frame, stored_footprints(store, run_id))


def test_json_lines_are_the_crawl_records(store, run_id, tmp_path):
    output = tmp_path / "run.jsonl"
    assert export_run(store, run_id, output, "jsonl").rows == {"resources": 3}
    records = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert records == json.loads(json.dumps(list(store.resources.export(run_id)), ensure_ascii=False))
    assert not set(WMS_QUALITY) & set(records[0])  # a crawl's records: the figures are the store's


def test_a_second_export_replaces_the_file(store, run_id, tmp_path):
    output = tmp_path / "run.gpkg"
    export_run(store, run_id, output, "gpkg")
    export_run(store, run_id, output, "gpkg")
    assert len(geopandas.read_file(output, layer="datasets")) == 8


def test_an_empty_run_writes_empty_layers(store, tmp_path):
    empty = f"test-{uuid.uuid4().hex[:12]}"
    store.runs.begin(empty, {})
    output = tmp_path / "empty.gpkg"
    assert export_run(store, empty, output, "gpkg").rows == {"resources": 0, "datasets": 0}
    assert [list(row) for row in pyogrio.list_layers(output)] == [
        ["resources", "MultiPolygon"], ["datasets", "MultiPolygon"],
    ]  # fmt: skip


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_unknown_run_is_an_error_and_writes_nothing(store, tmp_path, fmt):
    with pytest.raises(StoreError, match="unknown run 'no-such-run'"):
        export_run(store, "no-such-run", tmp_path / f"out.{fmt}", fmt)
    assert list(tmp_path.iterdir()) == []


def geoweb(*args: str, db: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "GEOWEB_DB": db}
    return subprocess.run(
        [sys.executable, "-m", "geoweb.cli", *args], env=env, capture_output=True, text=True, timeout=120
    )


def test_geoweb_export_writes_a_geopackage(loaded, tmp_path):
    dsn, run_id = loaded
    output = tmp_path / "run.gpkg"
    done = geoweb("export", "--run", run_id, "--format", "gpkg", "--output", str(output), db=dsn)
    assert done.returncode == 0, done.stderr
    assert f"exported 3 resources, 8 datasets of run {run_id} to {output}" in done.stderr
    assert len(geopandas.read_file(output, layer="resources")) == 3


@pytest.mark.parametrize(
    "args, message",
    [
        (["--format", "gpkg"], "--format gpkg is written to a file"),
        (["--layer", "datasets", "--output", "{tmp}/x.jsonl"], "--layer is for the table formats"),
        (["--format", "shp", "--output", "{tmp}/x.shp"], "invalid choice: 'shp'"),
    ],
)
def test_geoweb_export_refuses_arguments_that_do_not_go_together(loaded, tmp_path, args, message):
    done = geoweb("export", "--run", "latest", *(a.format(tmp=tmp_path) for a in args), db=loaded[0])
    assert done.returncode == 2
    assert message in done.stderr
    assert list(tmp_path.iterdir()) == []
