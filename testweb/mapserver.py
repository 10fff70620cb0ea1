"""The MapServer endpoints: which maps exist, what each publishes, and their mapfiles.

One map is one OGC endpoint serving WMS, WFS, WCS and SOS as its layers allow. Maps are reached either as
``/cgi-bin/mapserv?map=<alias>`` (the alias is declared in the MapServer config file) or through a clean path
``/ows/<name>`` for which lighttpd sets MS_MAPFILE.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from string import Template

from testweb.layout import CONF, DATA, DECOYS, LOGS, MAPSERVER, TEMPLATES, origin
from testweb.model import Planted, with_query

MAPSERV_BIN = "/usr/lib/cgi-bin/mapserv"
MAPS_DIR = CONF / "maps"
CONFIG_FILE = CONF / "mapserver.conf"
ECHO_DOCUMENT = CONF / "echo-wms.xml"  # what the decoy server answers every request with
VECTOR_DIR = DATA / "vector"
RASTER_DIR = DATA / "raster"


@dataclass(frozen=True)
class Layer:
    name: str
    title: str
    kind: str  # POLYGON, LINE, POINT or RASTER
    keywords: tuple[str, ...] = ()
    observations: bool = False  # published as an SOS offering
    extent: tuple[float, float, float, float] | None = None  # declared, so capabilities never read the data

    @property
    def vector(self) -> bool:
        return self.kind != "RASTER"

    @property
    def data(self) -> Path:
        """The shapefile (without extension, as mapfiles name it) or GeoTIFF the layer draws."""
        return VECTOR_DIR / self.name if self.vector else RASTER_DIR / f"{self.name}.tif"


@dataclass(frozen=True)
class MapService:
    key: str  # mapfile name, and alias for map=
    title: str
    url: str  # canonical endpoint
    services: tuple[str, ...]
    layers: tuple[Layer, ...]
    clean_path: str | None = None  # served at this path (MS_MAPFILE) instead of ?map=<key>
    abstract: str = ""

    @property
    def mapfile(self) -> Path:
        return MAPS_DIR / f"{self.key}.map"

    def datasets(self, service: str) -> tuple[str, ...]:
        """The dataset names the endpoint lists for one service type."""
        wanted = {
            "WMS": lambda layer: True,
            "WFS": lambda layer: layer.vector,
            "WCS": lambda layer: not layer.vector,
            "SOS": lambda layer: layer.observations,
        }[service]
        return tuple(layer.name for layer in self.layers if wanted(layer))

    def planted(self, note: str = "") -> Planted:
        return Planted(self.url, {s: self.datasets(s) for s in self.services}, note)


HOST = origin(MAPSERVER)
REGIONS = MapService(
    key="regions",
    title="Regions of the test web",
    abstract="Administrative units, lakes, weather stations and elevation.",
    url=f"{HOST}/cgi-bin/mapserv?map=regions",
    services=("WMS", "WFS", "WCS", "SOS"),
    layers=(
        Layer("provinces", "Provinces", "POLYGON", ("boundaries", "administrative")),
        Layer("lakes", "Great lakes", "POLYGON", ("hydrography",)),
        Layer("stations", "Weather stations", "POINT", ("meteorology",), observations=True),
        Layer("elevation", "Elevation model", "RASTER", ("elevation", "DEM")),
    ),
)
RIVERS = MapService(
    key="rivers",
    title="Rivers and gauges",
    abstract="River lines and gauging stations of South-East Asia.",
    url=f"{HOST}/ows/rivers",
    clean_path="/ows/rivers",
    services=("WMS", "WFS"),
    layers=(
        Layer("rivers", "Rivers", "LINE", ("hydrography",)),
        Layer("gauges", "Gauging stations", "POINT", ("hydrography", "gauges")),
    ),
)
ARCHIVE = MapService(  # linked from no page: only the catalogue knows it
    key="archive",
    title="Land use archive",
    abstract="Historical land use, 1990.",
    url=f"{HOST}/ows/archive",
    clean_path="/ows/archive",
    services=("WMS", "WFS"),
    layers=(Layer("landuse_1990", "Land use 1990", "POLYGON", ("land use",)),),
)
LANDCOVER = MapService(  # linked from no page: only the catalogue knows it
    key="landcover",
    title="Land cover",
    abstract="Land cover classes of South Australia.",
    url=f"{HOST}/cgi-bin/mapserv?map=landcover",
    services=("WMS", "WCS"),
    layers=(Layer("landcover", "Land cover classes", "RASTER", ("land cover",)),),
)
ECHO = MapService(  # its capabilities are served by the decoy server for every request
    key="echo",
    title="Road network",
    url=f"{origin(DECOYS)}/ows/echo",
    services=("WMS",),
    layers=(Layer("roads", "Roads", "LINE", ("transport",)),),
)
OUTAGE = MapService(  # linked and planted nowhere: a WMS whose capabilities answer while every GetMap fails
    key="outage",
    title="Flood zones",
    abstract="Flood zones, their data file missing.",
    url=f"{HOST}/cgi-bin/mapserv?map=outage",
    services=("WMS",),
    # no data file of that name is ever written (data.VECTORS)
    layers=(
        Layer("flood_zones", "Flood zones", "POLYGON", ("hydrography",), extent=(100.0, 10.0, 110.0, 20.0)),
    ),
)
SERVED = (REGIONS, RIVERS, ARCHIVE, LANDCOVER)  # behind lighttpd, planted
MAPS = (*SERVED, OUTAGE, ECHO)

_COLORS = {"POLYGON": "120 170 120", "LINE": "30 90 200", "POINT": "200 40 40"}


def _metadata(layer: Layer) -> str:
    if not layer.vector:
        lines = {"wcs_label": layer.title, "wcs_rangeset_name": layer.name, "wcs_rangeset_label": layer.title}
    else:
        lines = {"gml_include_items": "all", "gml_featureid": "name", "wfs_title": layer.title}
    if layer.extent is not None:
        lines["wms_extent"] = " ".join(f"{value:g}" for value in layer.extent)
    if layer.observations:
        lines |= {
            "sos_offering_id": layer.name,
            "sos_offering_name": layer.name,
            "sos_offering_description": layer.title,
            "sos_observedproperty_id": "value",
            "sos_procedure": f"{layer.name}_sensor",
            "sos_offering_timeextent": "2024-01-01/2024-12-31",
            "sos_describesensor_url": f"{HOST}/sensors/{layer.name}.xml",
        }
    return "\n".join(f'      "{k}" "{v}"' for k, v in lines.items())


def _classes(layer: Layer) -> str:
    if not layer.vector:
        return ""
    return f"    CLASS\n      STYLE\n        COLOR {_COLORS[layer.kind]}\n        OUTLINECOLOR 40 40 40\n      END\n    END"


def render_mapfile(service: MapService) -> str:
    layer_template = Template((TEMPLATES / "mapfile-layer.map").read_text())
    layers = "".join(
        layer_template.substitute(
            name=layer.name,
            title=layer.title,
            abstract=f"{layer.title} ({service.title})",
            keywords=",".join(layer.keywords),
            kind=layer.kind,
            data=layer.data,
            metadata=_metadata(layer),
            classes=_classes(layer),
        )
        for layer in service.layers
    )
    enable = "\n".join(f'      "{s.lower()}_enable_request" "*"' for s in service.services)
    return Template((TEMPLATES / "mapfile.map").read_text()).substitute(
        key=service.key,
        title=service.title,
        abstract=service.abstract,
        keywords=",".join(sorted({k for layer in service.layers for k in layer.keywords})),
        onlineresource=with_query(service.url, ""),
        enable=enable,
        layers=layers,
    )


def write_config() -> None:
    """The mapfiles and the MapServer config file declaring the ``map=`` aliases."""
    MAPS_DIR.mkdir(parents=True, exist_ok=True)
    for service in MAPS:
        service.mapfile.write_text(render_mapfile(service))
    aliases = "\n".join(f'    "{m.key}" "{m.mapfile}"' for m in (*SERVED, OUTAGE) if m.clean_path is None)
    CONFIG_FILE.write_text(
        Template((TEMPLATES / "mapserver.conf").read_text()).substitute(
            maps=aliases, errorfile=LOGS / "mapserver-errors.log"
        )
    )


def run_mapserv(mapfile: Path, query: str) -> bytes:
    """One request to mapserv on the command line (no HTTP): the body without headers."""
    env = dict(os.environ, MAPSERVER_CONFIG_FILE=str(CONFIG_FILE), MS_MAPFILE=str(mapfile))
    done = subprocess.run(
        [MAPSERV_BIN, "-nh", f"QUERY_STRING={query}"], env=env, capture_output=True, check=True
    )
    return done.stdout


def write_echo_document() -> None:
    """The WMS capabilities the decoy server's echo endpoint answers every request with."""
    body = run_mapserv(ECHO.mapfile, "SERVICE=WMS&VERSION=1.3.0&REQUEST=GetCapabilities")
    if b"WMS_Capabilities" not in body:
        raise RuntimeError(f"mapserv did not produce WMS capabilities for {ECHO.key}: {body[:300]!r}")
    ECHO_DOCUMENT.write_bytes(body)
