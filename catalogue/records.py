"""OGC API - Records over the catalogue's own pycsw: pygeoapi's CSWFacade provider, with what it lacks for a
correct answer. pycsw stays the one reader of the database, so both protocols find the same records."""

from __future__ import annotations

import os

from owslib.csw import CatalogueServiceWeb
from pygeoapi.provider.csw_facade import CSWFacadeProvider

CSW_TIMEOUT = 30  # seconds; GeoHub's proxy gives up on the whole answer after its own timeout
# A link's protocol (pycsw's scheme) that names a file to download rather than a service to connect to.
DOWNLOAD = "WWW:DOWNLOAD-"


class HarvestRecords(CSWFacadeProvider):
    """The CSWFacade provider, changed in four ways:

    - ``offset`` counts from 0, CSW's startPosition from 1 (the facade passed 0 for the first page, which
      pycsw reads as "before the first");
    - it asks pycsw without a GetCapabilities first, at this process's own address (the capabilities name
      the public one, which may need a login);
    - a record's links keep their protocol and say what they are (``rel`` service or enclosure), and its
      ``alternate`` CSW link is the public one;
    - ``format`` (the harvest's type: WMS, KML...) is a property, so ``?format=WMS`` filters by it.
    """

    def __init__(self, provider_def):
        super().__init__(provider_def)
        self.record_mappings["format"] = ("dc:format", "format")
        self._fields = {}
        self.get_fields()
        self.public_csw = f"{os.environ['GEOWEB_CATALOGUE_URL']}/csw"

    def query(self, offset=0, **kwargs):
        return super().query(offset=offset + 1, **kwargs)

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
