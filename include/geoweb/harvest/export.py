"""A harvest run exported from the store to a file: JSON lines in the crawl's record schema, or the run's
resources and datasets as tables GIS tools read (GeoPackage, GeoJSON, CSV, GeoParquet).

The tables are the layers of ``Resources.export_layers_chosen``: ``resources`` (one row per service or file, its box
as ``bbox``, its quality as of its last revisit check) and ``datasets`` (one row per layer, feature type, coverage... of those, its ``footprint``),
geometries MultiPolygons in EPSG:4326 (a null geometry where there is no box), keywords and concepts as text
joined with ``; ``. A GeoPackage holds both layers; CSV, GeoJSON and GeoParquet hold one table, ``resources``
unless asked otherwise. The rows stream from the store in batches into GDAL (through pyogrio's Arrow writer)
or a Parquet writer, and every file is written aside and renamed into place when complete.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from geoweb.errors import StoreError
from geoweb.store.resources import EXPORT_LAYERS, Chosen

if TYPE_CHECKING:
    from geoweb.store import Store
    from geoweb.store.resources import Resources

FORMATS = ("jsonl", "csv", "geojson", "gpkg", "parquet")
LAYERS = EXPORT_LAYERS  # resources, datasets
GEOMETRY = {"resources": "bbox", "datasets": "footprint"}  # each layer's geometry column
CRS = "EPSG:4326"

# GDAL's driver and layer creation options for each format it writes
_GDAL = {
    "gpkg": ("GPKG", {}),
    "geojson": ("GeoJSON", {"RFC7946": "YES"}),  # no crs member, lon/lat, 7 decimals (about a centimetre)
    "csv": ("CSV", {"GEOMETRY": "AS_WKT"}),  # the geometry as the first column, WKT
}


@dataclass(frozen=True, slots=True)
class Exported:
    """What ``export_run`` wrote: the run, and the rows written per layer (JSON lines: ``resources``)."""

    run_id: str
    rows: dict[str, int]


def layers_of(fmt: str, layer: str | None = None) -> tuple[str, ...]:
    """The layers a format writes: one asked for, or else both for a GeoPackage, ``resources`` for the
    one-table formats, none for JSON lines (its records hold their datasets)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    if fmt == "jsonl":
        if layer:
            raise ValueError("JSON lines hold each resource with its datasets: no layer to choose")
        return ()
    if layer:
        if layer not in LAYERS:
            raise ValueError(f"unknown layer {layer!r}; known: {', '.join(LAYERS)}")
        return (layer,)
    return LAYERS if fmt == "gpkg" else ("resources",)


def export_run(
    store: Store, run: str, output: Path | None, fmt: str = "jsonl", layer: str | None = None
) -> Exported:
    """Write run ``run`` (a run id, or ``latest``: the run started last) to ``output`` in format ``fmt`` (see
    ``FORMATS``; ``layer`` picks one table, see ``layers_of``). ``output`` None is standard output, for JSON
    lines only. StoreError for an unknown run, and then nothing is written."""
    layers_of(fmt, layer)
    run_id = store.runs.latest() if run == "latest" else run
    if run_id is None:
        raise StoreError("the database holds no run yet")
    if output is None:
        if fmt != "jsonl":
            raise ValueError(f"{fmt} is written to a file, not standard output")
        return Exported(run_id, {"resources": _write_jsonl(store.resources.export(run_id), sys.stdout)})
    store.resources.check_run(run_id)  # before any file is made
    return Exported(run_id, export_chosen(store.resources, Chosen.run(run_id), output, fmt, layer))


def export_chosen(
    resources: Resources, chosen: Chosen, output: Path, fmt: str, layer: str | None = None
) -> dict[str, int]:
    """Write the chosen resources (a run's, a search's) to ``output`` in format ``fmt``, ``layer`` as in
    ``layers_of``; the rows written per layer (JSON lines: ``resources``)."""
    layers = layers_of(fmt, layer)
    if fmt == "jsonl":
        with _written_aside(output) as path, path.open("w", encoding="utf-8") as out:
            return {"resources": _write_jsonl(resources.export_chosen(chosen), out)}
    tables = resources.export_layers_chosen(chosen, layers)
    with _written_aside(output) as path:
        rows = _write_parquet(tables, path) if fmt == "parquet" else _write_gdal(tables, path, fmt)
    return {name: rows[name] for name in layers}


@contextmanager
def _written_aside(target: Path) -> Iterator[Path]:
    """A path to write ``target`` at, in a folder of its own beside it (GDAL may add files next to the one
    it writes): renamed to ``target`` when the block ends, and the folder removed either way, so that a
    reader never sees a partial file and a failure leaves nothing."""
    aside = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        yield aside / target.name
        (aside / target.name).replace(target)
    finally:
        shutil.rmtree(aside, ignore_errors=True)


def _write_jsonl(records: Iterator[dict], out: TextIO) -> int:
    count = 0
    for record in records:
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
        count += 1
    return count


def _write_gdal(tables: Iterator[tuple[str, Iterator[list[dict]]]], path: Path, fmt: str) -> Counter:
    """Each layer streamed into one GDAL dataset; a GeoPackage's later layers are added to the first's file."""
    import pyogrio  # here: pyogrio and pyarrow load in a second, and only exports need them

    driver, options = _GDAL[fmt]
    rows: Counter = Counter()
    for index, (layer, batches) in enumerate(tables):
        # a GeoPackage names its geometry column; GeoJSON has no name, GDAL's CSV reader looks for WKT
        named = {**options, "GEOMETRY_NAME": GEOMETRY[layer]} if driver == "GPKG" else options
        pyogrio.write_arrow(
            _reader(layer, batches, rows), path, layer=layer, driver=driver, geometry_name=GEOMETRY[layer],
            geometry_type="MultiPolygon", crs=CRS, append=index > 0, layer_options=named,
        )  # fmt: skip
    return rows


def _write_parquet(tables: Iterator[tuple[str, Iterator[list[dict]]]], path: Path) -> Counter:
    """One layer as GeoParquet: WKB geometries, the ``geo`` metadata declaring them, one row group per batch."""
    import pyarrow.parquet as pq

    rows: Counter = Counter()
    for layer, batches in tables:  # one: a file holds one table (layers_of)
        reader = _reader(layer, batches, rows)
        with pq.ParquetWriter(path, reader.schema) as writer:
            for batch in reader:
                writer.write_batch(batch)
    return rows


def _reader(layer: str, batches: Iterator[list[dict]], rows: Counter):
    """The layer's batches as an Arrow stream of its schema, counting their rows into ``rows``."""
    import pyarrow as pa

    schema, geometry = _schemas()[layer], GEOMETRY[layer]

    def record_batches():
        for batch in batches:
            rows[layer] += len(batch)
            for row in batch:  # psycopg2 reads WKB as a memoryview, whose buffer from_pylist never frees
                if row[geometry] is not None:
                    row[geometry] = bytes(row[geometry])
            yield pa.RecordBatch.from_pylist(batch, schema=schema)

    return pa.RecordBatchReader.from_batches(schema, record_batches())


@cache
def _schemas() -> dict:
    """The Arrow schema of each layer: the columns of the views ``qgis_resources`` and ``qgis_datasets``,
    and the GeoParquet metadata of its geometry column (GDAL takes the geometry from its own arguments)."""
    import pyarrow as pa
    from pyproj import CRS as ProjCRS

    text, moment = pa.string(), pa.timestamp("us", tz="UTC")
    columns = {
        "resources": [
            ("id", pa.int64()), ("url", text), ("type", text), ("version", text), ("title", text),
            ("abstract", text), ("provider", text), ("keywords", text), ("level", pa.int32()),
            ("source_page", text), ("first_seen", moment), ("last_seen", moment), ("last_status", text),
            ("bbox", pa.binary()), ("conformance", text), ("defects", text), ("owslib_error", text),
            ("checks_30d", pa.int32()), ("availability_30d_percent", pa.float64()),
            ("response_median", pa.float64()), ("inspire_availability", text), ("inspire_getmap", text),
        ],
        "datasets": [
            ("id", pa.int64()), ("resource_id", pa.int64()), ("resource_url", text), ("resource_type", text),
            ("resource_title", text), ("provider", text), ("position", pa.int32()), ("name", text),
            ("title", text), ("keywords", text), ("concepts", text), ("footprint", pa.binary()),
        ],
    }  # fmt: skip
    crs = ProjCRS.from_user_input(CRS).to_json_dict()
    return {
        layer: pa.schema(fields, metadata={"geo": json.dumps(_geoparquet(GEOMETRY[layer], crs))})
        for layer, fields in columns.items()
    }


def _geoparquet(column: str, crs: dict) -> dict:
    """GeoParquet 1.1 metadata of one WKB MultiPolygon column."""
    return {
        "version": "1.1.0",
        "primary_column": column,
        "columns": {column: {"encoding": "WKB", "geometry_types": ["MultiPolygon"], "crs": crs}},
    }
