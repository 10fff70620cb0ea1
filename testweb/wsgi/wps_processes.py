"""Real geometry processes for PyWPS: buffer, bounding box and centroid of a GeoJSON geometry."""

import json

from pywps import (
    FORMATS,
    BoundingBoxOutput,
    ComplexInput,
    ComplexOutput,
    LiteralInput,
    LiteralOutput,
    Process,
)
from shapely.geometry import mapping, shape


def _geometry(request):
    return shape(json.loads(request.inputs["geometry"][0].data))


def _geometry_input():
    return ComplexInput("geometry", "Input geometry (GeoJSON)", supported_formats=[FORMATS.GEOJSON])


class Buffer(Process):
    def __init__(self):
        super().__init__(
            self._handler,
            identifier="buffer",
            title="Buffer",
            abstract="Buffers a geometry by a distance in its own units.",
            version="1.0",
            inputs=[_geometry_input(), LiteralInput("distance", "Buffer distance", data_type="float")],
            outputs=[ComplexOutput("buffered", "Buffered geometry", supported_formats=[FORMATS.GEOJSON])],
        )

    @staticmethod
    def _handler(request, response):
        distance = request.inputs["distance"][0].data
        response.outputs["buffered"].data = json.dumps(mapping(_geometry(request).buffer(distance)))
        return response


class BBox(Process):
    def __init__(self):
        super().__init__(
            self._handler,
            identifier="bbox",
            title="Bounding box",
            abstract="The bounding box of a geometry.",
            version="1.0",
            inputs=[_geometry_input()],
            outputs=[BoundingBoxOutput("bbox", "Bounding box", crss=["EPSG:4326"])],
        )

    @staticmethod
    def _handler(request, response):
        response.outputs["bbox"].data = list(_geometry(request).bounds)
        return response


class Centroid(Process):
    def __init__(self):
        super().__init__(
            self._handler,
            identifier="centroid",
            title="Centroid",
            abstract="The centroid of a geometry, as WKT.",
            version="1.0",
            inputs=[_geometry_input()],
            outputs=[LiteralOutput("centroid", "Centroid (WKT)", data_type="string")],
        )

    @staticmethod
    def _handler(request, response):
        response.outputs["centroid"].data = _geometry(request).centroid.wkt
        return response


PROCESSES = [Buffer(), BBox(), Centroid()]
