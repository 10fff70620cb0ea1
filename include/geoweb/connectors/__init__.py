"""Connectors to outside sources: web search, data portals, catalogues, image archives.

Registered by short name; any dotted path ``package.module:Class`` works too. A new source is one module and
one line in ``CONNECTORS``.
"""

from __future__ import annotations

from geoweb.connectors.base import ConfigError, Connector, ConnectorError, QuotaExceeded
from geoweb.registry import resolve

CONNECTORS: dict[str, str] = {
    "google": "geoweb.connectors.search.google:Google",
    "brave": "geoweb.connectors.search.brave:Brave",
    "searxng": "geoweb.connectors.search.searxng:SearXNG",
    "datagov": "geoweb.connectors.datagov:DataGov",
    "ckan": "geoweb.connectors.ckan:CKAN",
    "csw": "geoweb.connectors.csw:CSWConnector",
    "nspo": "geoweb.connectors.archive.nspo:NSPOArchive",
    "stac": "geoweb.connectors.archive.stac:STACArchive",
}


def load_connector(name: str, config) -> Connector:
    return resolve(CONNECTORS, name, ConfigError)(config)


__all__ = [
    "CONNECTORS",
    "ConfigError",
    "Connector",
    "ConnectorError",
    "QuotaExceeded",
    "load_connector",
]
