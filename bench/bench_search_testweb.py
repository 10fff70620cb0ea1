"""GeoHub search judged on the test web: the 47 resources its real servers (MapServer, MapProxy, PyWPS, pycsw,
pygeoapi, the STAC server, the files and the ArcGIS stand-in) describe, harvested by the crawl DAG's steps,
and 47 queries judged by hand from what each resource is: its data, place and publisher as the test web's
sources define them (testweb/), never from what the search returns.

    .venv/bin/python -m bench.bench_search_testweb   # about 25 s; results in var/bench/results-search-testweb.json

The local PostgreSQL and the test web are started when they are down and stopped at the end if they were.
Each resource of the test web's manifest is loaded at level 0 into a scratch database of the store's schema
(those only the catalogue links too: the search is judged, not the crawl; robots.txt keeps one file out),
then each query is searched as the API searches it and scored with recall@20 and nDCG@10
(bench/search_relevance.py).
"""

from __future__ import annotations

import json
import sys
from contextlib import closing
from dataclasses import dataclass

import psycopg2

from bench import search_relevance
from geoweb.geohub import SearchDatabase
from geoweb.store import Store
from stack import postgres as stack_postgres
from stack.layout import REPO
from tests.catalogue.conftest import crawl as load_at_level_zero
from tests.integration.conftest import run_testweb
from testweb.layout import MANIFEST

SCRATCH = "geoweb_bench_search_testweb"
RESULTS = REPO / "var" / "bench" / "results-search-testweb.json"

# The test web's resources by a short name: (type, a part of its URL that only it has)
RESOURCES = {
    "regions wms": ("WMS", "map=regions"), "regions wfs": ("WFS", "map=regions"),
    "regions wcs": ("WCS", "map=regions"), "regions sos": ("SOS", "map=regions"),
    "rivers wms": ("WMS", "/ows/rivers"), "rivers wfs": ("WFS", "/ows/rivers"),
    "archive wms": ("WMS", "/ows/archive"), "archive wfs": ("WFS", "/ows/archive"),
    "landcover wms": ("WMS", "map=landcover"), "landcover wcs": ("WCS", "map=landcover"),
    "roads wms": ("WMS", "/ows/echo"),
    "tiles wmts": ("WMTS", "/service"), "tiles wms": ("WMS", "/service"),
    "tiles rest": ("WMTS", "WMTSCapabilities.xml"),
    "wps": ("WPS", "/wps"), "csw": ("CSW", "/csw"),
    "trails": ("KML", "trails.kml"), "districts": ("SHAPEFILE", "districts.zip"), "parks": ("KML", "id=5"),
    "parcels": ("SHAPEFILE", "parcels-large.zip"), "coastline": ("SHAPEFILE", "coastline.zip"),
    "wetlands": ("KML", "wetlands.kml"), "restricted plots": ("SHAPEFILE", "restricted-plots.zip"),
    "hike": ("KML", "hike.kmz"), "old boundaries": ("KML", "/old-boundaries.kml"),
    "older boundaries": ("KML", "/older-boundaries.kml"),
    "stac catalog": ("STAC", "catalog.json"), "stac api": ("STAC-API", ":18042/"),
    "stac features": ("OGCAPI-FEATURES", ":18042/"),
    "elevation tif": ("GEOTIFF", "elevation-north.tif"), "landcover tif": ("GEOTIFF", "landcover-2024.tif"),
    "elevation footprints": ("GEOJSON", "footprints.geojson"), "landcover scenes": ("GEOJSON", "scenes.json"),
    "api features": ("OGCAPI-FEATURES", ":18040/"), "api tiles": ("OGCAPI-TILES", ":18040/"),
    "api maps": ("OGCAPI-MAPS", ":18040/"), "api records": ("OGCAPI-RECORDS", ":18040/"),
    "api coverages": ("OGCAPI-COVERAGES", ":18040/"), "api edr": ("OGCAPI-EDR", ":18040/"),
    "api processes": ("OGCAPI-PROCESSES", ":18040/"),
    "arcgis directory": ("ARCGIS-DIRECTORY", "/arcgis/rest/services"),
    "hydro map": ("ARCGIS-MAPSERVER", "Hydro/Rivers/MapServer"),
    "hydro features": ("ARCGIS-FEATURESERVER", "Hydro/Rivers/FeatureServer"),
    "charlotte imagery": ("ARCGIS-IMAGESERVER", "CharlotteLAS/ImageServer"),
    "planning directory": ("ARCGIS-DIRECTORY", "/server/rest/services"),
    "landuse map": ("ARCGIS-MAPSERVER", "Planning/Landuse/MapServer"),
    "parks features": ("ARCGIS-FEATURESERVER", "Planning/Parks/FeatureServer"),
}  # fmt: skip

# Groups the judgments share
STAC = ("stac catalog", "stac api", "stac features")
RIVER = ("rivers wms", "rivers wfs", "tiles wmts", "tiles wms", "tiles rest", "hydro map", "hydro features",
         "arcgis directory")  # fmt: skip
LAKE = ("regions wms", "regions wfs", "api features", "api tiles", "tiles wmts", "tiles wms", "tiles rest")
ELEVATION = ("regions wms", "regions wcs", "api coverages", *STAC, "elevation tif", "elevation footprints")
LAND_COVER = ("landcover wms", "landcover wcs", "api edr", *STAC, "landcover tif", "landcover scenes", "csw")
LAND_USE = ("archive wms", "archive wfs", "landuse map", "planning directory", "csw")
PROVINCES = (
    "regions wms",
    "regions wfs",
    "api features",
    "api maps",
    "tiles wmts",
    "tiles wms",
    "tiles rest",
)
GAUGES = ("rivers wms", "rivers wfs", "tiles wmts", "tiles wms", "tiles rest", "hydro map", "hydro features")
OGC_API = (
    "api features",
    "api tiles",
    "api maps",
    "api records",
    "api coverages",
    "api edr",
    "api processes",
)
# the provider of MapServer's mapfiles and of MapProxy's, PyWPS's, pycsw's and pygeoapi's configurations
AGENCY = ("regions wms", "regions wfs", "regions wcs", "regions sos", "rivers wms", "rivers wfs", "archive wms",
          "archive wfs", "landcover wms", "landcover wcs", "roads wms", "tiles wmts", "tiles wms", "tiles rest",
          "wps", "csw", *OGC_API)  # fmt: skip

# (kind, query, the resources relevant to it)
QUERIES = [
    ("theme", "water", (*RIVER, *LAKE, "wetlands", "coastline")),
    ("theme", "river", RIVER),
    ("theme", "lake", LAKE),
    ("theme", "wetland", ("wetlands", "csw")),
    ("theme", "coastline", ("coastline",)),
    ("theme", "elevation", ELEVATION),
    ("theme", "DEM", ELEVATION),
    ("theme", "land cover", LAND_COVER),
    ("theme", "land use", LAND_USE),
    ("theme", "roads", ("roads wms",)),
    ("theme", "transport", ("roads wms", "trails", "hike")),
    ("theme", "parks", ("parks", "parks features", "planning directory")),
    ("theme", "playground", ("parks features",)),
    ("theme", "administrative boundaries", (*PROVINCES, "districts", "old boundaries", "older boundaries")),
    ("theme", "provinces", PROVINCES),
    ("theme", "weather stations", ("regions wms", "regions wfs", "regions sos")),
    ("theme", "gauges", GAUGES),
    ("theme", "catchment", ("hydro map",)),
    ("theme", "hiking trail", ("trails", "hike")),
    ("theme", "parcels", ("parcels", "restricted plots")),
    ("theme", "zoning", ("landuse map",)),
    ("theme", "buildings", ("landuse map",)),
    ("theme", "aerial photography", (*STAC, "charlotte imagery")),
    ("theme", "imagery", (*STAC, "charlotte imagery")),
    ("theme", "buffer", ("wps",)),
    ("theme", "geoprocessing", ("wps", "api processes")),
    ("theme", "metadata catalogue", ("csw", "api records")),
    ("place", "Lapland", ("trails",)),
    ("place", "Tokyo", ("districts",)),
    ("place", "Shinjuku", ("districts",)),
    ("place", "Alps", ("api coverages", *STAC, "elevation tif", "elevation footprints")),
    ("place", "Andes", (*STAC, "landcover tif", "landcover scenes")),
    ("place", "South Australia", ("landcover wms", "landcover wcs", "api edr", "csw")),
    ("place", "Sundarbans", ("wetlands", "csw")),
    ("place", "South-East Asia", ("rivers wms", "rivers wfs")),
    ("title", "Rivers and gauges", ("rivers wms", "rivers wfs")),
    ("title", "Hiking trails of Lapland", ("trails",)),
    ("title", "Land use archive", ("archive wms", "archive wfs")),
    ("title", "Open geodata API", OGC_API),
    ("title", "historic", ("archive wms", "archive wfs", *STAC)),
    ("title", "Kungsleden", ("trails",)),
    ("provider", "GeoWeb Test Agency", AGENCY),
    ("provider", "Regional Earth Observation", ("stac api", "stac features")),
    ("prefix", "elev", ELEVATION),
    ("prefix", "wetl", ("wetlands", "csw")),
    ("prefix", "riv", RIVER),
    ("prefix", "tok", ("districts",)),
]


@dataclass(frozen=True, slots=True)
class Judged:
    kind: str
    text: str
    relevant: tuple[str, ...]  # names of RESOURCES


def judged_queries() -> list[Judged]:
    return [Judged(kind, text, tuple(sorted(set(names)))) for kind, text, names in QUERIES]


def resolve(manifest: dict) -> dict[str, tuple[str, str]]:
    """Each name of RESOURCES -> the (url, type) of the one manifest resource it names."""
    urls = {}
    for name, (type_, part) in RESOURCES.items():
        found = [r["url"] for r in manifest["resources"] if r["type"] == type_ and part in r["url"]]
        if len(found) != 1:
            raise ValueError(f"{name}: {len(found)} resources of the test web are {type_} at *{part}*")
        urls[name] = (found[0], type_)
    # robots.txt keeps the harvest from a URL under a disallowed path, seeds included
    loaded = [
        r for r in manifest["resources"] if not r["url"].startswith(tuple(manifest["robots_disallowed"]))
    ]
    unnamed = {(r["url"], r["type"]) for r in loaded} - set(urls.values())
    if unnamed:
        raise ValueError(f"resources of the test web with no name here: {sorted(unnamed)}")
    return urls


def harvest(dsn: str, manifest: dict) -> None:
    """Every resource of the manifest loaded by the crawl DAG's steps, at level 0."""
    with Store(dsn) as store:
        store.migrate()
        load_at_level_zero(store, sorted({r["url"] for r in manifest["resources"]}))


def resource_ids(dsn: str, urls: dict[str, tuple[str, str]]) -> dict[str, int]:
    with closing(psycopg2.connect(dsn)) as conn, conn.cursor() as cur:
        cur.execute("SELECT url, type, id FROM resources")
        ids = {(url, type_): id_ for url, type_, id_ in cur.fetchall()}
    missing = sorted(name for name, key in urls.items() if key not in ids)
    if missing:
        raise RuntimeError(
            f"the harvest did not load {', '.join(missing)}: is every server of the test web up?"
        )
    return {name: ids[key] for name, key in urls.items()}


def relevance(dsn: str, ids: dict[str, int]) -> dict:
    database = SearchDatabase(lambda: dsn)
    try:
        with database.connection() as conn:
            return search_relevance.score(
                judged_queries(),
                lambda judged: {ids[name] for name in judged.relevant},
                lambda text: search_relevance.ranked(conn, text),
            )
    finally:
        database.close()


def main() -> int:
    started_postgres = not stack_postgres.running()
    started_web = run_testweb("status").returncode != 0
    try:
        if started_postgres:
            stack_postgres.start()
        if started_web and run_testweb("start").returncode != 0:
            raise SystemExit("python -m testweb start failed: see python -m testweb status")
        manifest = json.loads(MANIFEST.read_text())
        urls = resolve(manifest)
        stack_postgres.drop_database(SCRATCH)
        dsn = stack_postgres.create_postgis_database(SCRATCH)
        harvest(dsn, manifest)
        results = relevance(dsn, resource_ids(dsn, urls))
    finally:
        if started_web:
            run_testweb("stop")
        if started_postgres:
            stack_postgres.stop()
    print(f"{'query':<28} {'kind':<9} {'relevant':>8} {'recall@20':>9} {'nDCG@10':>8}")
    for row in results["queries"]:
        print(
            f"{row['query']:<28} {row['kind']:<9} {row['relevant']:>8} {row['recall@20']:>9.3f} {row['ndcg@10']:>8.3f}"
        )
    print(f"\n{'mean':<28} {'kind':<9} {'queries':>8} {'recall@20':>9} {'nDCG@10':>8}")
    for kind, mean in results["means"].items():
        print(f"{'':<28} {kind:<9} {mean['queries']:>8} {mean['recall@20']:>9.3f} {mean['ndcg@10']:>8.3f}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
