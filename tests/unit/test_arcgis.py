"""The ArcGIS REST detector on the documents of tests/data/arcgis, and through the test web's stand-in server
(testweb/arcgis.py, run in-process on a free port) with the real fetcher."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import pytest
from aiohttp import web

from geoweb.detect import load_detector
from geoweb.detect.arcgis import (
    ArcGISDetector,
    Place,
    esri_bbox,
    locate,
    service_resource,
)
from geoweb.detect.base import DetectContext
from geoweb.fetch.fetcher import Fetcher
from geoweb.links.extract import extract_links
from geoweb.models import ARCGIS_TYPES, Resource
from geoweb.settings import Settings
from testweb.arcgis import DOCUMENTS, make_app

UTM_33N_WKT = (
    'PROJCS["WGS_1984_UTM_Zone_33N",GEOGCS["GCS_WGS_1984",DATUM["D_WGS_1984",SPHEROID["WGS_1984",6378137.0,'
    '298.257223563]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]],PROJECTION["Transverse_Mercator"],'
    'PARAMETER["False_Easting",500000.0],PARAMETER["False_Northing",0.0],PARAMETER["Central_Meridian",15.0],'
    'PARAMETER["Scale_Factor",0.9996],PARAMETER["Latitude_Of_Origin",0.0],UNIT["Meter",1.0]]'
)


def document(name: str) -> dict:
    return json.loads((DOCUMENTS / f"{name}.json").read_text())


def close(box, expected, tolerance=1e-6) -> bool:
    return box is not None and all(abs(a - b) <= tolerance for a, b in zip(box, expected, strict=True))


# --- the stand-in, in-process ----------------------------------------------------------------------------


@dataclass
class Run:
    """One crawl run against a server: the detect context, the URLs detectors asked for."""

    base: str
    fetcher: Fetcher
    settings: Settings
    asked: list[str] = field(default_factory=list)

    def context(self, types=ARCGIS_TYPES) -> DetectContext:
        """A context of its own run: its ``first_time`` keys start empty."""
        claimed: set[str] = set()

        async def fetch(url, **kwargs):
            self.asked.append(url.removeprefix(self.base))
            return await self.fetcher.get(url, **kwargs)

        def first_time(key: str) -> bool:
            new = key not in claimed
            claimed.add(key)
            return new

        return DetectContext(fetch=fetch, settings=self.settings, types=types, first_time=first_time)

    async def detect(self, path: str, ctx: DetectContext | None = None) -> list[Resource]:
        """What the detector reports for the page the crawl fetched at ``path``."""
        response = await self.fetcher.get(self.base + path)
        detector = ArcGISDetector()
        assert detector.accepts(response), path
        return await detector.detect(response, ctx or self.context())


@asynccontextmanager
async def serving(app: web.Application | None = None, settings: Settings | None = None) -> AsyncIterator[Run]:
    """The stand-in (or ``app``) on a free loopback port, and a run with the real fetcher against it."""
    runner = web.AppRunner(app or make_app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    settings = (settings or Settings()).with_(allowed_hosts=frozenset({"127.0.0.1"}), retries=0)
    try:
        async with Fetcher(settings) as fetcher:
            yield Run(f"http://127.0.0.1:{runner.addresses[0][1]}", fetcher, settings)
    finally:
        await runner.cleanup()


def detect_at(path: str, settings: Settings | None = None) -> tuple[list[Resource], Run]:
    async def go():
        async with serving(settings=settings) as run:
            return await run.detect(path), run

    return asyncio.run(go())


def by_type(resources: list[Resource]) -> dict[str, list[Resource]]:
    found: dict[str, list[Resource]] = {}
    for resource in resources:
        found.setdefault(resource.type, []).append(resource)
    return found


# --- URLs ------------------------------------------------------------------------------------------------

H = "http://gis.example.org"


@pytest.mark.parametrize(
    ("url", "place"),
    [
        (f"{H}/arcgis/rest/services", Place(f"{H}/arcgis/rest/services", at_target=True)),
        (f"{H}/arcgis/rest/services/?f=pjson", Place(f"{H}/arcgis/rest/services", at_target=True)),
        (f"{H}/arcgis/rest/services/Hydro", Place(f"{H}/arcgis/rest/services")),
        (f"{H}/ArcGIS/REST/Services/Hydro/Rivers/mapserver/", Place(
            f"{H}/ArcGIS/rest/services", f"{H}/ArcGIS/rest/services/Hydro/Rivers/MapServer", "MapServer", at_target=True)),
        (f"{H}/arcgis/rest/services/Hydro/Rivers/MapServer/3?f=json&token=secret", Place(
            f"{H}/arcgis/rest/services", f"{H}/arcgis/rest/services/Hydro/Rivers/MapServer", "MapServer")),
        (f"{H}/server/rest/services/Roads/FeatureServer/0/query?where=1%3D1", Place(
            f"{H}/server/rest/services", f"{H}/server/rest/services/Roads/FeatureServer", "FeatureServer")),
        ("HTTP://GIS.example.org:80/arcgis/rest/services/Dem/ImageServer", Place(
            f"{H}/arcgis/rest/services", f"{H}/arcgis/rest/services/Dem/ImageServer", "ImageServer", at_target=True)),
        (f"{H}/arcgis/rest/services/Tools/GPServer/Buffer", Place(
            f"{H}/arcgis/rest/services", f"{H}/arcgis/rest/services/Tools/GPServer", "GPServer")),
        (f"{H}/arcgis/rest/services/MapServer", Place(f"{H}/arcgis/rest/services")),  # a folder of that name
        (f"{H}/arcgis/services/Hydro/MapServer/WMSServer", None),
        (f"{H}/blog/rest-services.html", None),
        ("ftp://gis.example.org/arcgis/rest/services", None),
    ],
)  # fmt: skip
def test_every_url_under_rest_services_leads_to_one_canonical_target(url, place):
    assert locate(url) == place


# --- documents -------------------------------------------------------------------------------------------

RIVERS = f"{H}/arcgis/rest/services/Hydro/Rivers/MapServer"


def test_a_map_service_is_its_layers_with_their_extents_in_wgs84():
    doc, layers = document("arcgis/rest/services/Hydro/Rivers/MapServer"), None
    layers = document("arcgis/rest/services/Hydro/Rivers/MapServer/layers")
    resource = service_resource(RIVERS, "MapServer", doc, layers, max_layers=100)
    assert (resource.type, resource.version, resource.title) == (
        "ARCGIS-MAPSERVER",
        "10.91",
        "Rivers and gauges",
    )
    assert resource.abstract.startswith("Rivers, river gauges and catchments")
    assert resource.keywords == ["rivers", "gauges", "hydrology", "catchments"]
    assert resource.provider == "Regional Water Authority"
    assert [d.name for d in resource.datasets] == ["Gauges", "Rivers", "Catchments"]
    gauges, rivers, catchments = (d.bbox for d in resource.datasets)
    assert close(gauges, (14.2, 44.3, 15.8, 45.7))  # Web Mercator (102100 / 3857)
    assert close(rivers, (14.0, 44.0, 16.0, 46.0))
    assert close(catchments, (14.2244, 43.9763, 16.2925, 46.0536), 1e-4)  # UTM zone 33N (32633)
    assert resource.datasets[0].extra == {
        "id": 0,
        "type": "Feature Layer",
        "geometry_type": "esriGeometryPoint",
    }
    assert close(resource.bbox, (14.0, 43.9763, 16.2925, 46.0536), 1e-4)
    assert resource.extra == {"capabilities": "Map,Query,Data", "wkid": 3857, "layer_extents": True}


def test_a_feature_service_keeps_its_layers_and_drops_tables_without_extent():
    base = "arcgis/rest/services/Hydro/Rivers/FeatureServer"
    resource = service_resource(
        RIVERS, "FeatureServer", document(base), document(f"{base}/layers"), max_layers=9
    )
    assert resource.type == "ARCGIS-FEATURESERVER"
    assert [d.name for d in resource.datasets] == ["Gauges", "Rivers"]  # the GaugeReadings table has none


def test_an_image_service_is_its_own_dataset_reprojected_from_state_plane_feet():
    url = f"{H}/arcgis/rest/services/Imagery/CharlotteLAS/ImageServer"
    doc = document("arcgis/rest/services/Imagery/CharlotteLAS/ImageServer")
    resource = service_resource(url, "ImageServer", doc, None, max_layers=9)
    (dataset,) = resource.datasets
    assert (resource.type, resource.title, dataset.name) == (
        "ARCGIS-IMAGESERVER",
        "CharlotteLAS",
        "Imagery/CharlotteLAS",
    )
    assert close(dataset.bbox, (-80.87577, 35.20548, -80.82462, 35.24746), 1e-4)  # NC State Plane ft (2264)
    assert dataset.extra == {"band_count": 1, "pixel_type": "F32", "data_type": "esriImageServiceDataTypeElevation",
                             "pixel_size": [10.0, 10.0]}  # fmt: skip


def test_an_11x_map_service_titles_from_its_map_name_when_its_title_is_a_file_name():
    base = "server/rest/services/Planning/Landuse/MapServer"
    url = f"{H}/{base}"
    resource = service_resource(url, "MapServer", document(base), document(f"{base}/layers"), max_layers=9)
    assert (resource.version, resource.title) == ("11.3", "Land use")  # documentInfo Title: "Landuse.aprx"
    assert [(d.name, d.extra["type"]) for d in resource.datasets] == [
        ("Land use", "Group Layer"), ("Zoning", "Feature Layer"), ("Buildings", "Feature Layer"),
    ]  # fmt: skip
    assert close(resource.datasets[2].bbox, (15.05, 45.2, 15.45, 45.42))


def test_without_a_layers_answer_the_service_layer_list_gives_names_without_extents():
    doc = document("arcgis/rest/services/Hydro/Rivers/MapServer")
    resource = service_resource(RIVERS, "MapServer", doc, None, max_layers=2)
    assert [(d.name, d.bbox) for d in resource.datasets] == [
        ("Gauges", None),
        ("Rivers", None),
    ]  # capped at 2
    assert close(resource.bbox, (14.0, 44.0, 16.0, 46.0))  # the service's fullExtent
    assert resource.extra["layer_extents"] is False


@pytest.mark.parametrize(
    ("extent", "expected"),
    [
        ({"xmin": 1558472.87, "ymin": 5465442.18, "xmax": 1781111.85, "ymax": 5780349.22,
          "spatialReference": {"wkid": 102100}}, (14.0, 44.0, 16.0, 46.0)),  # Esri's Web Mercator code alone
        ({"xmin": 440000, "ymin": 4870000, "xmax": 600000, "ymax": 5100000,
          "spatialReference": {"wkt": UTM_33N_WKT}}, (14.2244, 43.9763, 16.2925, 46.0536)),
        ({"xmin": 14, "ymin": 44, "xmax": 16, "ymax": 46}, (14.0, 44.0, 16.0, 46.0)),  # no CRS, plainly degrees
        ({"xmin": -20037700, "ymin": -20037700, "xmax": 20037700, "ymax": 20037700,
          "spatialReference": {"wkid": 102100, "latestWkid": 3857}}, (-180.0, -85.0513, 180.0, 85.0513)),
        ({"xmin": "NaN", "ymin": "NaN", "xmax": "NaN", "ymax": "NaN", "spatialReference": {"wkid": 4326}}, None),
        ({"xmin": None, "ymin": 1, "xmax": 2, "ymax": 3}, None),
        ({"xmin": 16, "ymin": 44, "xmax": 14, "ymax": 46, "spatialReference": {"wkid": 4326}}, None),  # inverted
        ({"xmin": 500000, "ymin": 5e6, "xmax": 6e5, "ymax": 5.1e6}, None),  # no CRS, not degrees
        ({"xmin": 1, "ymin": 2, "xmax": 3, "ymax": 4, "spatialReference": {"wkid": 999999}}, None),  # unknown
        ({"xmin": 1, "ymin": 2, "xmax": 3, "ymax": 4, "spatialReference": {"wkt": "PROJCS[nonsense"}}, None),
        ({"xmin": 10, "ymin": 80, "xmax": 20, "ymax": 95, "spatialReference": {"wkid": 4326}}, None),
        ("not an extent", None),
    ],
)  # fmt: skip
def test_esri_extents_become_wgs84_boxes_or_nothing(extent, expected):
    box = esri_bbox(extent)
    assert box == expected if expected is None else close(box, expected, 1e-4), box


# --- through the stand-in --------------------------------------------------------------------------------


def test_the_html_services_directory_gives_the_directory_and_every_service_it_walks():
    resources, run = detect_at("/arcgis/rest/services")
    found = by_type(resources)
    (directory,) = found["ARCGIS-DIRECTORY"]
    assert (directory.url, directory.version) == (f"{run.base}/arcgis/rest/services", "10.91")
    assert [(d.name, d.title) for d in directory.datasets] == [
        ("Geometry/GeometryServer", None),
        ("PrintingTools/GPServer", None),
        ("Hydro/Rivers/FeatureServer", "Rivers and gauges"),
        ("Hydro/Rivers/MapServer", "Rivers and gauges"),
        ("Imagery/CharlotteLAS/ImageServer", "CharlotteLAS"),
    ]
    assert close(directory.datasets[4].bbox, (-80.87577, 35.20548, -80.82462, 35.24746), 1e-4)
    assert close(directory.bbox, (-80.87577, 35.20548, 16.0, 46.0), 1e-4)
    services = {r.url.removeprefix(run.base): r for r in resources if r is not directory}
    assert sorted(services) == [
        "/arcgis/rest/services/Hydro/Rivers/FeatureServer",
        "/arcgis/rest/services/Hydro/Rivers/MapServer",
        "/arcgis/rest/services/Imagery/CharlotteLAS/ImageServer",
    ]
    assert [d.name for d in services["/arcgis/rest/services/Hydro/Rivers/MapServer"].datasets] == [
        "Gauges", "Rivers", "Catchments",
    ]  # fmt: skip
    # the root once, its three folders (Secure answers 499), three services, two /layers
    assert sorted(run.asked) == sorted([
        "/arcgis/rest/services?f=json",
        "/arcgis/rest/services/Hydro?f=json",
        "/arcgis/rest/services/Imagery?f=json",
        "/arcgis/rest/services/Secure?f=json",
        "/arcgis/rest/services/Hydro/Rivers/FeatureServer?f=json",
        "/arcgis/rest/services/Hydro/Rivers/MapServer?f=json",
        "/arcgis/rest/services/Imagery/CharlotteLAS/ImageServer?f=json",
        "/arcgis/rest/services/Hydro/Rivers/FeatureServer/layers?f=json",
        "/arcgis/rest/services/Hydro/Rivers/MapServer/layers?f=json",
    ])  # fmt: skip


def test_a_layer_url_leads_to_its_service_once_per_run():
    async def go():
        async with serving() as run:
            ctx = run.context()
            first = await run.detect("/server/rest/services/Planning/Parks/FeatureServer/0", ctx)
            asked = list(run.asked)
            again = await run.detect("/server/rest/services/Planning/Parks/FeatureServer?f=pjson", ctx)
            other_layer = await run.detect("/server/rest/services/Planning/Parks/FeatureServer/1/", ctx)
            return first, asked, again + other_layer, run

    (parks,), asked, repeated, run = asyncio.run(go())
    assert (parks.url, parks.type) == (
        f"{run.base}/server/rest/services/Planning/Parks/FeatureServer",
        "ARCGIS-FEATURESERVER",
    )
    assert (parks.version, parks.title, parks.provider) == ("11.3", "City parks", "Parks Department")
    assert [d.name for d in parks.datasets] == ["Parks", "Playgrounds"]
    assert asked == [
        "/server/rest/services/Planning/Parks/FeatureServer?f=json",
        "/server/rest/services/Planning/Parks/FeatureServer/layers?f=json",
    ]
    assert repeated == [] and run.asked == asked


def test_the_json_form_of_a_service_is_read_as_fetched_and_digested_like_the_json_form():
    async def go():
        async with serving() as run:
            (from_pjson,) = await run.detect("/server/rest/services/Planning/Landuse/MapServer?f=pjson")
            asked = list(run.asked)
            (from_html,) = await run.detect("/server/rest/services/Planning/Landuse/MapServer")
            return from_pjson, from_html, asked

    from_pjson, from_html, asked = asyncio.run(go())
    assert asked == ["/server/rest/services/Planning/Landuse/MapServer/layers?f=json"]  # no probe
    assert from_pjson.content_sha256 == from_html.content_sha256 is not None
    assert from_pjson.to_record() | {"discovered_at": None} == from_html.to_record() | {"discovered_at": None}


def test_a_folder_page_leads_to_the_directory_of_its_site():
    resources, run = detect_at("/server/rest/services/Planning?f=pjson")
    (directory,) = by_type(resources)["ARCGIS-DIRECTORY"]
    assert directory.url == f"{run.base}/server/rest/services"
    assert [d.name for d in directory.datasets] == [
        "Planning/Basemap/VectorTileServer", "Planning/Landuse/MapServer", "Planning/Parks/FeatureServer",
    ]  # fmt: skip
    assert len(resources) == 3


def test_a_service_another_page_claimed_is_still_a_dataset_of_its_directory():
    async def go():
        async with serving() as run:
            ctx = run.context()
            (landuse,) = await run.detect("/server/rest/services/Planning/Landuse/MapServer", ctx)
            walked = await run.detect("/server/rest/services", ctx)
            return landuse, walked

    landuse, walked = asyncio.run(go())
    directory, parks = walked
    assert parks.type == "ARCGIS-FEATURESERVER"  # Landuse is not reported twice
    (dataset,) = [d for d in directory.datasets if d.name == "Planning/Landuse/MapServer"]
    assert (dataset.title, dataset.bbox) == ("Land use", landuse.bbox)


@pytest.mark.parametrize(
    ("settings", "services", "described", "logged"),
    [
        # the two root services, then the first folder's first
        (Settings(arcgis_max_services=3), 3, 1, "5 services, only the first 3 described"),
        # only the Hydro folder is read
        (Settings(arcgis_max_folders=1), 4, 2, "folder cap of 1 reached, 2 folders left unread"),
    ],
)
def test_directory_walks_stop_at_their_caps(settings, services, described, logged, caplog):
    with caplog.at_level("INFO", logger="geoweb.detect.arcgis"):
        resources, _ = detect_at("/arcgis/rest/services", settings)
    directory, *walked = resources
    assert (len(directory.datasets), len(walked)) == (services, described)
    assert logged in caplog.text


def test_a_run_that_wants_no_arcgis_type_asks_nothing():
    async def go():
        async with serving() as run:
            return await run.detect("/arcgis/rest/services", run.context(types=("WMS",))), run

    resources, run = asyncio.run(go())
    assert resources == [] and run.asked == []


def test_the_stand_in_serves_the_stored_documents_and_html_pages_linked_as_arcgis_server_does():
    async def go():
        async with serving() as run:
            pjson = await run.fetcher.get(f"{run.base}/arcgis/rest/services/Hydro/Rivers/MapServer?f=pjson")
            compact = await run.fetcher.get(
                f"{run.base}/server/rest/services/Planning/Parks/FeatureServer/0?f=json"
            )
            html = await run.fetcher.get(f"{run.base}/arcgis/rest/services/Hydro/Rivers/MapServer/2")
            secured = await run.fetcher.get(
                f"{run.base}/arcgis/rest/services/Secure/Parcels/MapServer?f=json"
            )
            return run.base, pjson, compact, html, secured

    base, pjson, compact, html, secured = asyncio.run(go())
    stored = DOCUMENTS / "arcgis/rest/services/Hydro/Rivers/MapServer.json"
    assert pjson.body == stored.read_bytes() and pjson.content_type == "text/plain"  # as 10.x labels JSON
    assert compact.content_type == "application/json" and b"\n" not in compact.body
    parks_layers = document("server/rest/services/Planning/Parks/FeatureServer/layers")["layers"]
    assert json.loads(compact.body) == parks_layers[0]
    links = {link.url.removeprefix(base) for link in extract_links(html.text(), html.final_url)}
    assert {
        "/arcgis/rest/services",
        "/arcgis/rest/services/Hydro",
        "/arcgis/rest/services/Hydro/Rivers/MapServer",
        "/arcgis/rest/services/Hydro/Rivers/MapServer/2?f=pjson",
    } <= links
    assert json.loads(secured.body)["error"]["code"] == 499 and secured.status == 200


def test_the_detector_is_registered():
    assert isinstance(load_detector("arcgis"), ArcGISDetector)


def test_a_run_that_wants_only_directories_reads_no_layers():
    async def go():
        async with serving() as run:
            return await run.detect("/arcgis/rest/services", run.context(types=("ARCGIS-DIRECTORY",))), run

    (directory,), run = asyncio.run(go())
    assert len([d for d in directory.datasets if d.bbox]) == 3
    assert not [url for url in run.asked if "/layers" in url]
