"""MapProxy: WMTS (KVP and RESTful), TMS and WMS of tile caches filled from the MapServer WMS endpoints."""

from __future__ import annotations

from string import Template

from testweb.layout import CONF, MAPPROXY, TEMPLATES, VAR, origin
from testweb.mapserver import REGIONS, RIVERS, MapService
from testweb.model import Planted

CONFIG_FILE = CONF / "mapproxy.yaml"
HOST = origin(MAPPROXY)
KVP_URL = f"{HOST}/service"  # WMS and WMTS key-value-pair endpoint
REST_CAPABILITIES_URL = f"{HOST}/wmts/1.0.0/WMTSCapabilities.xml"
TMS_URL = f"{HOST}/tms/1.0.0/"

# tile layer name -> (title, the MapServer map it caches, its layers)
TILE_LAYERS: dict[str, tuple[str, MapService, tuple[str, ...]]] = {
    "rivers_tiles": ("Rivers (tiled)", RIVERS, ("rivers", "gauges")),
    "regions_tiles": ("Regions (tiled)", REGIONS, ("provinces", "lakes")),
}


def planted() -> list[Planted]:
    names = tuple(TILE_LAYERS)
    return [
        Planted(KVP_URL, {"WMTS": names, "WMS": names}, "MapProxy: one KVP endpoint for WMS and WMTS"),
        Planted(REST_CAPABILITIES_URL, {"WMTS": names}, "MapProxy RESTful WMTS capabilities document"),
    ]


def write_config() -> None:
    layers, caches, sources = [], [], []
    for name, (title, service, service_layers) in TILE_LAYERS.items():
        layers.append(f"  - name: {name}\n    title: {title}\n    sources: [{name}_cache]")
        caches.append(f"  {name}_cache:\n    grids: [webmercator]\n    sources: [{name}_wms]")
        sources.append(
            f"  {name}_wms:\n    type: wms\n    req:\n      url: {service.url}\n"
            f"      layers: {','.join(service_layers)}\n      transparent: true"
        )
    CONFIG_FILE.parent.mkdir(parents=True, exist_ok=True)
    CONFIG_FILE.write_text(
        Template((TEMPLATES / "mapproxy.yaml").read_text()).substitute(
            layers="\n".join(layers),
            caches="\n".join(caches),
            sources="\n".join(sources),
            cache_dir=VAR / "mapproxy",
        )
    )
