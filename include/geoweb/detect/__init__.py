"""Detectors, registered by short name; any dotted path ``package.module:Class`` works too.

A new family of resources is one new module here and one line in ``DETECTORS``.
"""

from __future__ import annotations

import importlib

from geoweb.detect.base import DetectContext, Detector

DETECTORS = {
    "ogc": "geoweb.detect.ogc:OGCDetector",
    "kml": "geoweb.detect.kml:KMLDetector",
    "shapefile": "geoweb.detect.shapefile:ShapefileDetector",
}


class UnknownDetector(ValueError):
    """Raised by ``load_detector`` for a name that is neither registered nor importable."""


def load_detector(name: str) -> Detector:
    path = DETECTORS.get(name, name)
    module_name, _, class_name = path.partition(":")
    if not class_name:
        raise UnknownDetector(f"unknown detector {name!r}; known: {', '.join(DETECTORS)}")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise UnknownDetector(f"cannot load detector {name!r} from {path!r}: {exc}") from exc
    return cls()


def load_detectors(names=None) -> list[Detector]:
    return [load_detector(n) for n in (names or DETECTORS)]


__all__ = ["DETECTORS", "DetectContext", "Detector", "UnknownDetector", "load_detector", "load_detectors"]
