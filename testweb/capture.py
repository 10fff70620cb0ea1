"""Saves the GetCapabilities document of every real server and version into tests/data/capabilities/.

The OGC detector's conformance tests read them through index.json ([{"file", "type", "version", "server"}]).
Each document is checked before it is saved: an exception report or a wrong version stops the capture.
"""

from __future__ import annotations

import json
from typing import Any

from lxml import etree

from testweb import catalogue, tiles, wps
from testweb.layout import REPO
from testweb.mapserver import REGIONS
from testweb.model import DIRECT, with_query

DEST = REPO / "tests" / "data" / "capabilities"


def _kvp(endpoint: str, service: str, version: str, version_param: str = "VERSION") -> str:
    return with_query(endpoint, f"SERVICE={service}&REQUEST=GetCapabilities&{version_param}={version}")


# (file, type, version, server, URL)
CAPTURES = [
    *(
        (f"mapserver_{t.lower()}_{v.replace('.', '')}.xml", t, v, "MapServer", _kvp(REGIONS.url, t, v))
        for t, versions in {
            "WMS": ("1.1.1", "1.3.0"),
            "WFS": ("1.0.0", "1.1.0", "2.0.0"),
            "WCS": ("1.0.0", "1.1.0", "2.0.1"),
            "SOS": ("1.0.0",),
        }.items()
        for v in versions
    ),
    ("mapproxy_wms_111.xml", "WMS", "1.1.1", "MapProxy", _kvp(tiles.KVP_URL, "WMS", "1.1.1")),
    ("mapproxy_wms_130.xml", "WMS", "1.3.0", "MapProxy", _kvp(tiles.KVP_URL, "WMS", "1.3.0")),
    ("mapproxy_wmts_100_kvp.xml", "WMTS", "1.0.0", "MapProxy", _kvp(tiles.KVP_URL, "WMTS", "1.0.0")),
    ("mapproxy_wmts_100_rest.xml", "WMTS", "1.0.0", "MapProxy", tiles.REST_CAPABILITIES_URL),
    ("pywps_wps_100.xml", "WPS", "1.0.0", "PyWPS", _kvp(wps.URL, "WPS", "1.0.0")),
    ("pywps_wps_200.xml", "WPS", "2.0.0", "PyWPS", _kvp(wps.URL, "WPS", "2.0.0", "ACCEPTVERSIONS")),
    ("pycsw_csw_202.xml", "CSW", "2.0.2", "pycsw", _kvp(catalogue.URL, "CSW", "2.0.2")),
    ("pycsw_csw_300.xml", "CSW", "3.0.0", "pycsw", _kvp(catalogue.URL, "CSW", "3.0.0", "ACCEPTVERSIONS")),
]


class CaptureError(RuntimeError):
    """Raised when a server answers a GetCapabilities with anything but capabilities of that version."""


def checked(body: bytes, url: str, version: str) -> bytes:
    root = etree.fromstring(body, etree.XMLParser(resolve_entities=False, no_network=True))
    name = etree.QName(root).localname
    if "Exception" in name or root.get("version") != version:
        raise CaptureError(
            f"{url} answered <{name} version={root.get('version')!r}>, not capabilities {version}"
        )
    return body


def capture() -> list[dict[str, Any]]:
    DEST.mkdir(parents=True, exist_ok=True)
    index = []
    for file, type_, version, server, url in CAPTURES:
        with DIRECT.open(url, timeout=10) as response:
            (DEST / file).write_bytes(checked(response.read(), url, version))
        index.append({"file": file, "type": type_, "version": version, "server": server})
    (DEST / "index.json").write_text(json.dumps(index, indent=2) + "\n")
    return index
