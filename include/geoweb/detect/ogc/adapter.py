"""Where OWSLib is wrong on real documents, or has no reader: every correction and completion in one place.

Each case names the document it was found on; tests/unit/test_ogc_adapter.py holds a test for each, and the
conformance suite (tests/conformance/test_ogc_corpus.py) checks the crawl's output against OWSLib's reading
plus exactly these corrections.

- WFS 1.0.0 (corpus wfs_dov_getcapabilities_100_nometadata.xml): OWSLib reprojects the LatLongBoundingBox
  from the feature type's SRS, though WFS 1.0.0 (OGC 02-058, 7.3.3) defines it in WGS84 degrees already;
  it keeps a Keywords text (the service's, a feature type's) as one keyword, commas or line breaks included
  (captured mapserver_wfs_100.xml); and it reports the service's Name ("MapServer WFS") as the provider,
  which WFS 1.0.0 does not state.
- WCS 1.1.0 (captured mapserver_wcs_110.xml): OWSLib's 1.1.0 reader knows OWS 1.0 elements only and fails
  on documents written with OWS 1.1, as the standard has them; its 1.1.1 reader reads them.
- WCS 2.0 (OGC 09-110r4, CoverageSummary; the tests write one to the schema): OWSLib's 2.0 readers
  look for a WCS 1.0 lonLatEnvelope, which 2.0 has not; the summary's ows:WGS84BoundingBox is read here.
- SOS 1.0 and 2.0 (corpus sos_52n_getcapabilities.xml): OWSLib swaps the envelope's axes whatever its CRS;
  the box is WGS84 only for EPSG:4326 (latitude first) or CRS84 (longitude first, unswapped here).
- WPS 2.0 (captured pywps_wps_200.xml): OWSLib has no reader; its OWS Common classes read the service
  metadata, and the process summaries are read here.
- CSW (captured pycsw_csw_202.xml, pycsw_csw_300.xml): OWSLib's CatalogueServiceWeb reads its capabilities
  only from the network; its OWS Common classes read them from the bytes already fetched.
"""

from __future__ import annotations

import re
from types import SimpleNamespace

from lxml import etree
from owslib import ows

from geoweb.detect.ogc.common import (
    Description,
    corner_bbox,
    lat_first,
    listed_bbox,
    owslib_bytes,
    owslib_dataset,
    owslib_description,
)
from geoweb.models import BBox, Dataset
from geoweb.values import stripped, words

# --- WFS 1.0.0 ---


def wfs100_description(wfs) -> Description:
    """An OWSLib WFS 1.0.0 reading with the boxes, keywords and provider corrected."""
    datasets = []
    for name, feature_type in wfs.contents.items():
        dataset = owslib_dataset(name, feature_type)
        dataset.bbox = _lat_long_box(feature_type)
        dataset.keywords = _split_keywords(feature_type.keywords)
        datasets.append(dataset)
    description = owslib_description(wfs, datasets)
    description.keywords = _split_keywords(wfs.identification.keywords)
    description.provider = None
    return description


def _lat_long_box(feature_type) -> BBox | None:
    box = getattr(feature_type, "boundingBox", None)  # (minx, miny, maxx, maxy, srs) as written
    return listed_bbox(box[:4]) if box else None


def _split_keywords(texts) -> list[str]:
    """WFS 1.0 Keywords texts, split at commas or semicolons (at white space when they have neither)."""
    found = []
    for text in filter(None, map(stripped, texts or ())):
        found += re.split(r"[,;]" if re.search(r"[,;]", text) else r"\s+", text)
    return words(found)


# --- WCS 1.1.0 ---

_WCS11 = b'"http://www.opengis.net/wcs/1.1"'
_WCS111 = b'"http://www.opengis.net/wcs/1.1.1"'
_OWS11 = "http://www.opengis.net/ows/1.1"


def wcs_reading(root: etree._Element, reader: str) -> tuple[bytes, str]:
    """The bytes and OWSLib reader version for a WCS document: a 1.1.0 document written with OWS 1.1 goes
    to the 1.1.1 reader, its namespace renamed to match."""
    body = owslib_bytes(root)
    if reader == "1.1.0" and _OWS11 in root.nsmap.values():
        return body.replace(_WCS11, _WCS111), "1.1.1"
    return body, reader


def wcs20_bbox(coverage) -> BBox | None:
    """A WCS 2.0 coverage summary's ows:WGS84BoundingBox (longitude first)."""
    summary = getattr(coverage, "_elem", None)
    box = None if summary is None else summary.find("{*}WGS84BoundingBox")
    if box is None:
        return None
    return corner_bbox(
        _child_text(box, "{*}LowerCorner"), _child_text(box, "{*}UpperCorner"), lat_first=False
    )


# --- SOS ---


def sos_bbox(offering) -> BBox | None:
    """An offering's WGS84 box: OWSLib's swapped one for EPSG:4326, unswapped for CRS84, None otherwise."""
    box, srs = getattr(offering, "bbox", None), getattr(offering, "bbox_srs", None)
    if not box:
        return None
    order = lat_first(getattr(srs, "id", None))  # the srsName as written
    if order is None:
        return None
    west, south, east, north = box[:4]  # OWSLib took the first axis for latitude
    if order:
        return listed_bbox((west, south, east, north))
    return listed_bbox((south, west, north, east))


# --- OWS Common service metadata (WPS 2.0, CSW) ---


def _ows_description(root: etree._Element, datasets: list[Dataset]) -> Description:
    """Service metadata through OWSLib's OWS Common classes, in the OWS namespace the document uses."""
    service = SimpleNamespace(identification=None, provider=None)
    ident = root.find("{*}ServiceIdentification")
    if ident is not None:
        service.identification = ows.ServiceIdentification(ident, etree.QName(ident).namespace)
    provider = root.find("{*}ServiceProvider")
    if provider is not None:
        service.provider = ows.ServiceProvider(provider, etree.QName(provider).namespace)
    return owslib_description(service, datasets)


def csw_description(root: etree._Element) -> Description:
    """A CSW 2.0.2 or 3.0 capabilities document's service metadata."""
    return _ows_description(root, [])


def wps20_description(root: etree._Element) -> Description:
    """A WPS 2.0 capabilities document: OWS Common metadata, and its ProcessSummary elements."""
    processes = [
        Dataset(name=_child_text(summary, "{*}Identifier"), title=_child_text(summary, "{*}Title"))
        for summary in root.iterfind("{*}Contents/{*}ProcessSummary")
    ]
    return _ows_description(root, processes)


def _child_text(elem: etree._Element, path: str) -> str | None:
    """The stripped text of the first element at ``path``."""
    node = elem.find(path)
    return None if node is None else stripped(node.text)
