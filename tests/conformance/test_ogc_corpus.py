"""Every real capabilities document, through the crawl's OGC detector (sniff, validation pool, OWSLib and the
adapter), is classified with its README type and version, and reports what OWSLib, the reference client,
reads from the same bytes plus exactly the corrections ``geoweb.detect.ogc.adapter`` documents: same
service title, same dataset names in the same order, same titles and the same WGS84 boxes.

The reference here is OWSLib called directly, as a GIS Python user would call it; the corrections are
re-derived from the document with lxml, independently of the adapter's code.

``capabilities_cases`` and ``owslib_reading`` also serve bench/bench_validation.py.
"""

from __future__ import annotations

import asyncio
import io
import json
import math
import re
import warnings
from collections import Counter
from pathlib import Path
from unittest import mock

import pytest
from lxml import etree

from geoweb.detect.base import DetectContext
from geoweb.detect.ogc import OGCDetector
from geoweb.detect.ogc.common import lat_first
from geoweb.errors import HTTPStatusError
from geoweb.fetch.response import Response
from geoweb.models import OGC_TYPES
from geoweb.settings import Settings
from tests.data.corpus import CAPABILITIES, CORPUS

REPO = Path(__file__).resolve().parents[2]
# documents captured from the local test web, and documents written in the shape of public servers' answers
INDEXED = (REPO / "tests" / "data" / "capabilities", Path(__file__).parent / "documents")
URL = "http://example.org/ows"

OWS11 = b'"http://www.opengis.net/ows/1.1"'
WCS11_NS = b'"http://www.opengis.net/wcs/1.1"'
WCS111_NS = b'"http://www.opengis.net/wcs/1.1.1"'


def capabilities_cases() -> list[tuple[str, Path, str, str]]:
    """(id, file, type, version) of the corpus (its README table), of the documents captured from the local
    test web and of the documents written here (each folder's index.json)."""
    rows = re.findall(r"^\| (\S+\.xml) \| (\w+) \| ([\d.]+)", (CORPUS / "README.md").read_text(), re.M)
    cases = [(f"corpus/{f}", CAPABILITIES / f, t, v) for f, t, v in rows]
    for folder in INDEXED:
        cases += [
            (f"{folder.name}/{e['file']}", folder / e["file"], e["type"], e["version"])
            for e in json.loads((folder / "index.json").read_text())
        ]
    return cases


CASES = [pytest.param(case[1:], id=case[0]) for case in capabilities_cases()]


def owslib_reading(kind: str, version: str, body: bytes) -> tuple[str | None, list[tuple]]:
    """The service title and the (name, title, WGS84 box) of each dataset, as OWSLib reads ``body``, with the
    documented corrections applied. A WPS may list a process name twice; the crawl keeps the first."""
    from owslib.wcs import WebCoverageService
    from owslib.wfs import WebFeatureService
    from owslib.wms import WebMapService
    from owslib.wmts import WebMapTileService
    from owslib.wps import WebProcessingService

    if (kind, version) == ("WPS", "2.0.0"):  # OWSLib has no WPS 2.0 reader: the adapter's reading is checked
        return _wps20_reading(body)
    if kind == "WPS":
        wps = WebProcessingService(URL, version="1.0.0", skip_caps=True)
        wps.getcapabilities(xml=body)
        return wps.identification.title, [(p.identifier, p.title, None) for p in wps.processes]
    if kind == "SOS":
        from owslib.sos import SensorObservationService

        sos = SensorObservationService(URL, version=version, xml=body)
        return sos.identification.title, [
            (key, o.name, _sos_box(o.bbox, o.bbox_srs)) for key, o in sos.contents.items()
        ]
    if kind == "CSW":
        from owslib.catalogue import csw2, csw3

        # OWSLib's catalogue client only reads from the network: hand it the bytes instead.
        module = csw3 if version.startswith("3") else csw2
        with mock.patch.object(module, "openURL", lambda *args, **kwargs: io.BytesIO(body)):
            csw = module.CatalogueServiceWeb(URL, version=version)
        return csw.identification.title, []
    if (kind, version) == ("WCS", "1.1.0") and OWS11 in body:
        # correction: OWSLib's WCS 1.1.0 reader knows only OWS 1.0 elements; WCS 1.1.0 documents written with
        # OWS 1.1 (as the standard has them, e.g. MapServer's) are read by its 1.1.1 reader.
        body, version = body.replace(WCS11_NS, WCS111_NS), "1.1.1"
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
    if (kind, version) == ("WFS", "1.0.0"):
        # correction: OWSLib reprojects the LatLongBoundingBox from the feature type's SRS, though WFS 1.0.0
        # defines it in WGS84 degrees; the box as written is the box.
        datasets = [(key, title, _lat_long_box(body, key)) for key, title, _ in datasets]
    return service.identification.title, datasets


def _wps20_reading(body: bytes) -> tuple[str | None, list[tuple]]:
    root = etree.fromstring(body)
    summaries = root.iterfind("{*}Contents/{*}ProcessSummary")
    return root.findtext("{*}ServiceIdentification/{*}Title"), [
        (s.findtext("{*}Identifier"), s.findtext("{*}Title"), None) for s in summaries
    ]


def _sos_box(box, srs) -> tuple | None:
    """correction: OWSLib swaps the envelope's axes whatever its CRS; WGS84 boxes only, longitude first."""
    order = lat_first(getattr(srs, "id", None))
    if box is None or order is None:
        return None
    return box if order else (box[1], box[0], box[3], box[2])


def _lat_long_box(body: bytes, name: str) -> tuple | None:
    root = etree.fromstring(body)
    for feature_type in root.iterfind("{*}FeatureTypeList/{*}FeatureType"):
        if feature_type.findtext("{*}Name") == name:
            box = feature_type.find("{*}LatLongBoundingBox")
            return None if box is None else tuple(float(box.get(k)) for k in ("minx", "miny", "maxx", "maxy"))
    return None


async def _unreachable(url: str, **kwargs):
    raise HTTPStatusError(404, url=url)


def crawled(path: Path):
    """What the crawl's OGC detector reports for the document served at ``URL`` (no follow-up requests)."""
    settings = Settings(describe_feature_types=0)
    ctx = DetectContext(_unreachable, settings, OGC_TYPES, lambda key: False, Counter())
    response = Response(URL, URL, 200, {"content-type": "text/xml"}, path.read_bytes())
    return asyncio.run(OGCDetector().detect(response, ctx))


def _same_box(ours, theirs) -> bool:
    if theirs is None or not all(math.isfinite(v) for v in theirs[:4]):
        return ours is None
    return ours is not None and all(
        math.isclose(a, b, abs_tol=1e-9) for a, b in zip(ours, theirs[:4], strict=True)
    )


def _stripped(value: str | None) -> str | None:
    return value.strip() or None if value else None


@pytest.mark.parametrize("case", CASES)
def test_crawl_reads_type_version_and_what_owslib_reads(case):
    path, kind, version = case
    [resource] = crawled(path)
    assert (resource.type, resource.version, resource.url) == (kind, version, URL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # OWSLib warns about duplicate layers and deprecated calls
        title, theirs = owslib_reading(kind, version, path.read_bytes())
    first_of_each_name: dict[str, tuple] = {}
    for dataset in theirs:
        first_of_each_name.setdefault(dataset[0], dataset)
    theirs = list(first_of_each_name.values())
    assert resource.title == _stripped(title)
    assert [d.name for d in resource.datasets] == [name for name, _, _ in theirs]
    for dataset, (name, title, box) in zip(resource.datasets, theirs, strict=True):
        assert dataset.title == _stripped(title), name
        assert _same_box(dataset.bbox, box), (name, dataset.bbox, box)


def test_the_pre_1_0_wps_namespace_reads_all_its_processes():
    """The CEDA-shaped document: before, 'not a capabilities document'; OWSLib reads its 32 processes."""
    [wps] = crawled(INDEXED[1] / "wps_opengeospatial_100.xml")
    assert (wps.type, wps.version, wps.title) == ("WPS", "1.0.0", "Climate Series Processing")
    assert len(wps.datasets) == 32
    assert wps.datasets[0].name == "SubsetRainfall"
