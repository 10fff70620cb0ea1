"""Catalogue Service for the Web 2.0.2 and 3.0: the catalogue's size from one GetRecords hits request."""

from __future__ import annotations

import logging
from urllib.parse import urlencode

from lxml import etree

from geoweb.detect.base import DetectContext
from geoweb.detect.ogc import adapter
from geoweb.detect.ogc.common import EXCEPTION_ROOTS, Description, ServiceType, exception_report, with_query
from geoweb.errors import GeowebError, MalformedContent
from geoweb.models import Resource
from geoweb.xmlsafe import parse_xml

log = logging.getLogger(__name__)

CSW202_NS = "http://www.opengis.net/cat/csw/2.0.2"
CSW30_NS = "http://www.opengis.net/cat/csw/3.0"


def read(root: etree._Element, version: str | None) -> Description:
    # records are counted, not listed: a catalogue may hold millions
    return adapter.csw_description(root)


def records_url(endpoint: str, version: str | None) -> str:
    """The KVP GetRecords request that asks only for the number of matching records."""
    csw_ns = CSW30_NS if (version or "").startswith("3") else CSW202_NS
    query = {
        "service": "CSW",
        "version": version or "2.0.2",
        "request": "GetRecords",
        "typeNames": "csw:Record",
        "namespace": f"xmlns(csw={csw_ns})",
        "resultType": "hits",
        "elementSetName": "brief",
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


async def count_records(resource: Resource, ctx: DetectContext) -> None:
    """Set ``extra["records"]``; a failed request leaves it None and logs why."""
    resource.extra["records"] = None
    url = records_url(resource.url, resource.version)
    try:
        response = await ctx.fetch(url)  # a hits answer is a few hundred bytes: the body cap is ample
        root = parse_xml(response.body, roots=("GetRecordsResponse", *EXCEPTION_ROOTS))
        resource.extra["records"] = matched_records(root)
    except GeowebError as exc:
        ctx.stats["ogc/csw_hits_miss"] += 1
        log.info("CSW %s: records not counted (%s): %s", resource.url, exc.reason, exc)


SERVICE = ServiceType(
    name="CSW",
    roots={(CSW202_NS, "Capabilities"): "2.0.2", (CSW30_NS, "Capabilities"): "3.0.0"},
    read=read,
    complete=count_records,
)
