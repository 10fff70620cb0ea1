"""The view of migrations 0014 and 0019 that the catalogue (pycsw) reads: one record per resource of every type,
with the protocol of its link, text that XML can hold and pycsw can split, the box filters on the index, and a
judged service's conformance level in pycsw's data quality columns."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from lxml import etree

from geoweb.models import ALL_TYPES, FILE_TYPES, Conformance, Dataset, Resource
from geoweb.store import Store
from tests.store.pages import page
from tests.store.queries import rows, scalar

SITE = "http://maps.example"
PROTOCOLS = {
    "WMS": "OGC:WMS", "CSW": "OGC:CSW", "OGCAPI-FEATURES": "OGC:API-Features", "OGCAPI-EDR": "OGC:API-Edr",
    "STAC-API": "STAC:API", "ARCGIS-MAPSERVER": "ESRI:ArcGIS:MapServer",
    "KML": "WWW:DOWNLOAD-application/vnd.google-earth.kml+xml", "GEOTIFF": "WWW:DOWNLOAD-image/tiff",
}  # fmt: skip
# JSON sources may carry what XML 1.0 cannot hold; commas and carets are pycsw's separators
HOSTILE = Resource(
    url=f"{SITE}/a,b^c/items", type="OGCAPI-FEATURES", title="Rivers\x01 and\x0b lakes", abstract="x\x1fy",
    provider="Agency\x02", keywords=["roads, rails", "ok\x08"], bbox=(1.0, 2.0, 3.0, 4.0),
    datasets=[Dataset(name="rivers", bbox=(1.0, 2.0, 3.0, 4.0), concepts=["river"])],
)  # fmt: skip

# Services at each conformance level (an OWSLib message may quote what XML cannot hold)
CONFORMANT = Resource(
    url=f"{SITE}/conformant/wms",
    type="WMS",
    version="1.3.0",
    title="Conformant",
    conformance=Conformance.CONFORMANT,
)
READABLE = Resource(
    url=f"{SITE}/readable/wms", type="WMS", version="1.1.1", title="Readable", conformance=Conformance.READABLE,
    defects=["no Capability/Request section", "decimal commas in boxes, read as points"],
    owslib_error="OWSLib's WMS reader cannot read it: TypeError: 'NoneType'\x01 object is not iterable",
)  # fmt: skip
IDENTIFIED = Resource(
    url=f"{SITE}/identified/wfs", type="WFS", version="2.0.0", conformance=Conformance.IDENTIFIED,
    defects=["not readable by OWSLib's WFS reader"],
)  # fmt: skip


def resources() -> list[Resource]:
    every_type = [
        Resource(url=f"{SITE}/{t.lower()}", type=t, title=f"A {t}", bbox=(10.0, 40.0, 11.0, 41.0))
        for t in ALL_TYPES
    ]
    return [
        *every_type,
        HOSTILE,
        Resource(url=f"{SITE}/nowhere", type="WPS"),
        CONFORMANT,
        READABLE,
        IDENTIFIED,
    ]


@pytest.fixture(scope="module")
def store(postgis_database) -> Iterator[Store]:
    with postgis_database() as dsn, Store(dsn) as store:
        store.migrate()
        store.runs.begin("run", {})
        store.frontier.commit_pages("run", [page(f"{SITE}/", 1, None, resources())], 1)
        yield store


def record(store: Store, url: str, type_: str) -> dict:
    with store.conn, store.conn.cursor() as cur:
        cur.execute(
            "SELECT p.* FROM pycsw_records p JOIN resources r ON p.identifier = 'urn:geoweb:resource:' || r.id "
            "WHERE r.url = %s AND r.type = %s",
            (url, type_),
        )
        return dict(zip([c.name for c in cur.description], cur.fetchone(), strict=True))


def test_one_record_per_resource_with_its_type_format_and_protocol(store):
    assert scalar(store, "SELECT count(*) FROM pycsw_records") == scalar(
        store, "SELECT count(*) FROM resources"
    )
    for type_ in ALL_TYPES:
        found = record(store, f"{SITE}/{type_.lower()}", type_)
        assert (found["format"], found["typename"], found["title"]) == (type_, "csw:Record", f"A {type_}")
        assert found["type"] == ("dataset" if type_ in FILE_TYPES else "service")
        name, description, protocol, url = found["links"].split(",")
        assert (name, description, url) == ("", "", f"{SITE}/{type_.lower()}")
        assert protocol == PROTOCOLS.get(type_, protocol) and protocol != "WWW:LINK"
        assert found["servicetype"] == (None if type_ in FILE_TYPES else protocol)


def test_text_is_xml_text_and_separators_are_kept_apart(store):
    found = record(store, HOSTILE.url, HOSTILE.type)
    assert (found["title"], found["abstract"], found["publisher"]) == ("Rivers and lakes", "xy", "Agency")
    assert found["keywords"].split(",") == [
        "roads  rails",
        "ok",
        "river",
    ]  # its own, then its concepts' labels
    assert found["links"].split(",")[-1] == f"{SITE}/a%2Cb%5Ec/items"
    document = etree.fromstring(found["xml"].encode())
    assert document.findtext("{http://purl.org/dc/elements/1.1/}title") == "Rivers and lakes"


def test_the_box_is_a_typed_geometry_filtered_on_the_index(store):
    assert rows(store, "SELECT type, srid FROM geometry_columns WHERE f_table_name = 'pycsw_records'") == [
        ("MULTIPOLYGON", 4326)
    ]
    assert record(store, f"{SITE}/nowhere", "WPS")["wkb_geometry"] is None
    with store.conn, store.conn.cursor() as cur:
        cur.execute("SET LOCAL enable_seqscan = off")  # a few rows: the planner would rather scan them
        cur.execute(
            "EXPLAIN SELECT identifier FROM pycsw_records "
            "WHERE st_intersects(wkb_geometry, st_geomfromtext('POLYGON((0 0,5 0,5 5,0 5,0 0))', 4326))"
        )
        plan = " ".join(line for (line,) in cur.fetchall())
    assert "resources_bbox_multipolygon" in plan


def quality(store: Store, resource: Resource) -> tuple:
    found = record(store, resource.url, resource.type)
    return found["specificationtitle"], found["degree"], found["lineage"]


def test_a_judged_service_has_its_standard_pass_and_statement(store):
    assert quality(store, CONFORMANT) == (
        "OGC WMS 1.3.0",
        "true",
        "Capabilities document read whole by OWSLib",
    )
    assert quality(store, READABLE) == (
        "OGC WMS 1.1.1",
        "false",
        "Capabilities document readable: no Capability/Request section; decimal commas in boxes, read as points; "
        "OWSLib's WMS reader cannot read it: TypeError: 'NoneType' object is not iterable",
    )
    assert quality(store, IDENTIFIED) == (
        "OGC WFS 2.0.0",
        "false",
        "Capabilities document identified by its type and version only: not readable by OWSLib's WFS reader",
    )


def test_what_nothing_judges_has_no_data_quality(store):
    for unjudged in (
        HOSTILE,
        Resource(url=f"{SITE}/wms", type="WMS"),
        Resource(url=f"{SITE}/kml", type="KML"),
    ):
        found = record(store, unjudged.url, unjudged.type)
        assert (found["specificationtitle"], found["degree"], found["lineage"]) == (None, None, None)
        assert (found["specificationdate"], found["specificationdatetype"]) == (None, None)
