"""OGC API - Records over the catalogue's own pycsw: pygeoapi's CSWFacade provider, with what it lacks for a
correct answer. pycsw stays the one reader of the database's records, so both protocols find the same ones;
their quality, which pycsw's Dublin Core records cannot hold, is read from the same view."""

from __future__ import annotations

import os
from functools import cache

from owslib.csw import CatalogueServiceWeb
from pygeoapi.provider.csw_facade import CSWFacadeProvider
from sqlalchemy import bindparam, create_engine, text
from sqlalchemy.engine import Engine

CSW_TIMEOUT = 30  # seconds; GeoHub's proxy gives up on the whole answer after its own timeout
# A link's protocol (pycsw's scheme) that names a file to download rather than a service to connect to.
DOWNLOAD = "WWW:DOWNLOAD-"
# What the ISO record's data quality says (catalogue/quality.py), for the records of one page
QUALITY = text(
    "SELECT identifier, quality, specificationtitle, degree, lineage FROM pycsw_records "
    "WHERE identifier IN :identifiers AND (quality IS NOT NULL OR degree IS NOT NULL)"
).bindparams(bindparam("identifiers", expanding=True))
# The figures of the view's ``quality`` by their property names, which say their unit
FIGURES = {
    "availability_30d_percent": "availability_30d_percent",
    "checks_30d": "checks_30d",
    "response_median": "response_median_seconds",
}


class HarvestRecords(CSWFacadeProvider):
    """The CSWFacade provider, changed in five ways:

    - ``offset`` counts from 0, CSW's startPosition from 1 (the facade passed 0 for the first page, which
      pycsw reads as "before the first");
    - it asks pycsw without a GetCapabilities first, at this process's own address (the capabilities name
      the public one, which may need a login);
    - a record's links keep their protocol and say what they are (``rel`` service or enclosure), and its
      ``alternate`` CSW link is the public one;
    - ``format`` (the harvest's type: WMS, KML...) is a property, so ``?format=WMS`` filters by it;
    - a record of a checked or judged resource has its ``quality`` and ``conformance`` properties.
    """

    def __init__(self, provider_def):
        super().__init__(provider_def)
        self.record_mappings["format"] = ("dc:format", "format")
        self._fields = {}
        self.get_fields()
        self.public_csw = f"{os.environ['GEOWEB_CATALOGUE_URL']}/csw"

    def query(self, offset=0, **kwargs):
        page = super().query(offset=offset + 1, **kwargs)
        with_quality(page["features"])
        return page

    def get(self, identifier, **kwargs):
        feature = super().get(identifier, **kwargs)
        with_quality([feature])
        return feature

    def _get_csw(self) -> CatalogueServiceWeb:
        return CatalogueServiceWeb(self.data, skip_caps=True, timeout=CSW_TIMEOUT)

    def _gen_getrecordbyid_link(self, identifier: str, csw_version: str = "2.0.2") -> dict:
        link = super()._gen_getrecordbyid_link(identifier, csw_version)
        link["href"] = link["href"].replace(self.data, self.public_csw, 1)
        return link

    def _owslibrecord2record(self, record):
        feature = super()._owslibrecord2record(record)
        feature["links"] = [feature["links"][0]] + [
            {
                "rel": "enclosure" if ref["scheme"].startswith(DOWNLOAD) else "service",
                "title": ref["scheme"],
                "protocol": ref["scheme"],
                "href": ref["url"],
            }
            for ref in record.references
        ]
        return feature


@cache  # pygeoapi makes a provider for each request: one pool for the process
def database(url: str) -> Engine:
    return create_engine(url)


def with_quality(features: list[dict]) -> None:
    """Add to each feature's properties what its ISO record's data quality says, if anything: ``quality``,
    the figures its checks measured and the INSPIRE verdicts with their rules, and ``conformance``, the
    standard its capabilities claim, whether they follow it and what was found."""
    if not features:
        return
    properties = {f["id"]: f["properties"] for f in features}
    with database(os.environ["GEOWEB_CATALOGUE_DB"]).connect() as conn:
        rows = conn.execute(QUALITY, {"identifiers": list(properties)}).all()
    for identifier, measured, title, degree, lineage in rows:
        if measured is not None:
            quality = {FIGURES[key]: measured[key] for key in FIGURES if measured[key] is not None}
            if measured["inspire"]:
                quality["inspire"] = measured["inspire"]
            properties[identifier]["quality"] = quality
        if degree is not None:
            conformance = {"specification": title, "pass": degree == "true", "explanation": lineage}
            properties[identifier]["conformance"] = conformance
