"""The parameters of a harvest run: one dataclass whose fields carry their JSON schema and description.

The DAG builds its trigger-form Params from ``param_specs()``, and the tasks rebuild ``HarvestParams`` from
the run's conf with ``HarvestParams.from_conf``; both validate against the same schemas, so the form, the
CLI/REST conf and the library agree on every key.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

from geoweb.models import ALL_TYPES
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
}

_DEFAULTS = Settings()
# A pattern's "description" completes the error message "<value> is not <description>".
_URL = {
    "type": "string",
    "pattern": r"^[Hh][Tt][Tt][Pp][Ss]?://[^\s/?#]+\S*$",
    "maxLength": _DEFAULTS.max_url_length,
    "description": "an absolute http(s) URL",
}
_HOST_PORT = {
    "type": "string",
    "pattern": r"^[A-Za-z0-9.\-]+(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$",
    "description": "a host or host:port",
}
_KEYWORD = {"type": "string", "minLength": 1, "maxLength": 200}


class InvalidParams(ValueError):
    """Raised by ``HarvestParams.from_conf`` for a conf that does not validate; the message names the key."""


def _param(default: Any, description: str, **schema: Any) -> Any:
    """A dataclass field holding its JSON schema and trigger-form description as metadata."""
    return field(default=default, metadata={"description": description, "schema": schema})


def _list(items: dict[str, Any], **schema: Any) -> dict[str, Any]:
    return {"type": "array", "items": items, "uniqueItems": True, **schema}


@dataclass(frozen=True)
class HarvestParams:
    """What one run of the crawl DAG does. Lists are tuples here and JSON arrays in the conf."""

    seeds: tuple[str, ...] = _param(
        (),
        "Seed pages (absolute http(s) URLs) at level 0. When empty, the Airflow Variable geoweb_seeds "
        "(a JSON list of URLs) gives them: that is how scheduled runs are seeded.",
        **_list(_URL, maxItems=10_000),
    )
    keywords: tuple[str, ...] = _param(
        (),
        "More keywords for search seeding, searched after those of keywords_by_type. Without "
        "search_providers they do nothing.",
        **_list(_KEYWORD, maxItems=1_000),
    )
    keywords_by_type: tuple[tuple[str, tuple[str, ...]], ...] = _param(
        tuple(KEYWORDS_BY_TYPE.items()),
        "Keywords per resource type for search seeding: a run searches those of its types with every "
        "search provider. Edit them here; without search_providers they do nothing.",
        type="object",
        propertyNames={"enum": list(ALL_TYPES)},
        additionalProperties=_list(_KEYWORD, maxItems=100),
    )
    search_providers: tuple[str, ...] = _param(
        (),
        "Sources that turn the keywords into level-0 seeds, each seed keeping its keyword: web search "
        "(searxng, google, brave: every hit is a seed page) and data portals (datagov, ckan: every dataset's "
        "service and file links). Each reads its URL and key from the Airflow Connection geoweb_<name> "
        "(extra: url and other settings; password: the key), else from GEOWEB_<NAME>_URL, GEOWEB_<NAME>_KEY...",
        **_list({"type": "string", "enum": list(SEARCH_PROVIDERS)}),
    )
    search_pages: int = _param(
        SEARCH_PAGES,
        "Result pages read per keyword and search provider (the paper's top 10); Google and Brave serve 10 "
        "pages at most.",
        type="integer",
        minimum=1,
        maximum=100,
    )
    types: tuple[str, ...] = _param(
        ALL_TYPES,
        f"Resource types to detect and load (default all: {', '.join(ALL_TYPES)}).",
        **_list({"type": "string", "enum": list(ALL_TYPES)}, minItems=1),
    )
    max_level: int = _param(
        MAX_LEVEL,
        f"Link hops to follow from the seeds (a seed is level 0); at most {MAX_LEVEL}.",
        type="integer",
        minimum=0,
        maximum=MAX_LEVEL,
    )
    allowed_hosts: tuple[str, ...] = _param(
        (),
        "Hosts (host or host:port) that may resolve to private or loopback addresses; every other such "
        "address is refused. For tests and demos on a local network.",
        **_list(_HOST_PORT, maxItems=1_000),
    )
    shards: int = _param(
        16,
        "Shards per level: each level's URLs are split by host into this many crawl tasks (one host, one "
        "shard), run in parallel on the Celery workers.",
        type="integer",
        minimum=1,
        maximum=MAX_SHARDS,
    )
    concurrency: int = _param(
        _DEFAULTS.concurrency,
        "Requests in flight in one crawl task.",
        type="integer",
        minimum=1,
        maximum=512,
    )
    per_host_concurrency: int = _param(
        _DEFAULTS.per_host_concurrency,
        "Requests in flight to one host (politeness).",
        type="integer",
        minimum=1,
        maximum=16,
    )
    per_host_delay: float = _param(
        _DEFAULTS.per_host_delay,
        "Seconds between two requests to one host (politeness); a larger robots.txt Crawl-delay wins.",
        type="number",
        minimum=0,
        maximum=_DEFAULTS.max_crawl_delay,
    )
    max_pages_per_host: int = _param(
        _DEFAULTS.max_pages_per_host,
        "URLs taken from one host in a run; ends crawler traps such as endless calendars.",
        type="integer",
        minimum=1,
        maximum=1_000_000,
    )

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any] | None) -> HarvestParams:
        """Defaults overridden by ``conf`` (a run's conf or the DAG's params), validated key by key."""
        conf = dict(conf or {})
        unknown = sorted(set(conf) - {f.name for f in fields(cls)})
        if unknown:
            raise InvalidParams(f"unknown param(s) {', '.join(unknown)}; known: {', '.join(_names())}")
        values = {}
        for name, default, _, schema in param_specs():
            value = conf.get(name, default)
            error = best_match(Draft202012Validator(schema).iter_errors(value))
            if error is not None:
                raise InvalidParams(_message(name, error))
            if isinstance(value, float) and math.isnan(value):  # passes every JSON Schema bound
                raise InvalidParams(f"param {name}: NaN is not a number")
            if schema["type"] == "integer":
                value = int(value)  # JSON Schema counts 5.0 as an integer
            values[name] = _frozen(value)
        params = cls(**values)
        if not params.seeds and not params.search_providers:
            raise InvalidParams("param seeds: give at least one seed URL")
        return params

    def to_conf(self) -> dict[str, Any]:
        """The JSON form (stored with the run)."""
        return {f.name: _json(getattr(self, f.name), f.metadata["schema"]) for f in fields(self)}

    def search_keywords(self) -> tuple[str, ...]:
        """The keywords search seeding searches: those of the run's types, then ``keywords``, each once."""
        by_type = dict(self.keywords_by_type)
        return tuple(dict.fromkeys([k for t in self.types for k in by_type.get(t, ())] + list(self.keywords)))

    def settings(self, base: Settings | None = None) -> Settings:
        """The engine's settings for this run: ``base`` (default: from the environment) with the run's
        scope and politeness; robots.txt is always obeyed."""
        return (base or Settings.from_env()).with_(
            max_level=self.max_level,
            allowed_hosts=frozenset(h.lower() for h in self.allowed_hosts),
            concurrency=self.concurrency,
            per_host_concurrency=self.per_host_concurrency,
            per_host_delay=float(self.per_host_delay),
            max_pages_per_host=self.max_pages_per_host,
            obey_robots=True,
        )


def param_specs() -> Iterator[tuple[str, Any, str, dict[str, Any]]]:
    """(name, JSON default, description, JSON schema) of every parameter, in declaration order."""
    for f in fields(HarvestParams):
        yield f.name, _json(f.default, f.metadata["schema"]), f.metadata["description"], f.metadata["schema"]


def _message(name: str, error: ValidationError) -> str:
    where = "".join(f"[{p}]" for p in error.absolute_path)
    what = error.message
    if error.validator == "pattern" and "description" in error.schema:
        what = f"{error.instance!r} is not {error.schema['description']}"
    return f"param {name}{where}: {what}"


def _names() -> list[str]:
    return [f.name for f in fields(HarvestParams)]


def _frozen(value: Any) -> Any:
    """A JSON value as the frozen dataclass holds it: arrays as tuples, objects as tuples of pairs."""
    if isinstance(value, dict):
        return tuple((k, _frozen(v)) for k, v in value.items())
    return tuple(value) if isinstance(value, list) else value


def _json(value: Any, schema: dict[str, Any]) -> Any:
    if schema["type"] == "object":
        return {k: list(v) for k, v in value}
    return list(value) if isinstance(value, tuple) else value
