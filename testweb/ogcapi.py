"""pygeoapi: one OGC API landing page serving Features, Records, Maps, Tiles, Processes, Coverages and EDR.

Its collections come from the data the build already makes (the vector layers, the elevation and land cover
rasters) plus a few metadata records; the map is drawn by the MapServer WMS. No page links pygeoapi's HTML
pages: they print CRS URIs as text and link pygeoapi.io, which a crawl would follow off the loopback web.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from string import Template

from testweb import tiles
from testweb.layout import BLOG, CONF, DATA, LOGS, OGCAPI, SERVER_VENV, TEMPLATES, VAR, origin, site_root
from testweb.mapserver import RASTER_DIR, REGIONS
from testweb.model import Decoy, Planted

URL = f"{origin(OGCAPI)}/"  # the landing page
CONFIG_FILE = CONF / "pygeoapi.yml"
OPENAPI_FILE = CONF / "pygeoapi-openapi.yml"  # wsgi/pygeoapi_app.py finds it next to the configuration
DATA_DIR = DATA / "ogcapi"
# API -> the collections (or processes) that serve it; keep in step with templates/pygeoapi.yml
DATASETS = {
    "OGCAPI-FEATURES": ("lakes", "provinces"),
    "OGCAPI-TILES": ("lakes",),
    "OGCAPI-MAPS": ("provinces",),
    "OGCAPI-RECORDS": ("records",),
    "OGCAPI-COVERAGES": ("elevation",),
    "OGCAPI-EDR": ("landcover",),
    "OGCAPI-PROCESSES": ("hello-world",),
}
DEEP_COLLECTION = f"{origin(OGCAPI)}/collections/lakes"  # linked from a page: leads back to the landing page
DECOYS = (
    Decoy(
        f"{origin(BLOG)}/api/index.json", "an OGC API-like landing page whose /conformance is a 404 HTML page"
    ),
    Decoy(
        f"{origin(BLOG)}/api/status.json", "JSON with links and conformsTo, but no OGC API conformance class"
    ),
)
RECORDS = (
    ("lakes-survey", "Lake survey 2023", "Depth soundings of the great lakes.", ["lakes", "bathymetry"],
     [32.0, -2.0, 33.6, -1.2]),
    ("province-census", "Province census", "Population of the provinces.", ["census", "population"],
     [5.0, 45.0, 8.0, 46.0]),
)  # fmt: skip


def planted() -> list[Planted]:
    return [Planted(URL, DATASETS, "pygeoapi: one landing page, one resource per OGC API it conforms to")]


def write_decoys() -> None:
    """JSON documents on the blog that look like OGC API landing pages and are none."""
    folder = site_root(BLOG) / "api"
    folder.mkdir(parents=True, exist_ok=True)
    no_conformance = {  # its conformance link ends in lighttpd's 404 page
        "title": "Open data API (beta)",
        "links": [
            {"rel": "self", "href": "index.json", "type": "application/json"},
            {"rel": "conformance", "href": "conformance", "type": "application/json"},
            {"rel": "data", "href": "collections", "type": "application/json"},
        ],
    }
    common_only = {
        "title": "Status service",
        "links": [{"rel": "self", "href": "status.json", "type": "application/json"}],
        "conformsTo": [
            "http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/core",
            "https://example.org/conf/x",
        ],
    }
    for decoy, document in zip(DECOYS, (no_conformance, common_only), strict=True):
        (folder / decoy.url.rpartition("/")[2]).write_text(json.dumps(document, indent=2))


def write_data() -> None:
    import geopandas as gpd  # only the build needs it

    from testweb import data

    shutil.rmtree(DATA_DIR, ignore_errors=True)
    DATA_DIR.mkdir(parents=True)
    for name in ("lakes", "provinces"):
        frame: gpd.GeoDataFrame = data.VECTORS[name]()
        frame.to_file(DATA_DIR / f"{name}.geojson", driver="GeoJSON", engine="pyogrio")
    # vector tiles as tippecanoe lays them out (z/x/y.pbf and metadata.json), written by GDAL
    zooms = ("-dsco", "MINZOOM=0", "-dsco", "MAXZOOM=4", "-dsco", "COMPRESS=NO")
    tiles, lakes = DATA_DIR / "lakes-tiles", DATA_DIR / "lakes.geojson"
    subprocess.run(["ogr2ogr", "-q", "-f", "MVT", tiles, lakes, "-nln", "lakes", *zooms], check=True)
    # the EDR grid: netCDF 3 (xarray reads it through scipy), written by GDAL from an ASCII grid without its
    # .prj, so that it holds the land cover variable alone (pygeoapi's EDR queries read every variable, and
    # GDAL's CRS variable breaks them)
    with tempfile.TemporaryDirectory() as tmp:
        grid = Path(tmp) / "landcover.asc"
        subprocess.run(
            ["gdal_translate", "-q", "-of", "AAIGrid", RASTER_DIR / "landcover.tif", grid], check=True
        )
        grid.with_suffix(".prj").unlink()
        netcdf = ("-of", "netCDF", "-co", "FORMAT=NC", grid, DATA_DIR / "landcover.nc")
        subprocess.run(["gdal_translate", "-q", *netcdf], check=True)
    records = {
        str(i): {
            "id": identifier,
            "externalId": identifier,
            "type": "Feature",
            "geometry": {
                "type": "Polygon",
                "coordinates": [[[w, s], [e, s], [e, n], [w, n], [w, s]]],
            },
            "properties": {
                "title": title,
                "description": abstract,
                "keywords": keywords,
                "type": "dataset",
                "created": "2024-01-15T00:00:00Z",
                "updated": "2024-01-15T00:00:00Z",
            },
            "links": [],
        }
        for i, (identifier, title, abstract, keywords, (w, s, e, n)) in enumerate(RECORDS, start=1)
    }
    (DATA_DIR / "records.json").write_text(json.dumps({"_default": records}))


def write_config() -> None:
    write_data()
    write_decoys()
    jobs = VAR / "pygeoapi"
    jobs.mkdir(parents=True, exist_ok=True)
    CONFIG_FILE.write_text(
        Template((TEMPLATES / "pygeoapi.yml").read_text()).substitute(
            port=OGCAPI,
            url=URL.rstrip("/"),
            basemap=f"{tiles.TMS_URL}regions_tiles/webmercator/{{z}}/{{x}}/{{y}}.png",
            jobs_db=jobs / "jobs.db",
            jobs_dir=jobs,
            log_file=LOGS / "pygeoapi.log",
            lakes_geojson=DATA_DIR / "lakes.geojson",
            lakes_tiles=DATA_DIR / "lakes-tiles",
            provinces_geojson=DATA_DIR / "provinces.geojson",
            wms_url=REGIONS.url,
            records_db=DATA_DIR / "records.json",
            elevation_tif=RASTER_DIR / "elevation.tif",
            landcover_nc=DATA_DIR / "landcover.nc",
        )
    )
    pygeoapi = SERVER_VENV / "bin" / "pygeoapi"
    done = subprocess.run(
        [pygeoapi, "openapi", "generate", CONFIG_FILE, "--output-file", OPENAPI_FILE],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"pygeoapi openapi generate failed:\n{done.stderr[-2000:]}")
