"""pycsw: a CSW catalogue loaded with the OGC CITE records and records of our own.

Our records point at services and files of the test web, two of which no page links to: a crawler finds
them only by harvesting the catalogue.
"""

from __future__ import annotations

import shutil
import subprocess
from html import escape
from string import Template

from lxml import etree

from testweb.files import WETLANDS
from testweb.layout import CONF, CORPUS, LOGS, PYCSW, SERVER_VENV, TEMPLATES, VAR, origin
from testweb.mapserver import ARCHIVE, LANDCOVER, REGIONS
from testweb.model import CatalogueRecord, Planted
from testweb.wps import URL as WPS_URL

CONFIG_FILE = CONF / "pycsw.cfg"
URL = f"{origin(PYCSW)}/csw"
RECORDS_DIR = VAR / "pycsw" / "records"
DATABASE = VAR / "pycsw" / "records.db"
CITE_RECORDS = CORPUS / "records" / "cite"
DC = "{http://purl.org/dc/elements/1.1/}"

RECORDS = (
    CatalogueRecord(
        "urn:uuid:7d0c6a53-archive-landuse",
        "Land use 1990 (archive)",
        "Historical land use polygons, served by the archive map server.",
        ("land use", "history"),
        (140.0, -30.0, 144.0, -29.0),
        (
            ("OGC:WMS", f"{ARCHIVE.url}?service=WMS&request=GetCapabilities"),
            ("OGC:WFS", f"{ARCHIVE.url}?service=WFS&version=2.0.0&request=GetCapabilities"),
        ),
    ),
    CatalogueRecord(
        "urn:uuid:2f9e41b8-landcover",
        "Land cover of South Australia",
        "Land cover classes as a coverage and a map.",
        ("land cover",),
        (138.0, -32.0, 144.0, -28.0),
        (("OGC:WCS", f"{LANDCOVER.url}&service=WCS&version=1.0.0&request=GetCapabilities"),),
    ),
    CatalogueRecord(
        "urn:uuid:c41d0f2e-wetlands",
        "Wetlands of the Sundarbans",
        "Wetland outline as KML.",
        ("wetlands", "hydrography"),
        (89.0, 22.0, 89.5, 22.5),
        (("OGC:KML", WETLANDS.url),),
    ),
    CatalogueRecord(
        "urn:uuid:5a7be1c0-regions",
        "Regions",
        "Provinces, lakes, stations and elevation.",
        ("boundaries", "elevation"),
        (-60.0, -15.0, 34.0, 48.0),
        (("OGC:WMS", f"{REGIONS.url}&service=WMS&request=GetCapabilities"),),
    ),
    CatalogueRecord(
        "urn:uuid:90c3d7aa-geoprocessing",
        "Geoprocessing service",
        "Buffer, bounding box and centroid of geometries.",
        ("processing",),
        (-180.0, -90.0, 180.0, 90.0),
        (("OGC:WPS", f"{WPS_URL}?service=WPS&request=GetCapabilities"),),
    ),
)


def cite_identifiers() -> list[str]:
    if not CITE_RECORDS.is_dir():
        return []
    return [etree.parse(str(p)).findtext(f"{DC}identifier") for p in sorted(CITE_RECORDS.glob("*.xml"))]


def planted() -> list[Planted]:
    return [Planted(URL, {"CSW": tuple(r.identifier for r in RECORDS) + tuple(cite_identifiers())})]


def render_record(record: CatalogueRecord) -> str:
    minx, miny, maxx, maxy = record.bbox
    return Template((TEMPLATES / "record.xml").read_text()).substitute(
        identifier=escape(record.identifier),
        title=escape(record.title),
        type="service" if record.links[0][0].startswith("OGC:W") else "dataset",
        subjects="\n".join(f"  <dc:subject>{escape(s)}</dc:subject>" for s in record.subjects),
        abstract=escape(record.abstract),
        references="\n".join(
            f'  <dct:references scheme="{escape(p)}">{escape(u)}</dct:references>' for p, u in record.links
        ),
        minx=minx,
        miny=miny,
        maxx=maxx,
        maxy=maxy,
    )


def write_config() -> None:
    CONFIG_FILE.parent.mkdir(parents=True, exist_ok=True)
    CONFIG_FILE.write_text(
        Template((TEMPLATES / "pycsw.cfg").read_text()).substitute(
            home=VAR / "pycsw", url=URL, log_file=LOGS / "pycsw.log", database=DATABASE
        )
    )


def load_records() -> None:
    """A fresh database: pycsw's own admin tool creates it and loads every record file."""
    shutil.rmtree(RECORDS_DIR, ignore_errors=True)
    RECORDS_DIR.mkdir(parents=True)
    for record in RECORDS:
        name = record.identifier.rsplit(":", 1)[-1]
        (RECORDS_DIR / f"{name}.xml").write_text(render_record(record))
    for path in sorted(CITE_RECORDS.glob("*.xml")) if CITE_RECORDS.is_dir() else []:
        shutil.copy(path, RECORDS_DIR / path.name)
    DATABASE.unlink(missing_ok=True)
    admin = [str(SERVER_VENV / "bin" / "python"), str(SERVER_VENV / "bin" / "pycsw-admin.py")]
    for command in (["-c", "setup_db"], ["-c", "load_records", "-p", str(RECORDS_DIR)]):
        subprocess.run([*admin, *command, "-f", str(CONFIG_FILE)], check=True, capture_output=True)
