"""Connectors to outside sources: web search, data portals, catalogues, image archives.

Registered by short name; any dotted path ``package.module:Class`` works too. A new source is one module and
one line in ``CONNECTORS``.
"""

from __future__ import annotations

from geoweb.connectors.base import ConfigError, Connector, ConnectorError, Link, QuotaExceeded, Record
from geoweb.registry import resolve

CONNECTORS: dict[str, str] = {}


def load_connector(name: str, config) -> Connector:
    return resolve(CONNECTORS, name, ConfigError)(config)


__all__ = [
    "CONNECTORS",
    "ConfigError",
    "Connector",
    "ConnectorError",
    "Link",
    "QuotaExceeded",
    "Record",
    "load_connector",
]
