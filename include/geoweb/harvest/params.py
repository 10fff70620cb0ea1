"""The parameters of a harvest run: one dataclass whose fields carry their JSON schema and description.

Declared as ``geoweb.params`` says: the DAG builds its trigger-form Params from ``param_specs()``, the tasks
rebuild ``HarvestParams`` from the run's conf with ``HarvestParams.from_conf``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from geoweb.models import ALL_TYPES
from geoweb.params import (
    InvalidParams,
    allowed_hosts_param,
    list_of,
    param,
    per_host_delay_param,
    to_conf,
    values_from_conf,
)
from geoweb.params import param_specs as declared_specs
from geoweb.settings import Settings

MAX_LEVEL = 5  # the DAG has one task pair per level up to here
MAX_SHARDS = 256  # a level's map length; well under Airflow's max_map_length (1024)
# Sources that turn keywords into seeds, by connector name (geoweb.connectors.CONNECTORS)
WEB_SEARCH = ("searxng", "google", "brave")
PORTALS = ("datagov", "ckan")
SEARCH_PROVIDERS = WEB_SEARCH + PORTALS
SEARCH_PAGES = 10  # result pages per keyword and provider: the paper's top 10
# The paper's kind of keywords, per resource type: a run searches those of its types.
KEYWORDS_BY_TYPE: dict[str, tuple[str, ...]] = {
    "WMS": ("web map service", "WMS getcapabilities", "OGC WMS"),
    "WFS": ("web feature service", "WFS getcapabilities", "OGC WFS"),
    "WCS": ("web coverage service", "WCS getcapabilities"),
    "WMTS": ("web map tile service", "WMTS getcapabilities"),
    "WPS": ("web processing service", "WPS getcapabilities"),
    "SOS": ("sensor observation service", "OGC SOS"),
    "CSW": ("catalogue service for the web", "CSW getrecords"),
    "KML": ("KML download", "KMZ download"),
    "SHAPEFILE": ("shapefile download", "zipped shapefile"),
    "GEOJSON": ("geojson download",),
    "GEOTIFF": ("GeoTIFF download", "cloud optimized GeoTIFF"),
    "OGCAPI-FEATURES": ("OGC API Features", "ogcapi collections items"),
    "OGCAPI-RECORDS": ("OGC API Records",),
    "OGCAPI-MAPS": ("OGC API Maps",),
    "OGCAPI-TILES": ("OGC API Tiles",),
    "OGCAPI-PROCESSES": ("OGC API Processes",),
    "OGCAPI-COVERAGES": ("OGC API Coverages",),
    "OGCAPI-EDR": ("OGC API EDR environmental data retrieval",),
    "STAC": ("STAC catalog", "catalog.json stac_version"),
    "STAC-API": ("STAC API search",),
    "ARCGIS-DIRECTORY": ("arcgis rest services directory",),
    "ARCGIS-MAPSERVER": ("arcgis rest MapServer",),
    "ARCGIS-FEATURESERVER": ("arcgis rest FeatureServer",),
    "ARCGIS-IMAGESERVER": ("arcgis rest ImageServer",),
}

_DEFAULTS = Settings()
# A pattern's "description" completes the error message "<value> is not <description>".
_URL = {
    "type": "string",
    "pattern": r"^[Hh][Tt][Tt][Pp][Ss]?://[^\s/?#]+\S*$",
    "maxLength": _DEFAULTS.max_url_length,
    "description": "an absolute http(s) URL",
}
_KEYWORD = {"type": "string", "minLength": 1, "maxLength": 200}


@dataclass(frozen=True)
class HarvestParams:
    """What one run of the crawl DAG does. Lists are tuples here and JSON arrays in the conf."""

    seeds: tuple[str, ...] = param(
        (),
        "Seed pages (absolute http(s) URLs) at level 0. A run with neither seeds nor search_providers (a "
        "scheduled run) takes both from the Airflow Variables geoweb_seeds and geoweb_search_providers "
        "(JSON lists).",
        **list_of(_URL, maxItems=10_000),
    )
    keywords: tuple[str, ...] = param(
        (),
        "More keywords for search seeding, searched after those of keywords_by_type. Without "
        "search_providers they do nothing.",
        **list_of(_KEYWORD, maxItems=1_000),
    )
    keywords_by_type: tuple[tuple[str, tuple[str, ...]], ...] = param(
        tuple(KEYWORDS_BY_TYPE.items()),
        "Keywords per resource type for search seeding: a run searches those of its types with every "
        "search provider. Edit them here; without search_providers they do nothing.",
        type="object",
        propertyNames={"enum": list(ALL_TYPES)},
        additionalProperties=list_of(_KEYWORD, maxItems=100),
    )
    search_providers: tuple[str, ...] = param(
        (),
        "Sources that turn the keywords into level-0 seeds, each seed keeping its keyword: web search "
        "(searxng, google, brave: every hit is a seed page) and data portals (datagov, ckan: every dataset's "
        "service and file links). Each reads its URL and key from the Airflow Connection geoweb_<name> "
        "(extra: url and other settings; password: the key), else from GEOWEB_<NAME>_URL, GEOWEB_<NAME>_KEY...",
        **list_of({"type": "string", "enum": list(SEARCH_PROVIDERS)}),
    )
    search_pages: int = param(
        SEARCH_PAGES,
        "Result pages read per keyword and search provider (the paper's top 10); Google and Brave serve 10 "
        "pages at most.",
        type="integer",
        minimum=1,
        maximum=100,
    )
    types: tuple[str, ...] = param(
        ALL_TYPES,
        f"Resource types to detect and load (default all: {', '.join(ALL_TYPES)}).",
        **list_of({"type": "string", "enum": list(ALL_TYPES)}, minItems=1),
    )
    max_level: int = param(
        MAX_LEVEL,
        f"Link hops to follow from the seeds (a seed is level 0); at most {MAX_LEVEL}.",
        type="integer",
        minimum=0,
        maximum=MAX_LEVEL,
    )
    allowed_hosts: tuple[str, ...] = allowed_hosts_param()
    shards: int = param(
        16,
        "Shards per level: each level's URLs are split by host into this many crawl tasks (one host, one "
        "shard), run in parallel on the Celery workers.",
        type="integer",
        minimum=1,
        maximum=MAX_SHARDS,
    )
    concurrency: int = param(
        _DEFAULTS.concurrency,
        "Requests in flight in one crawl task.",
        type="integer",
        minimum=1,
        maximum=512,
    )
    per_host_concurrency: int = param(
        _DEFAULTS.per_host_concurrency,
        "Requests in flight to one host (politeness).",
        type="integer",
        minimum=1,
        maximum=16,
    )
    per_host_delay: float = per_host_delay_param()
    max_pages_per_host: int = param(
        _DEFAULTS.max_pages_per_host,
        "URLs taken from one host in a run; ends crawler traps such as endless calendars.",
        type="integer",
        minimum=1,
        maximum=1_000_000,
    )
    link_budget: float = param(
        _DEFAULTS.link_budget,
        "Share of each level's links followed, best topical score first (links are scored by anchor text and "
        "URL against a geospatial vocabulary): 1 follows all, 0.25 the top quarter of every level. The seeds "
        "are always followed; the links left are marked skipped (reason budget). See docs/priority.md.",
        type="number",
        exclusiveMinimum=0,
        maximum=1,
    )
    link_min_score: float | None = param(
        None,
        "Links scoring below this are not followed either (scores run from about -1 for a login or calendar "
        "link to 1 for a GetCapabilities link, minus 0.05 per level); empty: no minimum.",
        type=["number", "null"],
        minimum=-2,
        maximum=1,
    )
    url_policies: str = param(
        "",
        'URL-pattern policies, a JSON list of rules, the first match deciding: [{"pattern": "^https?://'
        'example\\.org/calendar/", "action": "skip"}, {"pattern": "/wms", "action": "fetch"}] (see '
        "docs/revisits.md). Empty: the Airflow Variable geoweb_url_policies, else GEOWEB_URL_POLICIES.",
        type="string",
        maxLength=100_000,
    )

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any] | None) -> HarvestParams:
        """Defaults overridden by ``conf`` (a run's conf or the DAG's params), validated key by key."""
        from geoweb.policy import InvalidPolicy, URLPolicies  # not at DAG parse time

        params = cls(**values_from_conf(cls, conf))
        if not params.seeds and not params.search_providers:
            raise InvalidParams("param seeds: give at least one seed URL")
        if params.url_policies:
            try:
                URLPolicies.from_json(params.url_policies, "param url_policies")
            except InvalidPolicy as exc:
                raise InvalidParams(str(exc)) from None
        return params

    def to_conf(self) -> dict[str, Any]:
        """The JSON form (stored with the run)."""
        return to_conf(self)

    def search_keywords(self) -> tuple[str, ...]:
        """The keywords search seeding searches: those of the run's types, then ``keywords``, each once."""
        by_type = dict(self.keywords_by_type)
        return tuple(dict.fromkeys([k for t in self.types for k in by_type.get(t, ())] + list(self.keywords)))

    def settings(self, base: Settings | None = None) -> Settings:
        """The engine's settings for this run: ``base`` (default: from the environment) with the run's
        scope and politeness; robots.txt is always obeyed."""
        base = base or Settings.from_env()
        return base.with_(
            max_level=self.max_level,
            allowed_hosts=frozenset(h.lower() for h in self.allowed_hosts),
            concurrency=self.concurrency,
            per_host_concurrency=self.per_host_concurrency,
            per_host_delay=float(self.per_host_delay),
            max_pages_per_host=self.max_pages_per_host,
            link_budget=float(self.link_budget),
            link_min_score=_DEFAULTS.link_min_score if self.link_min_score is None else self.link_min_score,
            url_policies=self.url_policies or base.url_policies,
            obey_robots=True,
        )


def param_specs() -> Iterator[tuple[str, Any, str, dict[str, Any]]]:
    """(name, JSON default, description, JSON schema) of every parameter, in declaration order."""
    return declared_specs(HarvestParams)
