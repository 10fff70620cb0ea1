"""A service's conformance level in its ISO 19139 record. pycsw 2.6's ISO profile (apiso) reads the data
quality columns of its model (``specificationtitle``, ``specificationdate``, ``degree``, ``lineage``) only as
queryables and writes none of them: this profile writes them as the record's ``gmd:dataQualityInfo``, where
OWSLib's ``MD_Metadata.dataquality`` (QGIS MetaSearch) reads them. The view ``pycsw_records`` fills them for
the services a harvest judged (migration 0019)."""

from __future__ import annotations

from pycsw.core import util
from pycsw.core.etree import etree
from pycsw.plugins.profiles import profile
from pycsw.plugins.profiles.apiso.apiso import APISO, CODELIST, _write_date

REPORT = "gmd:report/gmd:DQ_DomainConsistency/gmd:result/gmd:DQ_ConformanceResult"
GCO_NIL_REASON = "{http://www.isotc211.org/2005/gco}nilReason"


class HarvestAPISO(APISO):
    """pycsw's ISO profile, with a full record's data quality: a conformance report on the standard its
    capabilities claim, passed or not, and the lineage statement saying what was found."""

    def write_record(self, result, esn, outputschema, queryables, caps=None):
        node = super().write_record(result, esn, outputschema, queryables, caps)
        # an ISO document served as stored keeps its own
        if esn == "full" and node.find(self._path("gmd:dataQualityInfo")) is None:
            quality = self._data_quality(result, queryables)
            if quality is not None:
                node.append(quality)  # last, as ISO 19139 orders it: after distributionInfo
        return node

    def _path(self, path: str) -> str:
        return util.nspath_eval(path, self.namespaces)

    def _sub(self, parent, path: str, text: str | None = None):
        """The elements of ``path`` under ``parent``, each inside the one before; the last holds ``text``."""
        for name in path.split("/"):
            parent = etree.SubElement(parent, self._path(name))
        if text is not None:
            parent.text = text
        return parent

    def _data_quality(self, result, queryables):
        def column(queryable: str) -> str | None:
            return util.getqattr(result, queryables[queryable]["dbcol"])

        title, degree = column("apiso:SpecificationTitle"), column("apiso:Degree")
        lineage = column("apiso:Lineage")
        if title is None and degree is None and lineage is None:
            return None
        info = etree.Element(self._path("gmd:dataQualityInfo"))
        quality = self._sub(info, "gmd:DQ_DataQuality")
        scope = self._sub(quality, "gmd:scope/gmd:DQ_Scope/gmd:level")
        level = column("apiso:Type") or "service"
        etree.SubElement(
            scope, self._path("gmd:MD_ScopeCode"), codeList=f"{CODELIST}#MD_ScopeCode", codeListValue=level
        ).text = level
        if degree is not None:
            conformance = self._sub(quality, REPORT)
            citation = self._sub(conformance, "gmd:specification/gmd:CI_Citation")
            self._sub(citation, "gmd:title/gco:CharacterString", title or "")
            date, date_type = column("apiso:SpecificationDate"), column("apiso:SpecificationDateType")
            if date:
                citation.append(_write_date(date, date_type or "publication", self.namespaces))
            else:  # ISO 19115 requires a citation's date; the standard's is not recorded
                self._sub(citation, "gmd:date").set(GCO_NIL_REASON, "missing")
            self._sub(conformance, "gmd:explanation/gco:CharacterString", lineage or "")
            self._sub(conformance, "gmd:pass/gco:Boolean", degree)
        if lineage is not None:
            self._sub(quality, "gmd:lineage/gmd:LI_Lineage/gmd:statement/gco:CharacterString", lineage)
        return info


def use_harvest_profile() -> None:
    """Serve ISO records with HarvestAPISO. pycsw loads its profiles by name from its own package, at each
    request: its loader is wrapped to hand over this subclass instead."""
    load = profile.load_profiles
    if getattr(load, "harvest", False):
        return

    def load_profiles(path, cls, profiles):
        found = load(path, cls, profiles)
        found["plugins"] = {
            name: HarvestAPISO if plugin is APISO else plugin for name, plugin in found["plugins"].items()
        }
        return found

    load_profiles.harvest = True
    profile.load_profiles = load_profiles
