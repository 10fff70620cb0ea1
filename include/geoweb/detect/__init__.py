"""Detectors, registered by short name; any dotted path ``package.module:Class`` works too.

A new family of resources is one new module here and one line in ``DETECTORS``.
"""

from __future__ import annotations

from geoweb.detect.base import DetectContext, Detector
from geoweb.registry import resolve

DETECTORS = {
    "ogc": "geoweb.detect.ogc:OGCDetector",
    "kml": "geoweb.detect.kml:KMLDetector",
    "shapefile": "geoweb.detect.shapefile:ShapefileDetector",
    "geojson": "geoweb.detect.geojson:GeoJSONDetector",
    "geotiff": "geoweb.detect.geotiff:GeoTIFFDetector",
    "ogcapi": "geoweb.detect.ogcapi:OGCAPIDetector",
    "arcgis": "geoweb.detect.arcgis:ArcGISDetector",
    "stac": "geoweb.detect.stac:STACDetector",
}


class UnknownDetector(ValueError):
    """Raised by ``load_detector`` for a name that is neither registered nor importable."""


def load_detector(name: str) -> Detector:
    return resolve(DETECTORS, name, UnknownDetector)()


def load_detectors(names=None) -> list[Detector]:
    return [load_detector(n) for n in (names or DETECTORS)]


__all__ = ["DETECTORS", "DetectContext", "Detector", "UnknownDetector", "load_detector", "load_detectors"]
