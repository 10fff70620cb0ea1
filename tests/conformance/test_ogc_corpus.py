"""Every real capabilities document is classified with its README type and version, and its datasets are
the ones OWSLib, the reference client, reads from the same bytes: same names in the same order, same titles
and the same WGS84 boxes.

``capabilities_cases`` and ``owslib_reading`` also serve bench/bench_validation.py.
"""

from __future__ import annotations

import io
import json
import math
import re
import warnings
from pathlib import Path
from unittest import mock

import pytest

from geoweb.detect.ogc import read_capabilities

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / ".." / "shared" / "corpus" / "capabilities"
CAPTURED = REPO / "tests" / "data" / "capabilities"
URL = "http://example.org/ows"

pytestmark = pytest.mark.corpus

OWS11 = b'"http://www.opengis.net/ows/1.1"'
WCS11_ROOT = b'xmlns="http://www.opengis.net/wcs/1.1"'
WCS111_ROOT = b'xmlns="http://www.opengis.net/wcs/1.1.1"'
# Versions OWSLib cannot read at all: compared only by the unit tests written to the schemas.
OWSLIB_UNSUPPORTED = {("WPS", "2.0.0"): "OWSLib reads WPS 1.0.0 only"}
# OWSLib reprojects a WFS 1.0 LatLongBoundingBox from the feature type's SRS, though the standard defines it
# in WGS84 degrees already; its boxes there are wrong, so only names and titles are compared.
OWSLIB_WRONG_BOXES = {("WFS", "1.0.0")}


def capabilities_cases() -> list[tuple[str, Path, str, str]]:
    """(id, file, type, version) of the shared corpus (its README table) and of the documents captured from
    the local test web (tests/data/capabilities/index.json), where each exists."""
    cases = []
    readme = CORPUS.parent / "README.md"
    if readme.is_file():
        rows = re.findall(r"^\| (\S+\.xml) \| (\w+) \| ([\d.]+)", readme.read_text(), re.M)
        cases += [(f"corpus/{f}", CORPUS / f, t, v) for f, t, v in rows]
    index = CAPTURED / "index.json"
    if index.is_file():
        entries = json.loads(index.read_text())
        cases += [(f"captured/{e['file']}", CAPTURED / e["file"], e["type"], e["version"]) for e in entries]
    return cases


CASES = [pytest.param(case[1:], id=case[0]) for case in capabilities_cases()] or [
    pytest.param(
        None, marks=pytest.mark.skip(reason=f"no capabilities documents: shared corpus absent at {CORPUS}")
    )
]


def owslib_reading(kind: str, version: str, body: bytes) -> tuple[str | None, list[tuple]]:
    """The service title and the (name, title, WGS84 box) of each dataset, as OWSLib reads ``body``."""
    from owslib.wcs import WebCoverageService
    from owslib.wfs import WebFeatureService
    from owslib.wms import WebMapService
    from owslib.wmts import WebMapTileService
    from owslib.wps import WebProcessingService

    if kind == "WPS":
        wps = WebProcessingService(URL, version=version, skip_caps=True)
        wps.getcapabilities(xml=body)
        return wps.identification.title, [(p.identifier, p.title, None) for p in wps.processes]
    if kind == "SOS":
        from owslib.sos import SensorObservationService

        sos = SensorObservationService(URL, version=version, xml=body)
        return sos.identification.title, [(key, o.name, o.bbox) for key, o in sos.contents.items()]
    if kind == "CSW":
        from owslib.catalogue import csw2, csw3

        # OWSLib's catalogue client only reads from the network: hand it the bytes instead.
        module = csw3 if version.startswith("3") else csw2
        with mock.patch.object(module, "openURL", lambda *args, **kwargs: io.BytesIO(body)):
            csw = module.CatalogueServiceWeb(URL, version=version)
        return csw.identification.title, []
    if (kind, version) == ("WCS", "1.1.0") and OWS11 in body:
        # OWSLib's WCS 1.1.0 reader knows only OWS 1.0 elements; WCS 1.1.0 documents written with OWS 1.1
        # (as the standard has them, e.g. MapServer's) are read by its 1.1.1 reader.
        body, version = body.replace(WCS11_ROOT, WCS111_ROOT), "1.1.1"
    factory = {
        "WMS": WebMapService,
        "WFS": WebFeatureService,
        "WCS": WebCoverageService,
        "WMTS": WebMapTileService,
    }[kind]
    service = factory(URL, version=version, xml=body)
    datasets = [
        (key, c.title, getattr(c, "boundingBoxWGS84", None) or getattr(c, "bbox", None))
        for key, c in service.contents.items()
    ]
    return service.identification.title, datasets


def _same_box(ours, theirs) -> bool:
    if theirs is None or not all(math.isfinite(v) for v in theirs[:4]):
        return ours is None
    return ours is not None and all(
        math.isclose(a, b, abs_tol=1e-9) for a, b in zip(ours, theirs[:4], strict=True)
    )


@pytest.mark.parametrize("case", CASES)
def test_type_and_version(case):
    path, kind, version = case
    resource = read_capabilities(path.read_bytes(), URL)
    assert (resource.type, resource.version) == (kind, version)
    assert resource.url == URL


@pytest.mark.parametrize("case", CASES)
def test_title_and_datasets_equal_owslib(case):
    path, kind, version = case
    if (kind, version) in OWSLIB_UNSUPPORTED:
        pytest.skip(OWSLIB_UNSUPPORTED[kind, version])
    body = path.read_bytes()
    ours = read_capabilities(body, URL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # OWSLib warns about duplicate layers and deprecated calls
        title, theirs = owslib_reading(kind, version, body)
    assert ours.title == _stripped(title)
    assert [d.name for d in ours.datasets] == [name for name, _, _ in theirs]
    assert len(ours.datasets) == len(theirs)
    for dataset, (name, title, box) in zip(ours.datasets, theirs, strict=True):
        assert dataset.title == _stripped(title), name
        if (kind, version) not in OWSLIB_WRONG_BOXES:
            assert _same_box(dataset.bbox, box), (name, dataset.bbox, box)


def _stripped(value: str | None) -> str | None:
    return value.strip() or None if value else None
