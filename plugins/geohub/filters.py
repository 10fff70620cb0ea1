"""The parameters several routes take: the filters of a search (the search itself, its export, its QGIS
connections) and a resource's id (its detail, its QGIS connection)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Depends, Query
from fastapi import Path as PathParam

from geoweb.geohub.query import MAX_NAME, MAX_TEXT

# what each filter means, as the OpenAPI document and the page's help show it
HELP = {
    "q": 'Words, in web-search syntax (`"a phrase"`, `or`, `-word`), stemmed (English), matched against titles, '
    "providers, keywords, abstracts, the names and titles of datasets, the concepts datasets are about with "
    "their synonyms and broader concepts (`water` finds a service of river layers), URLs, the search keyword "
    "that led to a resource and the pages that linked to it; the last word is also a prefix (`riv` finds "
    "rivers). Results ranked by relevance, a title or provider above an abstract or URL. An address "
    "(`data.example.org`, a URL) matches URLs containing it. Empty: every resource, newest first.",
    "type": "Resource types (WMS, WFS, KML, ...); repeat for several. An unknown one is 422.",
    "bbox": "west,south,east,north in WGS84 degrees: resources whose box (which holds their datasets' "
    "footprints) intersects it. West above east crosses the antimeridian. `outside_box` and `no_footprint` say "
    "how many it left out.",
    "run": "Only resources this run found.",
    "level": "Only resources first found at this link depth (in `run`, if given).",
    "concept": "A concept id (`/api/concepts`): resources with a dataset about it or about a concept below it "
    "(`water_body` finds lakes and canals).",
    "answering": "Leave out the resources the revisits found dead (failed checks in a row); each result's "
    "`status` says ok, failed or dead.",
    "provider": "Only resources of this provider (its exact name).",
    "footprint": "`none`: only resources without a footprint, which no `bbox` finds.",
    "conformance": "Only OGC services whose capabilities are at one of these levels; repeat for several. "
    "`conformant`: OWSLib reads them whole and no defect was found; `readable`: read, with the defects each "
    "result names; `identified`: type and version only. Resources nothing judges (OGC APIs, STAC, ArcGIS, "
    "files) have no level and are left out.",
    "min_availability": "Only resources whose checks of the last 30 days succeeded at least this often "
    "(percent, as of each one's last check); a resource without checks is left out.",
    "inspire": "Only WMS with this verdict on both INSPIRE view-service criteria (availability 99 % over 30 "
    "days; GetMap first byte within 5 s in 90 % of checks): `met` (both met), `not met` (either not met), "
    "`not enough checks`; repeat for several. Other types are left out.",
}


def search_filters(
    q: Annotated[str, Query(max_length=MAX_TEXT, description=HELP["q"])] = "",
    type: Annotated[list[str], Query(description=HELP["type"])] = [],  # noqa: B006  (FastAPI copies defaults)
    bbox: Annotated[str | None, Query(max_length=200, description=HELP["bbox"])] = None,
    run: Annotated[str | None, Query(max_length=MAX_NAME, description=HELP["run"])] = None,
    level: Annotated[int | None, Query(ge=0, le=1000, description=HELP["level"])] = None,
    concept: Annotated[str | None, Query(max_length=MAX_NAME, description=HELP["concept"])] = None,
    answering: Annotated[bool, Query(description=HELP["answering"])] = False,
    provider: Annotated[str | None, Query(max_length=MAX_NAME, description=HELP["provider"])] = None,
    footprint: Annotated[Literal["none"] | None, Query(description=HELP["footprint"])] = None,
    conformance: Annotated[list[str], Query(description=HELP["conformance"])] = [],  # noqa: B006
    min_availability: Annotated[
        float | None, Query(ge=0, le=100, description=HELP["min_availability"])
    ] = None,
    inspire: Annotated[list[str], Query(description=HELP["inspire"])] = [],  # noqa: B006
) -> dict:
    """The search's filters, as every route over a search takes them (``SearchQuery.checked``'s arguments)."""
    return {
        "text": q, "types": type, "bbox": bbox, "run": run, "level": level, "concept": concept,
        "answering": answering, "provider": provider, "footprint": footprint, "conformance": conformance,
        "min_availability": min_availability, "inspire": inspire,
    }  # fmt: skip


Filters = Annotated[dict, Depends(search_filters)]

MAX_ID = 2**63 - 1  # resource ids are bigint
ResourceId = Annotated[int, PathParam(ge=1, le=MAX_ID)]
