"""The data the test web serves, generated at build time: vector layers, rasters, KML/KMZ and zipped shapefiles.

Every dataset is small and lies in its own part of the world, so a bounding box tells them apart.
"""

from __future__ import annotations

import subprocess
import tempfile
import zipfile
from pathlib import Path
from xml.sax.saxutils import escape

import geopandas as gpd
import numpy as np
from shapely.geometry import LineString, Point, box

MB = 1024 * 1024
CRS = "EPSG:4326"
# Fixed dates keep each build's bytes the same, so a rebuilt test web is unchanged to a revisit.
DBF_DATE = {"DBF_DATE_LAST_UPDATE": "2024-01-01"}
ZIP_DATE = (2024, 1, 1, 0, 0, 0)


def polygons(lon: float, lat: float, names: list[str], size: float = 1.0) -> gpd.GeoDataFrame:
    """A row of adjacent squares starting at (lon, lat)."""
    shapes = [box(lon + i * size, lat, lon + (i + 1) * size, lat + size) for i in range(len(names))]
    return gpd.GeoDataFrame(
        {"name": names, "area_km2": [round(s.area * 1e4) for s in shapes]}, geometry=shapes, crs=CRS
    )


def points(lon: float, lat: float, names: list[str], step: float = 0.5) -> gpd.GeoDataFrame:
    """Points on a diagonal, each with one observation (value, time) for the SOS."""
    n = len(names)
    return gpd.GeoDataFrame(
        {
            "name": names,
            "value": [round(10 + 1.5 * i, 1) for i in range(n)],
            "obs_time": [f"2024-0{1 + i % 9}-15T12:00:00Z" for i in range(n)],
        },
        geometry=[Point(lon + i * step, lat + i * step) for i in range(n)],
        crs=CRS,
    )


def lines(lon: float, lat: float, names: list[str]) -> gpd.GeoDataFrame:
    """Zig-zag lines stacked northwards."""
    shapes = [
        LineString([(lon, lat + i), (lon + 1, lat + i + 0.5), (lon + 2, lat + i)]) for i in range(len(names))
    ]
    return gpd.GeoDataFrame({"name": names}, geometry=shapes, crs=CRS)


# The vector layers the map servers publish, by layer name.
VECTORS = {
    "provinces": lambda: polygons(5.0, 45.0, ["Alta", "Media", "Bassa"]),
    "lakes": lambda: polygons(32.0, -2.0, ["Victoria North", "Victoria South"], size=0.8),
    "stations": lambda: points(-60.0, -15.0, ["Cuiaba", "Sinop", "Sorriso", "Lucas", "Nobres"]),
    "rivers": lambda: lines(100.0, 12.0, ["Mekong", "Chao Phraya"]),
    "gauges": lambda: points(100.5, 12.5, ["Gauge 1", "Gauge 2", "Gauge 3", "Gauge 4"]),
    "landuse_1990": lambda: polygons(140.0, -30.0, ["Crop", "Pasture", "Forest", "Urban"]),
    "roads": lambda: lines(-100.0, 40.0, ["Route 1", "Route 2", "Route 3"]),
}

# Contents of the planted files, by dataset name.
FILE_CONTENTS = {
    "trails": lambda: lines(15.0, 62.0, ["Kungsleden", "Padjelanta"]),
    "hike": lambda: lines(7.0, 46.0, ["Haute Route"]),
    "parks": lambda: polygons(-116.0, 51.0, ["Banff", "Yoho", "Kootenay"]),
    "old_boundaries": lambda: polygons(-8.0, 38.0, ["Norte", "Centro"]),
    "older_boundaries": lambda: polygons(-6.0, 40.0, ["Leon", "Castilla"]),
    "wetlands": lambda: polygons(89.0, 22.0, ["Sundarbans"], size=0.5),
    "field_survey": lambda: points(-70.0, -50.0, ["Plot A", "Plot B", "Plot C"]),
    "districts": lambda: polygons(139.0, 35.0, ["Chuo", "Minato", "Shinjuku"], size=0.2),
    "coastline": lambda: lines(172.0, -44.0, ["Canterbury Bight"]),
    "restricted_plots": lambda: polygons(-20.0, 64.0, ["Plot 1", "Plot 2"]),
}

# Rasters: name -> (west, south, cell size, rows, cols, kind)
RASTERS = {
    "elevation": (6.0, 45.5, 0.02, 120, 200, "relief"),
    "landcover": (138.0, -32.0, 0.05, 80, 120, "classes"),
}


def write_vectors(dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for name, make in VECTORS.items():
        make().to_file(dest / f"{name}.shp", engine="pyogrio", layer_options=DBF_DATE)


def write_rasters(dest: Path) -> None:
    """GeoTIFFs: numpy writes an ASCII grid, GDAL turns it into a georeferenced GeoTIFF."""
    dest.mkdir(parents=True, exist_ok=True)
    for name, (west, south, cell, rows, cols, kind) in RASTERS.items():
        y, x = np.mgrid[0:rows, 0:cols]
        if kind == "relief":
            grid = 1500 + 1200 * np.sin(x / 17.0) * np.cos(y / 11.0)
        else:
            grid = (x // 30 + 4 * (y // 20)) % 7 + 1
        asc = dest / f"{name}.asc"
        with asc.open("w") as f:
            f.write(f"ncols {cols}\nnrows {rows}\nxllcorner {west}\nyllcorner {south}\ncellsize {cell}\n")
            f.write("NODATA_value -9999\n")
            np.savetxt(f, grid.astype("int16"), fmt="%d")
        tif = dest / f"{name}.tif"
        subprocess.run(
            ["gdal_translate", "-q", "-of", "GTiff", "-a_srs", CRS, "-co", "COMPRESS=DEFLATE", asc, tif],
            check=True,
        )
        asc.unlink()


def write_kml(name: str, path: Path, title: str | None = None, abstract: str | None = None) -> None:
    """The layer as GDAL writes KML (a Folder named after the layer in an unnamed Document); with ``title``,
    the Document named and described as Google Earth saves a document its user named."""
    path.parent.mkdir(parents=True, exist_ok=True)
    FILE_CONTENTS[name]().to_file(path, driver="KML", layer=name, engine="pyogrio")
    if title:
        document = '<Document id="root_doc">'
        named = f"{document}<name>{escape(title)}</name><description>{escape(abstract or '')}</description>"
        path.write_text(path.read_text(encoding="utf-8").replace(document, named, 1), encoding="utf-8")


def add_to_zip(z: zipfile.ZipFile, name: str, content: bytes) -> None:
    """A member dated ZIP_DATE, not by the clock or the file's mtime."""
    member = zipfile.ZipInfo(name, ZIP_DATE)
    member.compress_type = z.compression
    member.external_attr = 0o644 << 16
    z.writestr(member, content)


def write_kmz(name: str, path: Path) -> None:
    """A KMZ as Google Earth writes it: a ZIP whose first member is doc.kml."""
    with tempfile.TemporaryDirectory() as tmp:
        kml = Path(tmp) / "doc.kml"
        write_kml(name, kml)
        path.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            add_to_zip(z, "doc.kml", kml.read_bytes())


def write_shapefile_zip(
    name: str,
    path: Path,
    frame: gpd.GeoDataFrame | None = None,
    *,
    stored: bool = False,
    metadata: tuple[str | None, str | None] = (None, None),
) -> None:
    """The .shp/.shx/.dbf/.prj of one layer, zipped flat as download portals do; with a title in
    ``metadata`` (title, abstract), its FGDC record beside them as ArcMap writes it (``<name>.shp.xml``)."""
    frame = FILE_CONTENTS[name]() if frame is None else frame
    with tempfile.TemporaryDirectory() as tmp:
        frame.to_file(Path(tmp) / f"{name}.shp", engine="pyogrio", layer_options=DBF_DATE)
        title, abstract = metadata
        if title:
            (Path(tmp) / f"{name}.shp.xml").write_text(
                '<?xml version="1.0" encoding="UTF-8"?>\n<metadata><idinfo><citation><citeinfo>'
                f"<title>{escape(title)}</title></citeinfo></citation><descript>"
                f"<abstract>{escape(abstract or '')}</abstract></descript></idinfo></metadata>\n",
                encoding="utf-8",
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        method = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
        with zipfile.ZipFile(path, "w", method) as z:
            for member in sorted(Path(tmp).iterdir()):
                add_to_zip(z, member.name, member.read_bytes())


def write_large_shapefile_zip(name: str, path: Path, min_bytes: int) -> None:
    """A real point shapefile zipped uncompressed to at least ``min_bytes`` (about 46 bytes a point)."""
    count = min_bytes // 45
    rng = np.random.default_rng(5)
    frame = gpd.GeoDataFrame(
        {"parcel_id": np.arange(count, dtype="int32")},
        geometry=gpd.points_from_xy(rng.uniform(-104, -94, count), rng.uniform(33, 41, count)),
        crs=CRS,
    )
    write_shapefile_zip(name, path, frame, stored=True)
    if path.stat().st_size < min_bytes:
        raise RuntimeError(f"{path.name} came out at {path.stat().st_size} bytes, below {min_bytes}")


def write_zip_without_shapefile(path: Path) -> None:
    """A ZIP of a table and a readme: a download that is no shapefile."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        add_to_zip(z, "README.txt", b"Station list of the 2023 field campaign. Coordinates in WGS84.\n")
        add_to_zip(z, "stations.csv", b"name,lon,lat\nCuiaba,-56.1,-15.6\nSinop,-55.5,-11.9\n")
