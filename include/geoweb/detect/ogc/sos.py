"""Sensor Observation Service 1.0 and 2.0, read by OWSLib's SensorObservationService: observation
offerings, with their boxes in WGS84 (``adapter.sos_bbox``)."""

from __future__ import annotations

from lxml import etree
from owslib.sos import SensorObservationService

from geoweb.detect.ogc import adapter
from geoweb.detect.ogc.common import Description, Items, ServiceType, owslib_description, owslib_service
from geoweb.models import Dataset
from geoweb.values import stripped

SOS10_NS = "http://www.opengis.net/sos/1.0"
SOS20_NS = "http://www.opengis.net/sos/2.0"


def read(root: etree._Element, version: str | None) -> Description:
    reader = "2.0.0" if etree.QName(root).namespace == SOS20_NS else "1.0.0"
    sos = owslib_service(SensorObservationService, reader, root)
    datasets = [
        Dataset(name=stripped(key), title=stripped(offering.name), bbox=adapter.sos_bbox(offering))
        for key, offering in sos.contents.items()
    ]
    return owslib_description(sos, datasets)


SERVICE = ServiceType(
    name="SOS",
    roots={(SOS10_NS, "Capabilities"): "1.0.0", (SOS20_NS, "Capabilities"): "2.0.0"},
    read=read,
    items=Items(
        paths=(".//{*}ObservationOffering",),
        name=("{*}identifier", "@{http://www.opengis.net/gml}id", "@{http://www.opengis.net/gml/3.2}id"),
        title=("{*}name", "{*}description"),
    ),
)
