"""OGC web services (WMS, WFS, WCS, WMTS, WPS, SOS, CSW) recognised by their capabilities documents.

One module per service type declares its capabilities roots (namespace, element) and its metadata
extractor; ``read_capabilities`` dispatches on the root. A new service type is one module and one line in
``SERVICES``.

The detector classifies what the crawl fetched. Only where the URL or the response shows an OGC endpoint
does it ask that endpoint, once per run, for the capabilities of the other wanted types.
"""

from __future__ import annotations

import asyncio
import logging

from lxml import etree

from geoweb.detect.base import DetectContext, Detector
from geoweb.detect.ogc import csw, sos, wcs, wfs, wms, wmts, wps
from geoweb.detect.ogc.common import (
    NotCapabilities,
    OGCExceptionReport,
    ServiceType,
    canonical_endpoint,
    capabilities_url,
    exception_report,
    points_to_endpoint,
    unique_by_name,
)
from geoweb.errors import GeowebError, MalformedContent, UnsafeContent
from geoweb.fetch.response import Response
from geoweb.models import OGC_TYPES, Resource, sha256, union_bbox
from geoweb.xmlsafe import DEFAULT_MAX_BYTES, looks_like_xml, parse_xml

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


def read_capabilities(body: bytes, url: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Resource:
    """The service a capabilities document describes, as a resource at ``url``.

    Raises UnsafeContent or MalformedContent for XML that cannot be parsed safely, OGCExceptionReport for an
    exception report and NotCapabilities for any other document.
    """
    root = parse_xml(body, max_bytes=max_bytes)
    qname = etree.QName(root)
    key = (qname.namespace, qname.localname)
    service = _BY_ROOT.get(key)
    if service is None:
        raise exception_report(root) or NotCapabilities(f"root element {root.tag} is no capabilities root")
    description = service.extract(root)
    datasets = unique_by_name(description.datasets)
    return Resource(
        url=url,
        type=service.name,
        version=(root.get("version") or "").strip() or service.roots[key],
        title=description.title,
        abstract=description.abstract,
        keywords=description.keywords,
        provider=description.provider,
        datasets=datasets,
        bbox=union_bbox(d.bbox for d in datasets),
        content_sha256=sha256(body),
    )


def read_response(response: Response, max_bytes: int = DEFAULT_MAX_BYTES) -> Resource:
    """``read_capabilities`` on a fetched response, at the endpoint it came from (not the one the document
    claims: documents lie)."""
    if not response.complete:
        raise MalformedContent(f"body cut at {len(response.body)} bytes")
    return read_capabilities(response.body, canonical_endpoint(response.final_url), max_bytes=max_bytes)


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
        resource, answered_as_ogc = self._read_page(response, ctx)
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

    def _read_page(self, response: Response, ctx: DetectContext) -> tuple[Resource | None, bool]:
        """The service the crawled response describes, if any, and whether an OGC server answered (a
        capabilities document or an exception report). Every miss is counted and logged with its reason."""
        try:
            return read_response(response, ctx.settings.max_xml_bytes), True
        except GeowebError as exc:
            ctx.stats[f"ogc/{exc.reason}"] += 1
            if isinstance(exc, UnsafeContent):
                log.warning("%s: rejected: %s", response.final_url, exc)
            elif isinstance(exc, OGCExceptionReport):
                log.info("%s: no capabilities: %s", response.final_url, exc)
                return None, True
            elif isinstance(exc, NotCapabilities):  # most XML on the web: feeds, sitemaps, KML
                log.debug("%s: not an OGC service: %s", response.final_url, exc)
            else:
                log.info("%s: not an OGC service (%s): %s", response.final_url, exc.reason, exc)
            return None, False

    async def _probe(
        self, endpoint: str, services: list[ServiceType], found: dict[str, Resource], ctx: DetectContext
    ) -> None:
        """GetCapabilities for each service type not found yet, sent together (the host's slot paces them);
        an answer of another type counts too (an endpoint answering every ``service=`` with one document is
        one service)."""

        async def probe(service: ServiceType) -> Resource | None:
            url = capabilities_url(endpoint, service.name)
            ctx.stats["ogc/probe"] += 1
            try:
                probed = await ctx.fetch(url, max_bytes=ctx.settings.max_xml_bytes)
                return read_response(probed, ctx.settings.max_xml_bytes)
            except GeowebError as exc:
                ctx.stats["ogc/probe_miss"] += 1
                log.debug("probe %s missed (%s): %s", url, exc.reason, exc)
                return None

        for resource in await asyncio.gather(*(probe(s) for s in services)):
            if resource is not None:
                found.setdefault(resource.type, resource)


__all__ = [
    "SERVICES",
    "NotCapabilities",
    "OGCDetector",
    "OGCExceptionReport",
    "canonical_endpoint",
    "read_capabilities",
    "read_response",
]
