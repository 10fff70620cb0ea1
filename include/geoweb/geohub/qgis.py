"""Connection files for QGIS: the XML its own "Save Connections" writes (``QgsManageConnectionsDialog``), which
"Load Connections" in the Data Source Manager reads back. One file holds one kind of connection: WMS (WMTS too,
which QGIS opens as a WMS connection), WFS or WCS.

Titles and URLs come from strangers' servers: ElementTree escapes them as attribute values, characters XML
cannot hold are dropped, and a slash (which would nest the name in QGIS's settings) is replaced.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from geoweb.geohub.query import SearchQuery
from geoweb.geohub.sql import chosen_statement

# The kind of connection QGIS opens each type with
KIND_OF = {"WMS": "WMS", "WMTS": "WMS", "WFS": "WFS", "WCS": "WCS"}
# Each kind's root element, its version and the element of one connection, as QGIS writes them
_FORMS = {
    "WMS": ("qgsWMSConnections", "1.0", "wms"),
    "WFS": ("qgsWFSConnections", "1.1", "wfs"),
    "WCS": ("qgsWCSConnections", "1.0", "wcs"),
}
# The settings QGIS writes beside name and url, at the values of a new connection: no credentials, axis
# order as the server declares it, every DPI mode, paging and feature mode as the server offers them.
_DEFAULTS = {
    "WMS": {
        "ignoreGetMapURI": "0", "ignoreGetFeatureInfoURI": "0", "ignoreAxisOrientation": "0",
        "invertAxisOrientation": "0", "smoothPixmapTransform": "0", "dpiMode": "7", "username": "",
        "password": "",
    },
    "WFS": {
        "maxnumfeatures": "", "pagesize": "", "pagingenabled": "default", "ignoreAxisOrientation": "0",
        "invertAxisOrientation": "0", "username": "", "password": "", "featureMode": "default",
    },
    "WCS": {"username": "", "password": ""},
}  # fmt: skip
WFS_VERSIONS = ("1.0.0", "1.1.0", "2.0.0")  # the versions QGIS offers; any other: auto, QGIS negotiates
MAX_CONNECTIONS = 1000  # in one file of a search's services
MAX_NAME = 120  # characters of a connection's name
# What XML 1.0 cannot hold, even escaped
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@dataclass(frozen=True, slots=True)
class Service:
    url: str
    type: str
    version: str | None
    title: str | None


def connections_xml(kind: str, services: Iterable[Service]) -> bytes:
    """The connection file of ``kind`` (WMS, WFS, WCS) holding each service of that kind, one connection per
    service, each named by its title (else its host and path) and unique in the file."""
    root_name, version, element = _FORMS[kind]
    root = ET.Element(root_name, version=version)
    names: set[str] = set()
    for service in services:
        if KIND_OF.get(service.type) != kind:
            continue
        name = _unique(_name(service), names)
        attributes = {"name": name, "url": _NOT_XML.sub("", service.url)}
        if kind == "WFS":
            attributes["version"] = service.version if service.version in WFS_VERSIONS else "auto"
        ET.SubElement(root, element, {**attributes, **_DEFAULTS[kind]})
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE connections>\n{body}\n'.encode()


def _name(service: Service) -> str:
    text = _NOT_XML.sub("", service.title or "")
    if not text.strip():
        parts = urlsplit(service.url)
        text = f"{parts.netloc}{parts.path.rstrip('/')}" or service.url
    text = " ".join(text.replace("/", " - ").replace("\\", " - ").split())
    return text[:MAX_NAME].strip() or service.type


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f"{name} ({n})"
    taken.add(candidate)
    return candidate


_SERVICES = (
    "SELECT r.url, r.type, r.version, r.title FROM ({chosen}) c JOIN resources r ON r.id = c.resource_id"
)


def search_services(conn, query: SearchQuery, kind: str) -> list[Service]:
    """The services of ``kind`` among the first ``MAX_CONNECTIONS`` of them matching ``query`` (its types,
    if any, narrow the kind's types)."""
    types = tuple(t for t, k in KIND_OF.items() if k == kind and (not query.types or t in query.types))
    if not types:
        return []
    sql, params = chosen_statement(replace(query, types=types), MAX_CONNECTIONS)
    with conn.cursor() as cur:
        cur.execute(_SERVICES.format(chosen=sql), params)
        return [Service(*row) for row in cur.fetchall()]
