"""The web sites: their pages, how each page links to the next, robots.txt, and the decoys.

Links are written the many ways the real web writes them (``Link.style``); the ground truth is computed from
this same graph (testweb/truth.py), so pages and manifest cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

from testweb import arcgis, catalogue, files, ogcapi, stac, tiles, wps
from testweb.layout import (
    AGENCY,
    BLOG,
    DECOYS,
    DOWNLOADS,
    MAPSERVER,
    PORTAL,
    STAC_CATALOG,
    UNIVERSITY,
    origin,
)
from testweb.mapserver import ECHO, REGIONS, RIVERS, SERVED
from testweb.model import Decoy, Planted

STYLES = ("anchor", "text", "code", "script", "iframe", "area")


@dataclass(frozen=True)
class Link:
    href: str  # as written in the page: absolute or relative, possibly with GetCapabilities parameters
    label: str
    style: str = "anchor"  # one of STYLES


@dataclass(frozen=True)
class Page:
    path: str  # URL path on its site; a trailing slash is served by index.html
    title: str
    intro: str
    links: tuple[Link, ...] = ()
    base_href: str | None = None


@dataclass(frozen=True)
class Site:
    port: int
    name: str
    pages: tuple[Page, ...]
    disallowed: tuple[str, ...] = ()  # path prefixes robots.txt keeps crawlers out of
    crawl_delay: float | None = None  # seconds robots.txt asks crawlers to wait between requests

    @property
    def origin(self) -> str:
        return origin(self.port)

    @property
    def robots(self) -> str | None:
        """The robots.txt body; None when the site has none (404)."""
        if not self.disallowed and self.crawl_delay is None:
            return None
        lines = ["User-agent: *"] + [f"Disallow: {path}".rstrip() for path in self.disallowed or ("",)]
        if self.crawl_delay is not None:
            lines.append(f"Crawl-delay: {self.crawl_delay}")
        return "\n".join(lines) + "\n"


DECOY = origin(DECOYS)
CALENDAR_START = f"{DECOY}/calendar/2024/01"
SLOW_PAGE = f"{DECOY}/slow"
SOFT_404_KML = f"{DECOY}/files/lakes.kml"
HTML_ENDPOINT = f"{DECOY}/ows/portal"
EXCEPTION_ENDPOINT = f"{DECOY}/ows/broken"

SITES = (
    Site(
        PORTAL,
        "Regional Geoportal",
        pages=(
            Page(
                "/",
                "Regional Geoportal",
                "Maps, data and services of the region.",
                (
                    Link(f"{REGIONS.url}&SERVICE=WMS&REQUEST=GetCapabilities&VERSION=1.3.0", "Regions WMS"),
                    Link("services.html", "All web services"),
                    Link("maps/viewer.html", "Map viewer"),
                    Link("archive/", "Archive"),
                    Link(f"{origin(AGENCY)}/", "Environment Agency"),
                    Link(f"{origin(UNIVERSITY)}/", "Geography Department"),
                    Link(CALENDAR_START, "Events calendar"),
                    Link("imagery.html", "Satellite imagery"),
                ),
            ),
            Page(
                "/imagery.html",
                "Satellite imagery",
                "Scenes, elevation models and footprints; the catalogue speaks STAC.",
                (
                    Link(stac.CATALOG_URL, "Imagery catalogue (STAC)"),
                    Link(f"{stac.SITE}/", "Browse the catalogue"),
                    Link(stac.LARGE_COG, "Andes land cover 2024 (Cloud Optimized GeoTIFF, 11 MB)"),
                    Link(stac.FOOTPRINTS, "Scene footprints (GeoJSON)"),
                    Link(stac.SITE + stac.JPEG_TIF_PATH, "Quick-look (TIFF)"),
                    Link(stac.SITE + stac.HTML_GEOJSON_PATH, "Boundaries (GeoJSON)"),
                    Link(stac.SITE + stac.BROKEN_STAC_PATH, "Legacy catalogue"),
                ),
            ),
            Page(
                "/services.html",
                "Web services",
                "Point your GIS at these endpoints.",
                (
                    Link(RIVERS.url, "Rivers and gauges (OGC endpoint)"),
                    Link(f"{wps.URL}?service=WPS&request=GetCapabilities", "Processing service", "text"),
                    Link(
                        f"{catalogue.URL}?service=CSW&version=2.0.2&request=GetCapabilities",
                        "Catalogue",
                        "code",
                    ),
                    Link(f"{EXCEPTION_ENDPOINT}?service=WMS&request=GetCapabilities", "Legacy map server"),
                    Link(arcgis.DIRECTORY_10, "City GIS server (ArcGIS REST services directory)"),
                    Link(arcgis.SECURED_SERVICE, "Parcels (staff only)"),
                    Link(arcgis.VERSION_ONLY, "GIS server status", "text"),
                ),
            ),
            Page(
                "/maps/viewer.html",
                "Map viewer",
                "The viewer loads in the frame below.",
                (Link("embed.html", "Embedded map", "iframe"),),
            ),
            Page(
                "/maps/embed.html",
                "Embedded map",
                "Tiled base map.",
                (
                    Link(
                        f"{tiles.KVP_URL}?SERVICE=WMTS&REQUEST=GetCapabilities", "wmtsCapabilities", "script"
                    ),
                ),
            ),
            Page("/archive/", "Archive", "Older material.", (Link("2019/", "2019"),)),
            Page("/archive/2019/", "Archive 2019", "Reports of 2019.", (Link("q4.html", "Fourth quarter"),)),
            Page(
                "/archive/2019/q4.html",
                "2019, fourth quarter",
                "Quarterly report.",
                (Link("annex.html", "Annex"),),
            ),
            Page(
                "/archive/2019/annex.html",
                "Annex",
                "Boundary files of the report.",
                (
                    Link("../../files/old-boundaries.kml", "Old boundaries (KML)"),
                    Link("annex-2.html", "Second annex"),
                ),
            ),
            Page(
                "/archive/2019/annex-2.html",
                "Second annex",
                "Even older boundaries.",
                (Link(files.OLDER_BOUNDARIES.url, "Older boundaries (KML)"),),
            ),
        ),
    ),
    Site(
        AGENCY,
        "Environment Agency",
        crawl_delay=0.2,
        pages=(
            Page(
                "/",
                "Environment Agency",
                "Open data downloads. Links on this page resolve against its base URL.",
                (
                    Link("trails.kml", "Hiking trails (KML)"),
                    Link("districts.zip", "Districts (shapefile)"),
                    Link("catalog.html", "Data catalogue"),
                ),
                base_href=f"{origin(AGENCY)}/data/",
            ),
            Page(
                "/data/catalog.html",
                "Data catalogue",
                "Everything we publish.",
                (
                    Link(files.PARKS.url, "National parks (Google Earth)"),
                    Link(files.PARCELS.url, "Parcels (large shapefile)"),
                    Link(SOFT_404_KML, "Lakes (KML)"),
                    Link(arcgis.PARKS_LAYER, "City parks (feature layer)"),
                    Link(files.README_ZIP.url, "Station list (zip)"),
                ),
            ),
        ),
    ),
    Site(
        UNIVERSITY,
        "Geography Department",
        disallowed=("/private/",),
        pages=(
            Page(
                "/",
                "Geography Department",
                "Teaching and research.",
                (Link("research/", "Research"), Link("private/", "Staff only")),
            ),
            Page(
                "/research/",
                "Research",
                "Click the map to open the tile service.",
                (
                    Link(tiles.REST_CAPABILITIES_URL, "Tiles", "area"),
                    Link(tiles.TMS_URL, "Tile map service (TMS)"),
                    Link(ogcapi.URL, "Open geodata API (OGC API)"),
                    Link(f"{HTML_ENDPOINT}?service=WFS&request=GetCapabilities", "Field data portal"),
                ),
            ),
            Page(
                "/private/",
                "Staff only",
                "Unpublished field data.",
                (
                    Link("field-survey.kml", "Field survey (KML)"),
                    Link(files.RESTRICTED.url, "Restricted plots (shapefile)"),
                ),
            ),
        ),
    ),
    Site(
        BLOG,
        "Mapping Notes",
        pages=(
            Page(
                "/",
                "Mapping Notes",
                "A blog about web maps.",
                (
                    Link("posts/ogc-endpoints.html", "Finding OGC endpoints"),
                    Link("posts/hiking.html", "Hiking maps"),
                    Link("posts/free-imagery.html", "Free satellite imagery"),
                ),
            ),
            Page(
                "/posts/free-imagery.html",
                "Free satellite imagery",
                "Scenes you can use; the API answers STAC item searches.",
                (
                    Link(stac.API_COLLECTION, "Historic aerial scans (STAC API collection)"),
                    Link(stac.SCENES, "Scene list", "text"),
                    Link(stac.SMALL_COG, "elevationTile", "script"),
                ),
            ),
            Page(
                "/posts/ogc-endpoints.html",
                "Finding OGC endpoints",
                "Try these in your browser.",
                (
                    Link(f"{REGIONS.url}&service=WFS&request=GetCapabilities", "A MapServer WFS", "code"),
                    Link(f"{ECHO.url}?service=WMS&request=GetCapabilities", "A road map", "text"),
                    Link(SLOW_PAGE, "A very slow server"),
                    Link(arcgis.LANDUSE, "A land-use map service (ArcGIS)", "code"),
                    Link(arcgis.BLOG, "More posts on rest/services"),
                    Link(ogcapi.DEEP_COLLECTION, "Lakes, straight from an OGC API", "code"),
                    Link("../api/index.json", "Our open data API (beta)"),
                    Link("../api/status.json", "API status"),
                ),
            ),
            Page(
                "/posts/hiking.html",
                "Hiking maps",
                "Download the tracks.",
                (
                    Link("../files/hike.kmz", "Haute Route (KMZ)"),
                    Link(files.COASTLINE.url, "coastlineDownload", "script"),
                ),
            ),
        ),
    ),
    Site(
        DOWNLOADS,
        "Downloads",
        pages=(Page("/", "Downloads", "File server; files are linked from other sites."),),
    ),
    Site(MAPSERVER, "Map server", pages=(Page("/", "Map server", "MapServer endpoints of the test web."),)),
    Site(
        STAC_CATALOG,
        "Earth Observation Catalogue",
        pages=(
            Page(
                "/",
                "Earth Observation Catalogue",
                "A static STAC catalog; programs start at catalog.json or at the STAC API.",
                (
                    Link(stac.DEEP_COLLECTION, "Andes land cover collection"),
                    Link(stac.API_URL, "STAC API"),
                ),
            ),
        ),
    ),
)

SEEDS = (f"{origin(PORTAL)}/", f"{origin(BLOG)}/")

DECOYS_LIST = (
    Decoy(SOFT_404_KML, "soft 404: an HTML page answered with 200 at a .kml URL"),
    files.README_ZIP,
    Decoy(HTML_ENDPOINT, "answers every request, GetCapabilities included, with an HTML page"),
    Decoy(EXCEPTION_ENDPOINT, "answers every request with a ServiceExceptionReport"),
    Decoy(CALENDAR_START, "crawler trap: an endless calendar, each month links to the next"),
    Decoy(SLOW_PAGE, "a page that takes 5 s to answer"),
    Decoy(tiles.TMS_URL, "a TMS service: not a resource type of the crawl"),
    *ogcapi.DECOYS,
    *stac.DECOYS,
    *arcgis.DECOYS,
)
# Links that lead to a planted resource without being its URL (a deep link to one collection of a STAC
# catalog or API): the resource they lead to, found at the level of the link.
ALIASES = {**stac.ALIASES, ogcapi.DEEP_COLLECTION: ogcapi.URL, **arcgis.ALIASES}
# Planted resources found from another one (url, found from, link hops): the services an ArcGIS services
# directory describes come with it (0 hops); a service page's breadcrumbs link its directory (1 hop).
REACHED_FROM = arcgis.REACHED_FROM


def planted() -> list[Planted]:
    """Every planted resource, wherever it is linked from (or not at all)."""
    echo_note = "answers every service= with the same WMS document: one WMS, nothing else"
    return [
        *(m.planted() for m in SERVED),
        ECHO.planted(echo_note),
        *tiles.planted(),
        *wps.planted(),
        *catalogue.planted(),
        *(f.planted() for f in files.FILES),
        *stac.planted(),
        *ogcapi.planted(),
        *arcgis.planted(),
    ]
