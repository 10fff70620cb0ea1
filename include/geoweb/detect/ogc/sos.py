"""Sensor Observation Service 1.0 and 2.0: observation offerings."""

from __future__ import annotations

from lxml import etree

from geoweb.detect.ogc.common import (
    Description,
    ServiceType,
    envelope_bbox,
    find_first,
    ows_description,
    text,
)
from geoweb.models import Dataset

SOS10_NS = "http://www.opengis.net/sos/1.0"
SOS20_NS = "http://www.opengis.net/sos/2.0"
# SOS 1.0 names an offering by its gml:id; 2.0 by swes:identifier.
_GML_IDS = ("{http://www.opengis.net/gml}id", "{http://www.opengis.net/gml/3.2}id")


def extract(root: etree._Element) -> Description:
    offerings = (
        *root.iterfind("{*}Contents/{*}ObservationOfferingList/{*}ObservationOffering"),  # 1.0
        *root.iterfind("{*}contents/{*}Contents/{*}offering/{*}ObservationOffering"),  # 2.0
    )
    datasets = [
        Dataset(
            name=_offering_name(offering),
            title=text(offering, "{*}name"),
            # A gml:Envelope in EPSG:4326 is lat/lon.
            bbox=envelope_bbox(
                find_first(offering, "{*}boundedBy/{*}Envelope", "{*}observedArea/{*}Envelope")
            ),
        )
        for offering in offerings
    ]
    return ows_description(root, datasets)


def _offering_name(offering: etree._Element) -> str | None:
    ids = (offering.get(key, "").strip() for key in _GML_IDS)
    return text(offering, "{*}identifier") or next(filter(None, ids), None)


SERVICE = ServiceType(
    name="SOS",
    roots={(SOS10_NS, "Capabilities"): "1.0.0", (SOS20_NS, "Capabilities"): "2.0.0"},
    extract=extract,
)
