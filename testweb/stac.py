"""A static STAC catalog (lighttpd) with real COG assets, the STAC API serving it (stac-fastapi-static), and
the GeoJSON and GeoTIFF files and decoys planted beside them.

The catalog is written as JSON at build time, laid out as STAC's best practices say (``<id>/<id>.json``
items, relative links only, as a self-contained catalog has them): a root catalog with two collections and
a sub-catalog holding a third. Each item's asset is a Cloud Optimized GeoTIFF made with GDAL; one is over
the crawler's download cap, so only its header is read, with a Range request.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from testweb.layout import LOGS, SERVER_VENV, SOURCE, STAC_API, STAC_CATALOG, origin, site_root
from testweb.model import Decoy, Planted

STAC_VERSION = "1.1.0"
ROOT = site_root(STAC_CATALOG)
SITE = origin(STAC_CATALOG)
CATALOG_URL = f"{SITE}/catalog.json"
API_URL = f"{origin(STAC_API)}/"
LARGE_COG_BYTES = 10 * 1024 * 1024 + 1  # above the crawler's 10 MB download cap


@dataclass(frozen=True)
class Item:
    """One scene: a COG of ``rows`` x ``cols`` cells of ``cell`` degrees from (west, south)."""

    id: str
    west: float
    south: float
    cell: float
    rows: int
    cols: int
    compress: str = "DEFLATE"

    @property
    def bbox(self) -> list[float]:
        return [self.west, self.south, self.west + self.cols * self.cell, self.south + self.rows * self.cell]


@dataclass(frozen=True)
class Collection:
    id: str
    title: str
    description: str
    keywords: tuple[str, ...]
    items: tuple[Item, ...]
    folder: str  # under the site root
    geojson: str | None = None  # file name of a GeoJSON asset of the footprints, in ``folder``

    @property
    def bbox(self) -> list[float]:
        boxes = [item.bbox for item in self.items]
        return [min(b[i] for b in boxes) if i < 2 else max(b[i] for b in boxes) for i in range(4)]

    @property
    def url(self) -> str:
        return f"{SITE}/{self.folder}/collection.json"

    def asset_url(self, item: Item) -> str:
        return f"{SITE}/{self.folder}/{item.id}/{item.id}.tif"


ELEVATION = Collection(
    "alpine-elevation",
    "Alpine elevation model",
    "Digital elevation model of the eastern Alps, 0.01 degree cells.",
    ("elevation", "DEM", "Alps"),
    (
        Item("elevation-north", 10.0, 47.0, 0.01, 200, 200),
        Item("elevation-south", 10.0, 45.0, 0.01, 200, 200),
    ),
    "alpine-elevation",
    geojson="footprints.geojson",
)
LANDCOVER = Collection(
    "andes-landcover",
    "Andes land cover 2024",
    "Land cover classes of the central Andes.",
    ("land cover", "classification"),
    (Item("landcover-2024", -75.0, -15.0, 0.0025, 2048, 2048, compress="NONE"),),
    "andes-landcover",
    geojson="scenes.json",
)
SCANS = Collection(
    "historic-scans",
    "Historic aerial scans",
    "Scanned aerial photographs of Lake Victoria, 1975.",
    ("aerial photography", "historic"),
    (Item("scan-1975", 32.0, -1.5, 0.01, 150, 150),),
    "archive/historic-scans",
)
COLLECTIONS = (ELEVATION, LANDCOVER, SCANS)
ARCHIVE_FOLDER = "archive"  # a sub-catalog: the catalog of catalogs case

SMALL_COG = ELEVATION.asset_url(ELEVATION.items[0])
LARGE_COG = LANDCOVER.asset_url(LANDCOVER.items[0])
FOOTPRINTS = f"{SITE}/{ELEVATION.folder}/{ELEVATION.geojson}"
SCENES = f"{SITE}/{LANDCOVER.folder}/{LANDCOVER.geojson}"
DEEP_COLLECTION = LANDCOVER.url  # a static collection linked directly
API_COLLECTION = f"{origin(STAC_API)}/collections/{SCANS.id}"  # a collection of the API linked directly

JPEG_TIF_PATH = "/quicklook/preview.tif"
HTML_GEOJSON_PATH = "/downloads/boundaries.geojson"
BROKEN_STAC_PATH = "/legacy/catalog.json"
DECOYS = (
    Decoy(SITE + JPEG_TIF_PATH, "a JPEG image at a .tif URL, served as image/tiff"),
    Decoy(SITE + HTML_GEOJSON_PATH, "a .geojson URL answering 200 with an HTML page"),
    Decoy(SITE + BROKEN_STAC_PATH, "a JSON document with stac_version but no STAC structure"),
)
# Deep links that lead to a planted resource without being its URL: the detector goes from them to the root.
ALIASES = {DEEP_COLLECTION: CATALOG_URL, API_COLLECTION: API_URL}

# The STAC API: stac-fastapi-static over the static catalog's files.
API_NAME = "stac-api"
API_ENV = {
    "STAC_API_ACCESS_LOG": str(LOGS / f"{STAC_API}-{API_NAME}.access.log"),
    "catalog_href": str(ROOT / "catalog.json"),
    "stac_fastapi_title": "Regional Earth Observation API",
    "stac_fastapi_description": "Item search over the regional Earth observation catalogue.",
    "stac_fastapi_landing_id": "regional-eo-api",
    "log_level": "warning",
}


def planted() -> list[Planted]:
    names = tuple(c.id for c in COLLECTIONS)
    stem = LANDCOVER.items[0].id
    return [
        Planted(
            CATALOG_URL, {"STAC": names}, "static STAC 1.1 catalog; one collection sits in a sub-catalog"
        ),
        # STAC API - Features is OGC API - Features too: its conformsTo says so, and /items serve GeoJSON
        Planted(
            API_URL, {"STAC-API": names, "OGCAPI-FEATURES": names}, "stac-fastapi-static over the catalog"
        ),
        Planted(SMALL_COG, {"GEOTIFF": (ELEVATION.items[0].id,)}, "COG asset of a STAC item"),
        Planted(LARGE_COG, {"GEOTIFF": (stem,)}, "COG over the download cap: read with one Range request"),
        Planted(FOOTPRINTS, {"GEOJSON": ("Alpine elevation footprints",)}),
        Planted(SCENES, {"GEOJSON": ("Andes land cover scenes",)}, "GeoJSON at a .json URL"),
    ]


def api_command(port: int) -> tuple[str, ...]:
    """uvicorn serving the ASGI app of stac-fastapi-static (testweb/wsgi/stac_api_app.py)."""
    return (
        str(SERVER_VENV / "bin" / "uvicorn"),
        "--app-dir", str(SOURCE / "wsgi"), "--host", "127.0.0.1", "--port", str(port), "--no-access-log",
        "stac_api_app:app",
    )  # fmt: skip


def lighttpd_block() -> str:
    """The soft-404 decoy: a .geojson URL that lighttpd answers as an HTML page."""
    return f'  $HTTP["url"] == "{HTML_GEOJSON_PATH}" {{\n    mimetype.assign = ("" => "text/html")\n  }}'


# --- build ---


def _link(rel: str, href: str, kind: str = "application/json", title: str | None = None) -> dict:
    return {"rel": rel, "href": href, "type": kind} | ({"title": title} if title else {})


def _write_json(path: Path, document: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2) + "\n")


def _up(folder: str) -> str:
    """The relative path from a file in ``folder`` back to the site root."""
    return "../" * (folder.count("/") + 1)


def write_cog(item: Item, path: Path) -> None:
    """A COG of smooth synthetic values: numpy writes raw cells with an ENVI header, GDAL converts them."""
    import numpy as np

    y, x = np.mgrid[0 : item.rows, 0 : item.cols]
    grid = (1000 + 800 * np.sin(x / 23.0) * np.cos(y / 17.0)).astype("<i2")
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / f"{item.id}.bil"
        grid.tofile(raw)
        north = item.south + item.rows * item.cell
        raw.with_suffix(".hdr").write_text(
            f"ENVI\nsamples = {item.cols}\nlines = {item.rows}\nbands = 1\nheader offset = 0\n"
            "file type = ENVI Standard\ndata type = 2\ninterleave = bsq\nbyte order = 0\n"
            f"map info = {{Geographic Lat/Lon, 1, 1, {item.west}, {north}, {item.cell}, {item.cell}, "
            "WGS-84}\n"
        )
        command = [
            "gdal_translate",
            "-q",
            "-of",
            "COG",
            "-a_srs",
            "EPSG:4326",
            "-co",
            f"COMPRESS={item.compress}",
        ]
        subprocess.run([*command, str(raw), str(path)], check=True)


def _item(collection: Collection, item: Item) -> dict:
    west, south, east, north = item.bbox
    ring = [[west, south], [east, south], [east, north], [west, north], [west, south]]
    up = _up(f"{collection.folder}/{item.id}")
    return {
        "type": "Feature",
        "stac_version": STAC_VERSION,
        "id": item.id,
        "geometry": {"type": "Polygon", "coordinates": [ring]},
        "bbox": item.bbox,
        "properties": {"datetime": "2024-06-01T10:00:00Z"},
        "links": [
            _link("root", f"{up}catalog.json"),
            _link("parent", "../collection.json"),
            _link("collection", "../collection.json"),
        ],
        "assets": {
            "data": {
                "href": f"./{item.id}.tif",
                "type": "image/tiff; application=geotiff; profile=cloud-optimized",
                "roles": ["data"],
            }
        },
        "collection": collection.id,
    }


def _footprints(collection: Collection, title: str) -> dict:
    features = [
        {"type": "Feature", "properties": {"id": f["id"]}, "geometry": f["geometry"]}
        for f in (_item(collection, item) for item in collection.items)
    ]
    return {"type": "FeatureCollection", "name": title, "features": features}


def _collection(collection: Collection) -> dict:
    up = _up(collection.folder)
    assets = {}
    if collection.geojson:
        assets["footprints"] = {"href": f"./{collection.geojson}", "type": "application/geo+json"}
    return {
        "type": "Collection",
        "stac_version": STAC_VERSION,
        "id": collection.id,
        "title": collection.title,
        "description": collection.description,
        "keywords": list(collection.keywords),
        "license": "CC-BY-4.0",
        "extent": {
            "spatial": {"bbox": [collection.bbox]},
            "temporal": {"interval": [["2024-01-01T00:00:00Z", None]]},
        },
        "links": [
            _link("root", f"{up}catalog.json"),
            _link("parent", "../catalog.json"),
            *(
                _link("item", f"./{item.id}/{item.id}.json", "application/geo+json")
                for item in collection.items
            ),
        ],
        "assets": assets,
    }


def _catalog(catalog_id: str, title: str, description: str, children: list[str], folder: str = "") -> dict:
    root = f"{_up(folder)}catalog.json" if folder else "./catalog.json"
    links = [_link("root", root)]
    if folder:
        links.append(_link("parent", "../catalog.json"))
    return {
        "type": "Catalog",
        "stac_version": STAC_VERSION,
        "id": catalog_id,
        "title": title,
        "description": description,
        "links": links + [_link("child", child) for child in children],
    }


def write_catalog() -> None:
    """The static catalog, its COG assets, the GeoJSON files and the decoys, under the site root."""
    top = [c for c in COLLECTIONS if not c.folder.startswith(ARCHIVE_FOLDER + "/")]
    nested = [c for c in COLLECTIONS if c not in top]
    _write_json(
        ROOT / "catalog.json",
        _catalog(
            "regional-eo",
            "Regional Earth Observation Catalogue",
            "Elevation, land cover and historic imagery of the regions we map.",
            [f"./{c.folder}/collection.json" for c in top] + [f"./{ARCHIVE_FOLDER}/catalog.json"],
        ),
    )
    _write_json(
        ROOT / ARCHIVE_FOLDER / "catalog.json",
        _catalog(
            "archive",
            "Archive",
            "Historic material.",
            [f"./{c.folder.removeprefix(ARCHIVE_FOLDER + '/')}/collection.json" for c in nested],
            ARCHIVE_FOLDER,
        ),
    )
    titles = {ELEVATION.id: "Alpine elevation footprints", LANDCOVER.id: "Andes land cover scenes"}
    for collection in COLLECTIONS:
        folder = ROOT / collection.folder
        _write_json(folder / "collection.json", _collection(collection))
        for item in collection.items:
            _write_json(folder / item.id / f"{item.id}.json", _item(collection, item))
            write_cog(item, folder / item.id / f"{item.id}.tif")
        if collection.geojson:
            _write_json(folder / collection.geojson, _footprints(collection, titles[collection.id]))
    large = ROOT / LARGE_COG.removeprefix(SITE + "/")
    if large.stat().st_size < LARGE_COG_BYTES:
        raise RuntimeError(f"{large.name} came out at {large.stat().st_size} bytes, below {LARGE_COG_BYTES}")
    _write_decoys()


def _write_decoys() -> None:
    jpeg = ROOT / JPEG_TIF_PATH.lstrip("/")
    jpeg.parent.mkdir(parents=True, exist_ok=True)
    source = ROOT / ELEVATION.folder / ELEVATION.items[0].id / f"{ELEVATION.items[0].id}.tif"
    with tempfile.TemporaryDirectory() as tmp:
        scaled = Path(tmp) / "preview.jpg"
        command = ["gdal_translate", "-q", "-of", "JPEG", "-ot", "Byte", "-scale", "-outsize", "64", "64"]
        subprocess.run([*command, str(source), str(scaled)], check=True)
        jpeg.write_bytes(scaled.read_bytes())
    html = ROOT / HTML_GEOJSON_PATH.lstrip("/")
    html.parent.mkdir(parents=True, exist_ok=True)
    html.write_text(
        "<!DOCTYPE html>\n<html><head><title>Not found</title></head>\n"
        "<body><h1>Page not found</h1><p>The file you asked for has moved.</p></body></html>\n"
    )
    _write_json(
        ROOT / BROKEN_STAC_PATH.lstrip("/"),
        {"stac_version": "1.0.0", "id": 17, "type": "Catalog", "links": "see the portal", "extent": []},
    )


# --- capture: the documents the unit tests read ---

CAPTURED = {  # URL paths of the documents kept under tests/data/stac/, per server
    "static": (
        "/catalog.json",
        "/archive/catalog.json",
        *(f"/{c.folder}/collection.json" for c in COLLECTIONS),
        f"/{ELEVATION.folder}/elevation-north/elevation-north.json",
    ),
    "api": ("/", "/conformance", "/collections", f"/collections/{SCANS.id}", "/catalog.json"),
}


def captured_file(server: str, path: str) -> str:
    """Where the document at ``path`` of ``server`` is kept: <server>/<path>[.json]; "/" as index.json."""
    name = path.strip("/") or "index"
    return f"{server}/{name}" if name.endswith(".json") else f"{server}/{name}.json"


def capture(dest: Path) -> list[str]:
    """Fetches the documents of CAPTURED from the running servers into ``dest``; returns the files written."""
    from testweb.model import DIRECT

    written = []
    for server, paths in CAPTURED.items():
        base = SITE if server == "static" else origin(STAC_API)
        for path in paths:
            target = dest / captured_file(server, path)
            with DIRECT.open(base + path, timeout=10) as answer:
                body = answer.read()
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(body)
            written.append(str(target.relative_to(dest)))
    return written


if __name__ == "__main__":  # python -m testweb.stac DEST: capture the documents (the test web must be up)
    import sys

    print("\n".join(capture(Path(sys.argv[1]))))
