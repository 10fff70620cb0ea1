"""Web Feature Service 1.0-2.0, read by OWSLib's WebFeatureService: feature types, and the schemas of those
no concept matches by name.

Feature types whose name, title and keywords match no concept of the ontology are described once per
service, all in one DescribeFeatureType request (at most ``describe_feature_types`` of them), and the
property names of their schemas go into ``Dataset.extra`` for the semantic matcher (Patil et al. 2014).
"""

from __future__ import annotations

import logging
from urllib.parse import quote

from lxml import etree
from owslib.wfs import WebFeatureService

from geoweb.detect.base import DetectContext
from geoweb.detect.ogc import adapter
from geoweb.detect.ogc.common import (
    EXCEPTION_ROOTS,
    Description,
    Items,
    ServiceType,
    exception_report,
    owslib_dataset,
    owslib_description,
    owslib_service,
    with_query,
)
from geoweb.errors import GeowebError, HTTPStatusError, MalformedContent
from geoweb.models import Resource
from geoweb.semantic.matcher import MAX_PROPERTIES, default_matcher
from geoweb.semantic.tagging import PROPERTIES_KEY
from geoweb.xmlsafe import parse_xml

log = logging.getLogger(__name__)

WFS_NS = "http://www.opengis.net/wfs"
WFS2_NS = "http://www.opengis.net/wfs/2.0"
XSD_NS = "http://www.w3.org/2001/XMLSchema"


def read(root: etree._Element, version: str | None) -> Description:
    if etree.QName(root).namespace == WFS2_NS:
        reader = "2.0.0"
    else:  # 1.0.0 and 1.1.0 share a namespace; a document without a version has the 1.1 sections or not
        old = (version or "").startswith("1.0") or (not version and root.find("{*}Service") is not None)
        reader = "1.0.0" if old else "1.1.0"
    wfs = owslib_service(WebFeatureService, reader, root)
    if reader == "1.0.0":
        return adapter.wfs100_description(wfs)
    return owslib_description(wfs, [owslib_dataset(name, ft) for name, ft in wfs.contents.items()])


def _local(qname: str | None) -> str:
    """``ms:lakesType`` -> ``lakesType``."""
    return (qname or "").rpartition(":")[2]


def _properties(complex_type: etree._Element) -> list[str]:
    """Property names of a feature type's complexType, its geometry properties left out."""
    names = []
    for element in complex_type.iter(f"{{{XSD_NS}}}element"):
        name = element.get("name") or _local(element.get("ref"))
        if name and not _local(element.get("type")).endswith("PropertyType"):  # gml:GeometryPropertyType...
            names.append(name)
    return names[:MAX_PROPERTIES]


def read_schema(body: bytes, max_bytes: int) -> dict[str, list[str]]:
    """Property names of each feature type (by element name) an XML Schema from DescribeFeatureType
    declares. Raises UnsafeContent, MalformedContent, or OGCExceptionReport for an exception report."""
    root = parse_xml(body, max_bytes=max_bytes, roots=("schema", *EXCEPTION_ROOTS))
    if root.tag != f"{{{XSD_NS}}}schema":
        raise exception_report(root) or MalformedContent(f"root element {root.tag} is no XML Schema")
    types = {t.get("name"): t for t in root.iterchildren(f"{{{XSD_NS}}}complexType") if t.get("name")}
    schema = {}
    for element in root.iterchildren(f"{{{XSD_NS}}}element"):
        name = element.get("name")
        complex_type = element.find(f"{{{XSD_NS}}}complexType")  # anonymous, inside the element
        if complex_type is None:
            complex_type = types.get(_local(element.get("type")))
        if name and complex_type is not None:
            schema[name] = _properties(complex_type)
    return schema


def describe_url(resource: Resource, names: list[str]) -> str:
    """The DescribeFeatureType request for ``names`` at the service's endpoint, in its version."""
    version = resource.version or "1.1.0"
    key = "typeNames" if version.startswith("2") else "typeName"
    names_param = quote(",".join(names), safe=",:")
    return with_query(
        resource.url, f"service=WFS&version={version}&request=DescribeFeatureType&{key}={names_param}"
    )


async def describe_unmatched(resource: Resource, ctx: DetectContext) -> None:
    """Schema property names for the feature types no concept matches, from one DescribeFeatureType per
    service per run. A failed or hostile answer is logged and counted; the resource stays as it is."""
    limit = ctx.settings.describe_feature_types
    matcher = default_matcher(ctx.settings.concept_lcs_threshold)
    unmatched = [d for d in resource.datasets if d.name and not matcher.match(d.name, d.title, d.keywords)]
    if not unmatched or limit <= 0 or not ctx.first_time("wfs-describe:" + resource.url):
        return
    unmatched = unmatched[:limit]
    url = describe_url(resource, [d.name for d in unmatched])
    ctx.stats["wfs/describe"] += 1
    try:
        response = await ctx.fetch(url, max_bytes=ctx.settings.schema_max_bytes)
        if response.status >= 400:
            raise HTTPStatusError(response.status, url=url)
        if not response.complete:
            raise MalformedContent(f"schema cut at {len(response.body)} bytes")
        schema = read_schema(response.body, ctx.settings.schema_max_bytes)
    except GeowebError as exc:
        ctx.stats[f"wfs/describe_miss/{exc.reason}"] += 1
        log.warning("%s: DescribeFeatureType not used (%s): %s", url, exc.reason, exc)
        return
    for dataset in unmatched:
        properties = schema.get(dataset.name) or schema.get(_local(dataset.name))
        if properties:
            dataset.extra[PROPERTIES_KEY] = properties


SERVICE = ServiceType(
    name="WFS",
    # 1.0.0 and 1.1.0 share a namespace; their version attribute tells them apart.
    roots={(WFS_NS, "WFS_Capabilities"): None, (WFS2_NS, "WFS_Capabilities"): "2.0.0"},
    read=read,
    items=Items(paths=(".//{*}FeatureTypeList/{*}FeatureType",)),
    complete=describe_unmatched,
)
