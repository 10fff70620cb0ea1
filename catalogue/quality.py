"""A resource's quality in its ISO 19139 record. pycsw 2.6's ISO profile (apiso) reads the data quality
columns of its model (``specificationtitle``, ``specificationdate``, ``degree``, ``lineage``) only as
queryables and writes none of them: this profile writes them as the record's ``gmd:dataQualityInfo``, where
OWSLib's ``MD_Metadata.dataquality`` (QGIS MetaSearch) reads them. The view ``pycsw_records`` fills them for
the services a harvest judged (migration 0019), and its column ``quality`` holds what the revisits measured
(migration 0025): availability, checks, median response time and the INSPIRE verdicts."""

from __future__ import annotations

from pycsw.core import util
from pycsw.core.etree import etree
from pycsw.plugins.profiles import profile
from pycsw.plugins.profiles.apiso.apiso import APISO, CODELIST, _write_date

REPORT = "gmd:report/gmd:DQ_DomainConsistency/gmd:result/gmd:DQ_ConformanceResult"
MEASURE = "gmd:report/gmd:DQ_ConceptualConsistency"  # INSPIRE's element for a quality of service
GCO_NIL_REASON = "{http://www.isotc211.org/2005/gco}nilReason"
XLINK_HREF = "{http://www.w3.org/1999/xlink}href"
PERCENT = "urn:ogc:def:uom:OGC::percent"
UNITY = "http://www.opengis.net/def/uom/OGC/1.0/unity"
SECOND = "http://www.opengis.net/def/uom/SI/second"
# The measures of the view's ``quality``, each as (its key, name, description, unit)
MEASURES = (
    ("availability_30d_percent", "availability over 30 days",
     "Share of the harvest's checks of the resource over the last 30 days that succeeded, in percent", PERCENT),
    ("checks_30d", "checks over 30 days", "Number of the harvest's checks of the resource over the last 30 days",
     UNITY),
    ("response_median", "median response time",
     "Median time of the request that checks the resource (GetCapabilities of an OGC service, its own URL "
     "otherwise), until its answer was read, over the successful checks of the last 30 days, in seconds", SECOND),
)  # fmt: skip
# A criterion judged on fewer checks has no report: OWSLib lists the reports' titles and passes apart, so a
# report without a pass would pair the later titles with the wrong passes
PASSES = {"met": "true", "not met": "false"}


class HarvestAPISO(APISO):
    """pycsw's ISO profile, with a full record's data quality: a conformance report on the standard its
    capabilities claim, passed or not; a conformance report on each INSPIRE criterion its checks judged; a
    quantitative report of each figure its checks measured; and the lineage statement saying what was found
    and measured."""

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
        measured = result.quality  # a dict, which pycsw's getqattr would take for a date
        if title is None and degree is None and lineage is None and measured is None:
            return None
        info = etree.Element(self._path("gmd:dataQualityInfo"))
        quality = self._sub(info, "gmd:DQ_DataQuality")
        scope = self._sub(quality, "gmd:scope/gmd:DQ_Scope/gmd:level")
        level = column("apiso:Type") or "service"
        etree.SubElement(
            scope, self._path("gmd:MD_ScopeCode"), codeList=f"{CODELIST}#MD_ScopeCode", codeListValue=level
        ).text = level
        if degree is not None:
            date, date_type = column("apiso:SpecificationDate"), column("apiso:SpecificationDateType")
            self._conformance(quality, title or "", lineage or "", degree, date, date_type)
        if measured is not None:
            self._checks(quality, measured)
        statement = ". ".join(s for s in (lineage, measured and checked(measured)) if s)
        if statement:
            self._sub(quality, "gmd:lineage/gmd:LI_Lineage/gmd:statement/gco:CharacterString", statement)
        return info

    def _checks(self, quality, measured: dict) -> None:
        """The reports of what the checks judged and measured."""
        for criterion in measured["inspire"] or ():
            if criterion["verdict"] in PASSES:
                self._conformance(
                    quality, criterion["rule"], criterion["verdict"], PASSES[criterion["verdict"]]
                )
        for key, name, description, unit in MEASURES:
            if measured[key] is not None:
                self._measure(quality, name, description, unit, measured[key])

    def _conformance(self, quality, title: str, explanation: str, passed: str, date=None, date_type=None):
        """A report of a specification passed (``passed`` "true") or not."""
        conformance = self._sub(quality, REPORT)
        citation = self._sub(conformance, "gmd:specification/gmd:CI_Citation")
        self._sub(citation, "gmd:title/gco:CharacterString", title)
        if date:
            citation.append(_write_date(date, date_type or "publication", self.namespaces))
        else:  # ISO 19115 requires a citation's date; the specification's is not recorded
            self._sub(citation, "gmd:date").set(GCO_NIL_REASON, "missing")
        self._sub(conformance, "gmd:explanation/gco:CharacterString", explanation)
        self._sub(conformance, "gmd:pass/gco:Boolean", passed)

    def _measure(self, quality, name: str, description: str, unit: str, value: float) -> None:
        """A report of one measured value, in ``unit`` (a URI)."""
        measure = self._sub(quality, MEASURE)
        self._sub(measure, "gmd:nameOfMeasure/gco:CharacterString", name)
        self._sub(measure, "gmd:measureDescription/gco:CharacterString", description)
        result = self._sub(measure, "gmd:result/gmd:DQ_QuantitativeResult")
        self._sub(result, "gmd:valueUnit").set(XLINK_HREF, unit)
        self._sub(result, "gmd:value/gco:Record", number(value))


def number(value: float) -> str:
    """A figure as text: 97.22, 100, 0.39."""
    return f"{round(value, 3):g}"


def checked(measured: dict) -> str:
    """The lineage's sentence on the checks: "Checked 54 times over 30 days: 100 % successful, median
    response time 0.39 s"."""
    availability, median = measured["availability_30d_percent"], measured["response_median"]
    figures = [f"{number(availability)} % successful"] if availability is not None else []
    if median is not None:
        figures.append(f"median response time {number(median)} s")
    sentence = f"Checked {measured['checks_30d']} times over 30 days"
    return f"{sentence}: {', '.join(figures)}" if figures else sentence


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
