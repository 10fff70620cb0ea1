"""Catalogue Service for the Web 2.0.2 and 3.0: the catalogue's size and its first records, from one GetRecords
request. The records are the catalogue's datasets, so that what it holds finds it and its footprint is theirs;
the catalogue harvest (``geoweb.connectors.csw``) loads all of them."""

from __future__ import annotations

import logging
from urllib.parse import urlencode

from lxml import etree
from owslib.catalogue.csw2 import CswRecord
from owslib.catalogue.csw3 import Csw30Record

from geoweb.detect.base import DetectContext
from geoweb.detect.ogc import adapter
from geoweb.detect.ogc.common import (
    EXCEPTION_ROOTS,
    Description,
    ServiceType,
    exception_report,
    wgs84_box,
    with_query,
)
from geoweb.errors import GeowebError, MalformedContent
from geoweb.models import Dataset, Resource, union_bbox
from geoweb.values import stripped, words
from geoweb.xmlsafe import parse_xml

log = logging.getLogger(__name__)

CSW202_NS = "http://www.opengis.net/cat/csw/2.0.2"
CSW30_NS = "http://www.opengis.net/cat/csw/3.0"
DC_RECORDS = frozenset({"Record", "SummaryRecord", "BriefRecord"})  # Dublin Core records, by element set
# Records listed as datasets: one page of summaries, a few hundred kilobytes. A catalogue may hold millions.
FIRST_RECORDS = 100


def read(root: etree._Element, version: str | None) -> Description:
    return adapter.csw_description(root)


def records_url(endpoint: str, version: str | None) -> str:
    """The KVP GetRecords request of the first ``FIRST_RECORDS`` summary records and the number of all."""
    csw_ns = CSW30_NS if (version or "").startswith("3") else CSW202_NS
    query = {
        "service": "CSW",
        "version": version or "2.0.2",
        "request": "GetRecords",
        "typeNames": "csw:Record",
        "namespace": f"xmlns(csw={csw_ns})",
        "resultType": "results",
        "elementSetName": "summary",
        "maxRecords": FIRST_RECORDS,
    }
    return with_query(endpoint, urlencode(query))


def search_results(root: etree._Element) -> etree._Element:
    """The ``SearchResults`` of a GetRecords response; the exception report or MalformedContent otherwise."""
    report = exception_report(root)
    if report is not None:
        raise report
    results = root.find("{*}SearchResults")
    if etree.QName(root).localname != "GetRecordsResponse" or results is None:
        raise MalformedContent(f"not a GetRecords response (root {root.tag})")
    return results


def matched_records(root: etree._Element) -> int:
    """``numberOfRecordsMatched`` of a GetRecords response; raises for anything else."""
    value = search_results(root).get("numberOfRecordsMatched", "").strip()
    if not value.isdigit():
        raise MalformedContent(f"numberOfRecordsMatched is {value!r}")
    return int(value)


def record_dataset(entry: etree._Element) -> Dataset | None:
    """A Dublin Core record of a GetRecords answer, read by OWSLib, as a dataset: its identifier, title,
    subjects, box and type; None without an identifier or in another schema (ISO 19139)."""
    name = etree.QName(entry)
    if name.localname not in DC_RECORDS or name.namespace not in (CSW202_NS, CSW30_NS):
        return None
    record = (Csw30Record if name.namespace == CSW30_NS else CswRecord)(entry)
    identifier = stripped(record.identifier)
    if identifier is None:
        return None
    boxes = (wgs84_box(record.bbox), wgs84_box(getattr(record, "bbox_wgs84", None)))
    kind = stripped(record.type)
    return Dataset(
        name=identifier,
        title=stripped(record.title),
        keywords=words(record.subjects),
        bbox=union_bbox(boxes),
        extra={"type": kind} if kind else {},
    )


async def list_records(resource: Resource, ctx: DetectContext) -> None:
    """Set ``extra["records"]`` to the number of records and the datasets to the first ``FIRST_RECORDS``,
    the resource's box holding theirs; a failed request leaves the count None and logs why."""
    resource.extra["records"] = None
    url = records_url(resource.url, resource.version)
    try:
        response = await ctx.fetch(url)
        root = parse_xml(response.body, roots=("GetRecordsResponse", *EXCEPTION_ROOTS))
        matched = matched_records(root)
    except GeowebError as exc:
        ctx.stats["ogc/csw_records_miss"] += 1
        log.info("CSW %s: records not listed (%s): %s", resource.url, exc.reason, exc)
        return
    resource.extra["records"] = matched
    entries = [e for e in search_results(root) if isinstance(e.tag, str)]
    resource.datasets = [d for d in map(record_dataset, entries[:FIRST_RECORDS]) if d is not None]
    resource.bbox = union_bbox([resource.bbox, *(d.bbox for d in resource.datasets)])


SERVICE = ServiceType(
    name="CSW",
    roots={(CSW202_NS, "Capabilities"): "2.0.2", (CSW30_NS, "Capabilities"): "3.0.0"},
    read=read,
    complete=list_records,
)
