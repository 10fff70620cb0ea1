"""OGC web services (WMS, WFS, WCS, WMTS, WPS, SOS, CSW) recognised by their capabilities documents.

Classify cheaply, identify by the root, judge conformance with OWSLib. ``sniff`` (``xmlsafe``) names the
root element from its start tag (no tree, no DTD, no entities, no network); only a capabilities root or an
exception report goes on to ``read_capabilities``, which parses the whole document with the hardened parser
(hostile XML stops there; sloppy XML is repaired and its defects named), decides type and version from the
root, its namespace and version, and hands the tree to OWSLib's reader for that type and version. A
document whose root says what it is, and that is no exception report, is a service: OWSLib decides how
conformant it is (``Conformance``), and where OWSLib cannot read it, ``lenient`` reads what it can.
``adapter`` corrects OWSLib where it errs on real documents and completes it where it has no reader. The
crawl runs ``read_capabilities`` in a process pool (``pool``), off its event loop.

One module per service type declares its capabilities roots (namespace, element) and its reader; a new
service type is one module and one line in ``SERVICES``.

The detector classifies what the crawl fetched. Only where the URL or the response shows an OGC endpoint
does it ask that endpoint, once per run, for the capabilities of the other wanted types.
"""

from __future__ import annotations

import logging
import warnings

from lxml import etree

from geoweb.detect.base import DetectContext, Detector
from geoweb.detect.ogc import csw, lenient, sos, wcs, wfs, wms, wmts, wps
from geoweb.detect.ogc.common import (
    EXCEPTION_ROOTS,
    NotCapabilities,
    OGCExceptionReport,
    Root,
    ServiceType,
    canonical_endpoint,
    capabilities_url,
    exception_report,
    points_to_endpoint,
    unique_by_name,
)
from geoweb.detect.ogc.pool import ValidationCrashed, ValidationMemory, ValidationTimeout
from geoweb.detect.ogc.readings import readings
from geoweb.errors import GeowebError, MalformedContent, UnsafeContent
from geoweb.fetch.response import Response
from geoweb.models import OGC_TYPES, Conformance, ProofFetch, Resource, sha256, union_bbox
from geoweb.settings import Settings
from geoweb.xmlsafe import DEFAULT_MAX_BYTES, looks_like_xml, parse_xml_leniently, sniff

log = logging.getLogger(__name__)

SERVICES: tuple[ServiceType, ...] = (
    wms.SERVICE,
    wfs.SERVICE,
    wcs.SERVICE,
    wmts.SERVICE,
    wps.SERVICE,
    sos.SERVICE,
    csw.SERVICE,
)
_BY_ROOT = {root: service for service in SERVICES for root in service.roots}
_BY_TYPE = {service.name: service for service in SERVICES}
# Roots written without their namespace, by local names that only one service type uses ("Capabilities" is
# everyone's).
_SERVICES_BY_LOCAL_NAME = {
    name: {s.name for (_, n), s in _BY_ROOT.items() if n == name} for _, name in _BY_ROOT
}
_BY_LOCAL_NAME = {
    name: _BY_TYPE[next(iter(names))] for name, names in _SERVICES_BY_LOCAL_NAME.items() if len(names) == 1
}
# what becomes of a document with a capabilities root that could not be read within the pool's bounds
VALIDATION_MISSES = (ValidationTimeout, ValidationMemory, ValidationCrashed)


def worth_reading(root: Root) -> bool:
    """Whether a root is a capabilities root or an OGC exception report, the documents worth a full read."""
    return root in _BY_ROOT or (root[0] is None and root[1] in _BY_LOCAL_NAME) or root[1] in EXCEPTION_ROOTS


def classify(root: etree._Element) -> tuple[ServiceType, str | None, list[str]]:
    """The service type and version of a capabilities document, from its root element, namespace and
    version attribute, and the defects found in them: a root without its namespace is known by a local name
    only one type uses; a version attribute whose major and minor numbers contradict the namespace loses to
    it. Raises OGCExceptionReport for an exception report, NotCapabilities for any other root."""
    qname = etree.QName(root)
    key = (qname.namespace, qname.localname)
    service, implied, defects = _BY_ROOT.get(key), None, []
    if service is not None:
        implied = service.roots[key]
    elif (report := exception_report(root)) is not None:
        raise report
    elif qname.namespace is None and qname.localname in _BY_LOCAL_NAME:
        service = _BY_LOCAL_NAME[qname.localname]
        defects.append(f"root element {qname.localname} without its namespace")
    else:
        raise NotCapabilities(f"root element {root.tag} is no capabilities root")
    version = (root.get("version") or "").strip() or None
    if version and implied and version.split(".")[:2] != implied.split(".")[:2]:
        defects.append(f"version attribute {version} where the namespace says {implied}")
        version = implied
    return service, version or implied, defects


def read_capabilities(body: bytes, url: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Resource:
    """The service a capabilities document describes, as a resource at ``url``, with its conformance.

    The document is repaired where it can be (``parse_xml_leniently``, decimal commas) and read by OWSLib;
    where OWSLib fails, ``lenient.describe`` reads it. ``conformant``: OWSLib read it and no defect was
    found; ``readable``: a title or datasets were read, the defects are named; ``identified``: type and
    version alone. Raises UnsafeContent or MalformedContent for XML that cannot be parsed safely or at all
    (OWSLib never sees it), OGCExceptionReport for an exception report and NotCapabilities for any other
    document.
    """
    root, defects = parse_xml_leniently(body, max_bytes=max_bytes)
    service, version, root_defects = classify(root)
    defects += root_defects + lenient.missing_sections(root) + lenient.repair_decimal_commas(root)
    defects += lenient.unreadable_boxes(root)
    owslib_error = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # OWSLib warns about repeated layers and its own deprecations
            description = service.read(root, version)
    except MemoryError:
        raise
    except Exception as exc:  # OWSLib raises whatever a broken document makes it meet
        owslib_error = f"OWSLib's {service.name} reader cannot read it: {type(exc).__name__}: {exc}"[:300]
        description = lenient.describe(root, service.items)
        if not defects:  # a shape OWSLib has no reader for (WMS 1.0.0), or a fault no check here names
            defects.append(f"not readable by OWSLib's {service.name} reader")
    datasets = unique_by_name(description.datasets)
    if owslib_error is None and not defects:
        conformance = Conformance.CONFORMANT
    elif description.title or datasets:
        conformance = Conformance.READABLE
    else:
        conformance = Conformance.IDENTIFIED
    return Resource(
        url=url,
        type=service.name,
        version=version,
        title=description.title,
        abstract=description.abstract,
        keywords=description.keywords,
        provider=description.provider,
        datasets=datasets,
        bbox=union_bbox(d.bbox for d in datasets),
        extra=description.extra,
        content_sha256=sha256(body),
        conformance=conformance,
        defects=defects,
        owslib_error=owslib_error,
    )


async def read_response(response: Response, settings: Settings) -> Resource:
    """``read_capabilities`` on a fetched response, in the validation pool (once per distinct body:
    ``readings``), at the endpoint it came from (not the one the document claims: documents lie). Only
    documents whose root ``sniff`` finds worth reading go to the pool; the rest are NotCapabilities at once. The
    resource carries how the response's fetch answered (``proof``)."""
    if not response.complete:
        raise MalformedContent(f"body cut at {len(response.body)} bytes")
    root = sniff(response.body, max_bytes=settings.max_xml_bytes)
    if not worth_reading(root):
        raise NotCapabilities(f"root element {etree.QName(*root).text} is no capabilities root")
    endpoint = canonical_endpoint(response.final_url)
    resource = await readings(settings).read(response.body, endpoint, settings.max_xml_bytes)
    resource.proof = fetch_proof(response)
    return resource


def fetch_proof(response: Response) -> ProofFetch | None:
    """How a timed response's fetch answered, which the crawl stores as a measured GetCapabilities of the
    services its document proves (``proved_by``)."""
    timing = response.timing
    if timing is None:
        return None
    return ProofFetch(response.status, timing.first_byte_seconds, timing.total_seconds, timing.bytes)


def proved_by(resource: Resource, response: Response) -> bool:
    """Whether ``resource`` is the OGC service a response's capabilities describe: read at the endpoint the
    response came from, as ``read_response`` reads it."""
    return resource.type in OGC_TYPES and resource.url == canonical_endpoint(response.final_url)


class OGCDetector(Detector):
    name = "ogc"
    types = OGC_TYPES

    def accepts(self, response: Response) -> bool:
        return (
            "xml" in response.content_type
            or looks_like_xml(response.body[:64])
            or points_to_endpoint(response.final_url)
        )

    async def detect(self, response: Response, ctx: DetectContext) -> list[Resource]:
        endpoint = canonical_endpoint(response.final_url)
        found: dict[str, Resource] = {}
        resource, answered_as_ogc = await self._read_page(response, ctx)
        if resource is not None:
            found[resource.type] = resource
        missing = [s for s in SERVICES if ctx.wants(s.name) and s.name not in found]
        at_endpoint = answered_as_ogc or points_to_endpoint(response.final_url)
        if missing and at_endpoint and ctx.first_time("ogc-probe:" + endpoint):
            await self._probe(endpoint, missing, found, ctx)

        resources = [r for r in found.values() if ctx.wants(r.type)]
        for resource in resources:
            complete = _BY_TYPE[resource.type].complete
            if complete is not None:
                await complete(resource, ctx)
        return resources

    async def _read_page(self, response: Response, ctx: DetectContext) -> tuple[Resource | None, bool]:
        """The service the crawled response describes, if any, and whether an OGC server answered (a
        capabilities document or an exception report). Every miss is counted and logged with its reason, every
        service counted by its conformance and its defects logged."""
        try:
            resource = await read_response(response, ctx.settings)
        except GeowebError as exc:
            ctx.stats[f"ogc/{exc.reason}"] += 1
            if isinstance(exc, UnsafeContent):
                log.warning("%s: rejected: %s", response.final_url, exc)
            elif isinstance(exc, OGCExceptionReport):
                log.info("%s: no capabilities: %s", response.final_url, exc)
                return None, True
            elif isinstance(exc, NotCapabilities):  # most XML on the web: feeds, sitemaps, KML
                log.debug("%s: not an OGC service: %s", response.final_url, exc)
            elif isinstance(exc, VALIDATION_MISSES):  # a capabilities root, not read within the bounds
                log.warning("%s: capabilities not read (%s): %s", response.final_url, exc.reason, exc)
                return None, True
            else:
                log.info("%s: not an OGC service (%s): %s", response.final_url, exc.reason, exc)
            return None, False
        ctx.stats[f"ogc/{resource.conformance}"] += 1
        if resource.defects:
            log.info("%s: %s %s, %s: %s", response.final_url, resource.type, resource.version,
                     resource.conformance, "; ".join(resource.defects))  # fmt: skip
        return resource, True

    async def _probe(
        self, endpoint: str, services: list[ServiceType], found: dict[str, Resource], ctx: DetectContext
    ) -> None:
        """GetCapabilities for each service type not found yet, one at a time and under the body cap (a
        crawl process holds one probe's answer at most; its root is checked before any tree is built); an
        answer of another type counts too (an endpoint answering every ``service=`` with one document is one
        service), and a type found so is not asked for again."""
        for service in services:
            if service.name in found:
                continue
            url = capabilities_url(endpoint, service.name)
            ctx.stats["ogc/probe"] += 1
            try:
                resource = await read_response(await ctx.fetch(url), ctx.settings)
            except GeowebError as exc:
                ctx.stats["ogc/probe_miss"] += 1
                log.debug("probe %s missed (%s): %s", url, exc.reason, exc)
                continue
            found.setdefault(resource.type, resource)


__all__ = [
    "SERVICES",
    "NotCapabilities",
    "OGCDetector",
    "OGCExceptionReport",
    "canonical_endpoint",
    "classify",
    "read_capabilities",
    "read_response",
    "sniff",
]
