"""Which portal links are candidates for validation, by what the portal says or, failing that, by their URL;
and a dataset's footprint from GeoJSON or a box, with anything else refused."""

from __future__ import annotations

import pytest

from geoweb.connectors.candidates import candidate_type, candidates, footprint
from geoweb.models import OnlineResource

CASES = [
    # what the portal says
    (OnlineResource("https://x.gov/a", "WMS"), "WMS"),
    (OnlineResource("https://x.gov/a", "OGC:WFS"), "WFS"),
    (OnlineResource("https://x.gov/a", "OGC:WMS-1.1.1-http-get-map"), "WMS"),
    (OnlineResource("https://x.gov/a", "Web Map Tile Service"), "WMTS"),
    (OnlineResource("https://x.gov/a", "sensor observation service"), "SOS"),
    (OnlineResource("https://x.gov/a", "application/vnd.ogc.wms_xml"), "WMS"),
    (OnlineResource("https://x.gov/a", "application/vnd.google-earth.kml+xml"), "KML"),
    (OnlineResource("https://x.gov/a", "KMZ"), "KML"),
    (OnlineResource("https://x.gov/a", "Esri Shapefile"), "SHAPEFILE"),
    (OnlineResource("https://x.gov/a", "SHP"), "SHAPEFILE"),
    (OnlineResource("https://x.gov/roads_shp.zip", "application/zip"), "SHAPEFILE"),
    (OnlineResource("https://x.gov/download?id=1", "ZIP", "Roads (shapefile)"), "SHAPEFILE"),
    # the URL, when the portal says nothing of use
    (OnlineResource("https://x.gov/ows?SERVICE=WFS&REQUEST=GetCapabilities"), "WFS"),
    (
        OnlineResource(
            "https://x.gov/arcgis/services/Hydro/MapServer/WMSServer?request=GetCapabilities", "Esri REST"
        ),
        "WMS",
    ),
    (OnlineResource("https://x.gov/geoserver/wcs", "text/xml"), "WCS"),
    (OnlineResource("https://x.gov/cgi-bin/mapserv?map=/maps/a.map"), "OGC"),
    (OnlineResource("https://x.gov/parks.KMZ"), "KML"),
    # not candidates
    (OnlineResource("https://x.gov/rows.csv?accessType=DOWNLOAD", "text/csv"), None),
    (OnlineResource("https://x.gov/wms_layers.csv"), None),
    (OnlineResource("https://x.gov/wms/readme.pdf", "PDF"), None),
    (OnlineResource("https://x.gov/api/views/abc/rows.json", "application/json"), None),
    (OnlineResource("https://x.gov/data.zip", "application/zip"), None),
    (OnlineResource("https://x.gov/index.html", "text/html"), None),
    (OnlineResource("https://x.gov/subscriptions", "HTML"), None),
    (OnlineResource("https://x.gov/sosa-ontology.rdf", "application/rdf+xml"), None),
]


@pytest.mark.parametrize(("link", "kind"), CASES, ids=[f"{c[0].url} {c[0].protocol}" for c in CASES])
def test_candidate_type(link, kind):
    assert candidate_type(link) == kind


def test_candidates_keep_order_and_each_url_once():
    links = [OnlineResource("https://x.gov/a.kml"), OnlineResource("https://x.gov/t.csv"), OnlineResource("https://x.gov/a.kml", "KML"),
             OnlineResource("https://x.gov/w?service=WMS")]  # fmt: skip
    assert candidates(links) == {"https://x.gov/a.kml": "KML", "https://x.gov/w?service=WMS": "WMS"}


POLYGON = {"type": "Polygon", "coordinates": [[[-10, 40], [5, 40], [5, 50], [-10, 50], [-10, 40]]]}


@pytest.mark.parametrize(
    ("value", "box"),
    [
        (POLYGON, (-10.0, 40.0, 5.0, 50.0)),
        ('{"type": "Point", "coordinates": [8.5, 47.4]}', (8.5, 47.4, 8.5, 47.4)),
        ("-10,40,5,50", (-10.0, 40.0, 5.0, 50.0)),
        ("-10 40 5 50", (-10.0, 40.0, 5.0, 50.0)),
        ("Springfield", None),
        ("1,2,3", None),
        ("-10,40,500,50", None),
        ('{"type": "Polygon", "coordinates": "nowhere"}', None),
        ('{"type": "Polygon"', None),
        ({"type": "Teapot", "coordinates": [1, 2]}, None),
        ({"type": "Polygon", "coordinates": []}, None),
        ({"type": "Point", "coordinates": [float("nan"), 1]}, None),
        (["not", "geojson"], None),
        (None, None),
        ("", None),
    ],
)
def test_footprint(value, box):
    assert footprint(value) == box
