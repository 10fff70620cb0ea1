"""The parameters of the DAGs' runs: one frozen dataclass per DAG whose fields carry their JSON schema and
description (the crawl's ``HarvestParams``, ``CatalogueParams``, ``ArchiveParams`` and ``RevisitParams``).

Declared as ``geoweb.paramspec`` says: a DAG builds its trigger-form Params from ``param_specs(cls)``, its
tasks rebuild the dataclass from the run's conf with ``cls.from_conf``. The Airflow Variables that stand in
for params a run leaves empty are named here, where the params' descriptions name them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from geoweb.models import ALL_TYPES
from geoweb.paramspec import InvalidParams, choices_of, list_of, param, to_conf, values_from_conf
from geoweb.settings import RANGES, Settings

# Airflow Variables read for params a run leaves empty (a scheduled run leaves them all empty)
SEEDS_VARIABLE = "geoweb_seeds"  # seed URLs, a JSON list
PROVIDERS_VARIABLE = "geoweb_search_providers"  # search providers, a JSON list
ALLOWED_HOSTS_VARIABLE = "geoweb_allowed_hosts"  # hosts on private addresses every DAG may fetch, a JSON list
POLICIES_VARIABLE = "geoweb_url_policies"  # URL-pattern policies, a JSON list (docs/revisits.md)
CATALOGUES_VARIABLE = "geoweb_csw_catalogues"  # CSW endpoints to harvest besides those found, a JSON list
ARCHIVES_VARIABLE = "geoweb_archives"  # the archive adapters of scheduled runs, a JSON list
HOUR = 3600.0  # params in hours (a run's time budget, revisit intervals), settings in seconds
MEGABYTE = 1_000_000  # params in megabytes, settings in bytes
MAX_HOURS = 24 * 366  # a year and a day: the longest interval or time budget a param takes
MAX_MEGABYTES = 10**9  # a petabyte: the largest byte budget a param takes


def budget_bytes(megabytes: float | None) -> int | None:
    """A budget in megabytes, a param's unit, in bytes, the crawl's; None (no budget) stays None."""
    return None if megabytes is None else round(megabytes * MEGABYTE)


def budget_seconds(hours: float | None) -> float:
    """A time budget in hours, a param's unit, in seconds, as a setting takes it: 0 for none."""
    return 0.0 if hours is None else hours * HOUR


MAX_LEVEL = 5  # the DAG has one task pair per level up to here
MAX_SHARDS = 256  # a level's map length; well under Airflow's max_map_length (1024)
MAX_SEEDS = 10_000  # the most seeds one crawl run takes
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
_HOST_PORT = {
    "type": "string",
    "pattern": r"^[A-Za-z0-9.\-]+(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$",
    "description": "a host or host:port",
}


SEEDING = "Search seeding"
POLITENESS = "Politeness and scale"
PRIORITY = "Link priority and URL policies"


def allowed_hosts_param(section: str | None = None) -> Any:
    """The hosts a run may reach on private addresses: the same param in every DAG that fetches."""
    return param(
        (),
        "Hosts (host or host:port) that may resolve to private or loopback addresses, one per line; every "
        "other such address is refused. Needed for a web on a local network (the demo's: 127.0.0.1). Empty: "
        f"the Airflow Variable {ALLOWED_HOSTS_VARIABLE} (a JSON list), else none.",
        section=section,
        optional=True,
        **list_of(_HOST_PORT, maxItems=1_000),
    )


def per_host_delay_param(section: str | None = None) -> Any:
    """The politeness delay: the same param in every DAG that fetches."""
    return param(
        _DEFAULTS.per_host_delay,
        f"Seconds between two requests to one host (politeness; default {_DEFAULTS.per_host_delay}); a larger "
        "robots.txt Crawl-delay wins.",
        section=section,
        type="number",
        minimum=0,
        maximum=_DEFAULTS.max_crawl_delay,
    )


def url_policies_param(section: str) -> Any:
    """URL-pattern policies: the same param in every DAG that fetches."""
    return param(
        None,
        'URL-pattern policies, a JSON list of rules, the first match deciding: [{"pattern": "^https?://'
        'example\\.org/calendar/", "action": "skip"}, {"pattern": "/wms", "action": "fetch"}] (see '
        f"docs/revisits.md). Empty (the default): the Airflow Variable {POLICIES_VARIABLE}, else "
        "GEOWEB_URL_POLICIES.",
        section=section,
        optional=True,
        type="string",
        maxLength=100_000,
    )


def _checked_policies(params: Any) -> Any:
    """``params`` once their url_policies, if any, are valid rules."""
    from geoweb.policy import InvalidPolicy, URLPolicies  # not at DAG parse time

    if params.url_policies:
        try:
            URLPolicies.from_json(params.url_policies, "param url_policies")
        except InvalidPolicy as exc:
            raise InvalidParams(str(exc)) from None
    return params


@dataclass(frozen=True)
class HarvestParams:
    """What one run of the crawl DAG does. Lists are tuples here and JSON arrays in the conf.

    Fields without a section fill the trigger form's first, open section: what a user sets for a crawl;
    the rest wait in collapsed sections with their defaults."""

    seeds: tuple[str, ...] = param(
        (),
        "Seed pages at level 0: absolute http(s) URLs, one per line. Needed, unless search_providers are "
        f"chosen. A scheduled run takes them from the Airflow Variable {SEEDS_VARIABLE} (a JSON list), and its "
        f"providers from {PROVIDERS_VARIABLE}; with neither set it does nothing and says so.",
        optional=True,
        **list_of(_URL, maxItems=MAX_SEEDS),
    )
    allowed_hosts: tuple[str, ...] = allowed_hosts_param()
    max_level: int = param(
        MAX_LEVEL,
        f"Link hops to follow from the seeds (a seed is level 0): 0 to {MAX_LEVEL}, default {MAX_LEVEL}.",
        type="integer",
        minimum=0,
        maximum=MAX_LEVEL,
    )
    types: tuple[str, ...] = param(
        ALL_TYPES,
        "Resource types to detect and load; default all of them.",
        **choices_of(ALL_TYPES, minItems=1),
    )
    crawl: str = param(
        "",
        "The crawl this run continues: the runs of one crawl share what they learn of its URLs (validators, "
        "signatures, links, resources found), so a run asks again with If-None-Match and If-Modified-Since "
        "and carries over what did not change, unread. Empty (the default): named after the seeds and search "
        "providers, so the runs of the same seeds (every scheduled run) continue each other.",
        optional=True,
        type="string",
        pattern=r"^[A-Za-z0-9_.:-]{0,100}$",
    )
    search_providers: tuple[str, ...] = param(
        (),
        "Sources that turn the keywords (section Search seeding) into level-0 seeds: web search (searxng, "
        "google, brave: every hit is a seed page) and data portals (datagov, ckan: every dataset's service "
        "and file links). Each reads its URL and key from the Airflow Connection geoweb_<name> (extra: url "
        "and other settings; password: the key), else from GEOWEB_<NAME>_URL, GEOWEB_<NAME>_KEY. Default: "
        "none.",
        optional=True,
        **choices_of(SEARCH_PROVIDERS),
    )
    keywords: tuple[str, ...] = param(
        (),
        "More keywords for search seeding, one per line, searched after those of keywords_by_type. Without "
        "search_providers they do nothing.",
        section=SEEDING,
        optional=True,
        **list_of(_KEYWORD, maxItems=1_000),
    )
    keywords_by_type: tuple[tuple[str, tuple[str, ...]], ...] = param(
        tuple(KEYWORDS_BY_TYPE.items()),
        "Keywords per resource type for search seeding (a JSON object: type to list of keywords): a run "
        "searches those of its types with every search provider. Empty: the paper's keywords, shown here. "
        "Without search_providers they do nothing.",
        section=SEEDING,
        optional=True,
        type="object",
        propertyNames={"enum": list(ALL_TYPES)},
        additionalProperties=list_of(_KEYWORD, maxItems=100),
    )
    search_pages: int = param(
        SEARCH_PAGES,
        f"Result pages read per keyword and search provider: 1 to 100, default {SEARCH_PAGES} (the paper's "
        "top 10); Google and Brave serve 10 pages at most.",
        section=SEEDING,
        type="integer",
        minimum=1,
        maximum=100,
    )
    shards: int = param(
        8,
        "Crawl tasks per level: each level's URLs are split by host into this many shards (one host, one "
        "shard), run in parallel on the Celery workers. Best equal to the slots of the geoweb_crawl pool (8 in "
        f"the bundled deployment), so a level runs in one wave; 1 to {MAX_SHARDS}, default 8.",
        section=POLITENESS,
        type="integer",
        minimum=1,
        maximum=MAX_SHARDS,
    )
    concurrency: int = param(
        _DEFAULTS.concurrency,
        f"Requests in flight in one crawl task: 1 to 512, default {_DEFAULTS.concurrency}.",
        section=POLITENESS,
        type="integer",
        minimum=1,
        maximum=512,
    )
    per_host_concurrency: int = param(
        _DEFAULTS.per_host_concurrency,
        f"Requests in flight to one host (politeness): 1 to 16, default {_DEFAULTS.per_host_concurrency}.",
        section=POLITENESS,
        type="integer",
        minimum=1,
        maximum=16,
    )
    per_host_delay: float = per_host_delay_param(POLITENESS)
    max_pages_per_host: int = param(
        _DEFAULTS.max_pages_per_host,
        "URLs taken from one host in a run, which ends crawler traps such as endless calendars: default "
        f"{_DEFAULTS.max_pages_per_host}.",
        section=POLITENESS,
        type="integer",
        minimum=1,
        maximum=1_000_000,
    )
    catch_up: bool = param(
        False,
        "Also crawl the URLs the run before this one deferred, each at its level with its source page: those "
        "of hosts it set aside (time or failure budget, a level's deadline) or left for the memory bound. A "
        "host set aside in one run is then tried again in the next. Default off.",
        section=POLITENESS,
        type="boolean",
    )
    full_recrawl: bool = param(
        False,
        "Read every URL whole, as a first run does, whatever the crawl's earlier runs kept; what this run reads "
        "is kept for the next. Default off: what did not change since the crawl's last run is carried over.",
        section=POLITENESS,
        type="boolean",
    )
    revisit_budget: int | None = param(
        None,
        "Pages the crawl's earlier runs read that this run asks again at most, those whose revisit is worth "
        "most first (read only once, then likeliest to have changed, by each page's history); the others are "
        "carried over unasked, with their links and resources. New pages are always fetched, and a page not "
        "read whole for a week is asked whatever the budget. Empty (the default): ask every known page.",
        section=POLITENESS,
        optional=True,
        type="integer",
        minimum=0,
    )
    revisit_megabytes: float | None = param(
        None,
        "Megabytes (10^6 bytes) the known pages this run asks again may weigh at most, each counted at its last "
        "whole read, taken in the order revisit_budget takes them; with both, the run keeps within both. A 304 "
        "reads no body, so the bytes read stay well under this. Empty (the default): no limit in bytes.",
        section=POLITENESS,
        optional=True,
        type="number",
        minimum=0,
        maximum=MAX_MEGABYTES,
    )
    time_budget_hours: float | None = param(
        None,
        "Hours the run sends requests for, from its start: past them it asks nothing more, carries over "
        "unasked the pages its crawl knows (with their links and resources) and defers the URLs new to it "
        "(reason run_time_budget; a run with catch_up takes them). The known pages it asks again are those "
        "likeliest to have changed, as many as the crawl's last run asked in that time (a revisit budget; "
        "with revisit_budget too, the smaller). Empty (the default): no limit.",
        section=POLITENESS,
        optional=True,
        type="number",
        exclusiveMinimum=0,
        maximum=MAX_HOURS,
    )
    link_budget: float = param(
        _DEFAULTS.link_budget,
        "Share of each level's links followed, best topical score first (links are scored by anchor text and "
        "URL against a geospatial vocabulary): 1 (the default) follows all, 0.25 the top quarter of every "
        "level. The seeds are always followed; the links left are marked skipped (reason budget). See "
        "docs/priority.md.",
        section=PRIORITY,
        type="number",
        **RANGES["link_budget"],
    )
    link_min_score: float | None = param(
        None,
        "Links scoring below this are not followed either (scores run from about -1 for a login or calendar "
        "link to 1 for a GetCapabilities link, minus 0.05 per level). Empty (the default): no minimum.",
        section=PRIORITY,
        optional=True,
        type="number",
        minimum=-2,
        maximum=1,
    )
    url_policies: str | None = url_policies_param(PRIORITY)

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any] | None) -> HarvestParams:
        """Defaults overridden by ``conf`` (a run's conf or the DAG's params), validated key by key."""
        params = cls(**values_from_conf(cls, conf))
        if not params.seeds and not params.search_providers:
            raise InvalidParams("param seeds: give at least one seed URL")
        return _checked_policies(params)

    def to_conf(self) -> dict[str, Any]:
        """The JSON form (stored with the run)."""
        return to_conf(self)

    def revisit_bytes(self) -> int | None:
        """``revisit_megabytes`` in bytes."""
        return budget_bytes(self.revisit_megabytes)

    def crawl_name(self) -> str:
        """The crawl this run continues: ``crawl``, else one named after the seeds and search providers."""
        if self.crawl:
            return self.crawl
        digest = hashlib.sha256("\n".join(sorted(self.seeds) + sorted(self.search_providers)).encode())
        return f"seeds:{digest.hexdigest()[:16]}"

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
            run_time_budget=budget_seconds(self.time_budget_hours),
        )


HARVEST = "Catalogue harvest"
CRAWL_RUN_PREFIX = "catalogues__"  # the validation crawls of catalogue links: catalogues__<DAG run id>
VALIDATION = "Validation crawl"
ARCHIVE_ADAPTERS = ("nspo", "stac")  # connector names (geoweb.connectors.CONNECTORS) of the image archives
_CRAWLED = ("types", "allowed_hosts", "shards", "concurrency", "per_host_concurrency", "per_host_delay")


def _validation(name: str, section: str | None = VALIDATION) -> Any:
    """A crawl param as the catalogue DAG's validation crawl of the records' links takes it: the same
    default, description and schema, in the section ``section``."""
    crawled = next(f for f in fields(HarvestParams) if f.name == name)
    schema = {k: v for k, v in crawled.metadata["schema"].items() if k != "section"}
    if section:
        schema["section"] = section
    return field(default=crawled.default, metadata={**crawled.metadata, "schema": schema})


@dataclass(frozen=True)
class CatalogueParams:
    """What one run of the catalogue DAG does: the CSW harvest, then the validation crawl of its links."""

    catalogues: tuple[str, ...] = param(
        (),
        "CSW endpoints to harvest in this run, one per line, besides every CSW the crawl has found. Empty: "
        f"those of the Airflow Variable {CATALOGUES_VARIABLE} (a JSON list), else of GEOWEB_CSW_CATALOGUES "
        "(separated by commas). With none of them the run does nothing and says so.",
        optional=True,
        environ="GEOWEB_CSW_CATALOGUES",
        **list_of(_URL, maxItems=10_000),
    )
    allowed_hosts: tuple[str, ...] = _validation("allowed_hosts", None)
    full: bool = param(
        False,
        "Harvest every catalogue in full, withdrawing the records it no longer has, instead of incrementally "
        "from its watermark; and validate every record's links again, not only those of records changed "
        "since they were last validated. Default off.",
        type="boolean",
    )
    schema: str = param(
        "dc",
        "Records as Dublin Core (csw:Record, every catalogue has it; the default) or ISO 19139 "
        "(gmd:MD_Metadata: richer links and protocols).",
        section=HARVEST,
        type="string",
        enum=["dc", "iso"],
    )
    page_size: int = param(
        100,
        "Records per GetRecords request: 1 to 10,000, default 100. Catalogues' own defaults (10) make "
        "harvests crawl.",
        section=HARVEST,
        type="integer",
        minimum=1,
        maximum=10_000,
    )
    timeout: float = param(
        120,
        "Seconds one page may take: 1 to 3600, default 120. Large catalogues are slow, and short timeouts "
        "fail them.",
        section=HARVEST,
        type="number",
        minimum=1,
        maximum=3600,
    )
    full_every_days: int = param(
        7,
        "A catalogue whose last complete full harvest is older than this many days is harvested in full "
        "(incremental harvests cannot see deleted records): 1 to 365, default 7.",
        section=HARVEST,
        type="integer",
        minimum=1,
        maximum=365,
    )
    types: tuple[str, ...] = _validation("types")
    shards: int = _validation("shards")
    concurrency: int = _validation("concurrency")
    per_host_concurrency: int = _validation("per_host_concurrency")
    per_host_delay: float = _validation("per_host_delay")

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any] | None) -> CatalogueParams:
        """Defaults overridden by ``conf``, validated key by key."""
        return cls(**values_from_conf(cls, conf))

    def to_conf(self) -> dict[str, Any]:
        return to_conf(self)

    def crawl_conf(self) -> dict[str, Any]:
        """The validation crawl's conf (a HarvestParams conf without seeds)."""
        conf = self.to_conf()
        return {name: conf[name] for name in _CRAWLED}


@dataclass(frozen=True)
class ArchiveParams:
    """What one run of the archive DAG does."""

    archives: tuple[str, ...] = param(
        (),
        f"Archives to read ({', '.join(ARCHIVE_ADAPTERS)}). Empty: those of the Airflow Variable "
        f"{ARCHIVES_VARIABLE} (a JSON list); with none the run does nothing and says so.",
        optional=True,
        **choices_of(ARCHIVE_ADAPTERS),
    )
    bbox: tuple[float, ...] | None = param(
        None,
        "Only scenes in this WGS84 box, [west, south, east, north] in degrees. Empty (the default): "
        "everywhere.",
        optional=True,
        type="array",
        items={"type": "number"},
        minItems=4,
        maxItems=4,
    )

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any] | None) -> ArchiveParams:
        """Defaults overridden by ``conf``, validated key by key."""
        return cls(**values_from_conf(cls, conf))

    def to_conf(self) -> dict[str, Any]:
        return to_conf(self)


MAX_BATCH = 10_000
SCHEDULE = "Revisit schedule"


@dataclass(frozen=True)
class RevisitParams:
    """What one revisit run does."""

    batch_size: int = param(
        5_000,
        f"Resources checked in this run at most, those due longest first; the rest wait for the next run: 1 "
        f"to {MAX_BATCH}, default 5000 (hourly runs: up to 120,000 checks a day).",
        type="integer",
        minimum=1,
        maximum=MAX_BATCH,
    )
    types: tuple[str, ...] = param(
        ALL_TYPES, "Resource types to re-check; default all of them.", **choices_of(ALL_TYPES, minItems=1)
    )
    allowed_hosts: tuple[str, ...] = allowed_hosts_param()
    dead_after: int = param(
        _DEFAULTS.revisit_dead_after,
        "Failed checks in a row after which a resource is marked dead (kept, checked only at the maximum "
        f"interval, alive again when it answers): default {_DEFAULTS.revisit_dead_after}.",
        section=SCHEDULE,
        type="integer",
        minimum=1,
        maximum=100,
    )
    min_interval_hours: float = param(
        _DEFAULTS.revisit_min_interval / HOUR,
        "Shortest interval between two checks of a resource, in hours: one that changes at every check ends "
        f"here. Default {_DEFAULTS.revisit_min_interval / HOUR:g}.",
        section=SCHEDULE,
        type="number",
        exclusiveMinimum=0,
        maximum=MAX_HOURS,
    )
    max_interval_hours: float = param(
        _DEFAULTS.revisit_max_interval / HOUR,
        "Longest interval between two checks, in hours: one that never changes, or is dead, is checked this "
        f"often. Default {_DEFAULTS.revisit_max_interval / HOUR:g}.",
        section=SCHEDULE,
        type="number",
        exclusiveMinimum=0,
        maximum=MAX_HOURS,
    )
    shards: int = param(
        16,
        "Check tasks the due resources are split into by host (one host, one task), run in parallel on the "
        f"Celery workers: 1 to {MAX_SHARDS}, default 16.",
        section=POLITENESS,
        type="integer",
        minimum=1,
        maximum=MAX_SHARDS,
    )
    per_host_delay: float = per_host_delay_param(POLITENESS)
    url_policies: str | None = url_policies_param(SCHEDULE)
    operations: bool = param(
        True,
        "After a good check, ask each service for one small operation (a WMS a map, a WFS a feature, a WCS a "
        "coverage description, an OGC API an item, an ArcGIS map service an export, a file its first bytes) "
        "and judge the answer, so a service whose capabilities answer while its operations fail shows as "
        "failing. Default on.",
        section=SCHEDULE,
        type="boolean",
    )

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any] | None) -> RevisitParams:
        """Defaults overridden by ``conf``, validated key by key."""
        params = cls(**values_from_conf(cls, conf))
        if params.min_interval_hours > params.max_interval_hours:
            raise InvalidParams("param min_interval_hours: above max_interval_hours")
        return _checked_policies(params)

    def to_conf(self) -> dict[str, Any]:
        return to_conf(self)

    def settings(self, base: Settings | None = None) -> Settings:
        """The settings of this run: ``base`` (default: from the environment) with the run's values."""
        base = base or Settings.from_env()
        return base.with_(
            url_policies=self.url_policies or base.url_policies,
            revisit_dead_after=self.dead_after,
            revisit_min_interval=self.min_interval_hours * HOUR,
            revisit_max_interval=self.max_interval_hours * HOUR,
            allowed_hosts=frozenset(h.lower() for h in self.allowed_hosts),
            per_host_delay=float(self.per_host_delay),
            obey_robots=True,
        )
