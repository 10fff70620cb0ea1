"""Satellite-image archives: the NSPO archive (an undocumented JSON API, mapped by configuration) and any STAC
API, behind one adapter interface (``ArchiveAdapter``); ``geoweb.harvest.archive`` loads their scenes into
PostGIS."""

from geoweb.connectors.archive.base import ArchiveAdapter, FieldMapping

__all__ = [
    "ArchiveAdapter",
    "FieldMapping",
]
