"""Every setting of the crawl engine, with its default and the reason for it.

Components take plain arguments; ``Settings`` is how the CLI and the DAGs build them. Override a field with
``Settings(**overrides)`` or from the environment with ``Settings.from_env()`` (``GEOWEB_<FIELD>``). Every
construction is validated: a value out of its range raises ``SettingsError`` naming the setting, or its
environment variable, before anything is fetched.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, fields, replace

from geoweb.errors import SettingsError
from geoweb.paramspec import InvalidParams, check_value, range_text

MB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Settings:
    # --- identity ---
    # Servers must be able to tell who crawls them and how to complain.
    user_agent: str = "GeoWebHarvester/0.1 (+https://github.com/geoweb-harvester/geoweb-harvester)"
    # --- timeouts (seconds) ---
    connect_timeout: float = 10.0
    read_timeout: float = 20.0  # longest silence between two chunks of a body
    total_timeout: float = 60.0  # a slow-drip server ends here whatever it sends
    # --- sizes ---
    max_body_bytes: int = 10 * MB  # streamed cap; larger bodies are cut and marked incomplete
    max_xml_bytes: int = 20 * MB  # capabilities documents are parsed only below this
    max_redirects: int = 5
    # links of a level held in the hosts' queues at once; more are read (from the frontier) as they drain
    queued_links: int = 10_000
    max_url_length: int = 2048
    # --- politeness ---
    concurrency: int = 64  # requests in flight in one process
    per_host_concurrency: int = 2
    per_host_delay: float = 0.0  # seconds between two requests to one host; robots Crawl-delay wins if larger
    max_crawl_delay: float = 30.0  # a robots Crawl-delay above this is capped, not obeyed blindly
    obey_robots: bool = True
    robots_5xx_allow: bool = False  # a robots.txt answering 5xx means "keep out for now" (RFC 9309 2.3.1.4)
    # --- retries ---
    retries: int = 2  # on connection errors, 5xx and 429
    retry_backoff: float = 0.5  # seconds, doubled each attempt; a Retry-After header wins if it is short
    # A Retry-After above this is not waited for: the 429 or 503 stands, and counts as a host failure below.
    max_retry_after: float = 30.0
    # --- time and failure budgets: no level waits on one host (docs/development.md, "Bounded time") ---
    # A host set aside is crawled no further in the run: its URLs are marked deferred with the reason, and
    # counted in the run's report. 0 turns a budget off.
    # seconds a level may wait on one host: counted while no other URL waits for a fetch slot
    host_time_budget: float = 300.0
    host_max_failures: int = 10  # failed fetches in a row after which a host is set aside
    level_deadline: float = 1800.0  # seconds one level (one shard of it in a DAG run) may take
    # seconds a run sends requests for, from its start: past them, the pages its crawl knows are carried over
    # unasked and new URLs deferred (a run with catch_up takes them)
    run_time_budget: float = 0.0
    # --- address guard ---
    # host or host:port entries that may resolve to private/loopback addresses (tests and demos)
    allowed_hosts: frozenset[str] = field(default_factory=frozenset)
    # --- crawl scope ---
    max_level: int = 5
    max_pages_per_host: int = 5000  # ends crawler traps such as endless calendars
    # --- link priority (docs/priority.md) ---
    # A level's links are followed in descending topical score; the budget follows only the top fraction of
    # each level's links (1.0: all) and, of those, only links scoring at least link_min_score (-inf: all).
    link_budget: float = 1.0
    link_min_score: float = float("-inf")
    # --- dedup ---
    expected_urls: int = 1_000_000
    bloom_error_rate: float = 1e-4
    # --- detection ---
    shapefile_download_cap: int = 10 * MB  # above it, a ZIP is identified from its central directory only
    zip_max_ratio: int = 100  # compression ratio above which a member is a zip bomb
    zip_max_member_bytes: int = 200 * MB
    kml_max_bytes: int = 50 * MB  # uncompressed KML inside a KMZ
    ogcapi_max_datasets: int = 1000  # collections (or processes) of an OGC API kept; more are cut, logged
    # --- STAC (docs/stac.md) ---
    stac_max_children: int = 100  # child catalogs and collections a static catalog's walk fetches
    stac_max_depth: int = 3  # link hops from a static root catalog to the collections counted
    stac_max_pages: int = 10  # pages of a STAC API's /collections followed through rel=next
    # --- ArcGIS REST (docs/arcgis.md) ---
    arcgis_max_services: int = 100  # services a services directory lists and describes (2 requests each)
    arcgis_max_folders: int = 50  # folders of a services directory walked (1 request each)
    arcgis_max_layers: int = 1000  # layers and tables kept as datasets of one service
    # --- semantic categories (docs/semantic.md) ---
    # LCS similarity (common subsequence over the longer word) a name word needs to match a concept label
    # when no label matches exactly; below 0.85, unrelated words match ("store" ~ "shore"; bench/README.md).
    concept_lcs_threshold: float = 0.85
    describe_feature_types: int = 20  # unmatched WFS feature types in its one DescribeFeatureType; 0: off
    schema_max_bytes: int = 2 * MB  # a DescribeFeatureType answer above it is not read
    # --- URL-pattern policies (docs/revisits.md) ---
    # An ordered JSON list of {pattern, action: fetch|skip, revisit_hours}: the JSON itself (text starting
    # with "["), or the path of a file holding it. Empty: no policies.
    url_policies: str = ""
    # --- revisits: each known resource is re-checked at an interval adapted to how often it changes ---
    revisit_initial_interval: float = 86_400.0  # seconds from discovery to the first check
    revisit_min_interval: float = 3_600.0  # a service that changes at every check is checked this often
    revisit_max_interval: float = 30 * 86_400.0  # one that never changes (or is dead) at least this often
    revisit_dead_after: int = 5  # failed checks in a row that mark a resource dead (never deleted)
    # --- lenient and bounded reading of large files (docs/reliability.md) ---
    # A ZIP over the download cap from a server that ignores Range is streamed to its end, keeping only its
    # last 64 KiB (its central directory): at most this many bytes are streamed; more is left alone.
    tail_stream_max_bytes: int = 200 * MB
    # The memory one crawl process is built to stay under whatever it meets: every input path is bounded
    # (KML streamed, shapefile headers only, probes one at a time under the body cap), and every body is
    # admitted against it (geoweb.fetch.memory): the process's resident memory above what it held when its
    # fetcher opened, plus the bodies being read. A body that cannot fit waits, or its page is deferred.
    # tests/hostile/test_memory_hostile.py measures the peaks.
    max_memory_bytes: int = 400 * MB
    # --- capabilities validation (OWSLib, in worker processes off the event loop) ---
    validation_workers: int = 2  # processes reading capabilities documents with OWSLib
    # CPU seconds OWSLib may spend on one document, over which it is a miss; ten times that in wall time ends
    # its worker
    validation_timeout: float = 10.0
    validation_memory_bytes: int = 1024 * MB  # address space of a worker (RLIMIT_AS); over it, a miss
    validation_nice: int = 10  # workers' niceness: the crawl's event loop gets the CPU first
    # --- politeness across the deployment (docs/reliability.md#one-politeness-for-the-deployment) ---
    # The Redis URL of the per-origin leases every process shares (per_host_concurrency and the delay,
    # robots Crawl-delay included, then hold across every task of every DAG and every run). Default none:
    # per-process politeness only. When it is set and cannot be reached, requests fail as fetch errors
    # (reason lease_store) rather than go out unbounded by the other processes' requests.
    host_leases: str = ""
    host_lease_margin: float = 30.0  # a lease lives total_timeout plus this: a killed holder frees it then
    # --- the catalogue (docs/catalogue.md): CSW and OGC API - Records at /geohub/csw and /geohub/records ---
    catalogue_public: bool = False  # yes: anyone may read it; no: only users logged in to Airflow, as GeoHub
    catalogue_upstream: str = "http://127.0.0.1:8090"  # the catalogue's own process, which GeoHub forwards to
    catalogue_timeout: float = 60.0  # seconds a catalogue answer may take, connecting to its last byte
    catalogue_max_request_bytes: int = 1 * MB  # a CSW POST body; larger is refused with 413
    catalogue_max_response_bytes: int = 50 * MB  # an answer (at most 100 full records); larger is a 502

    # --- exports (GeoHub's export of a search) ---
    # Resources one export of a search holds at most (with all their datasets): the file is written to a
    # temporary file in batches, so memory stays bounded; this bounds the time and the disk.
    export_max_resources: int = 100_000

    def __post_init__(self) -> None:
        for f in fields(self):
            problem = _problem(f.name, getattr(self, f.name))
            if problem:
                raise SettingsError(f"setting {f.name}: {problem}")

    def with_(self, **changes) -> Settings:
        return replace(self, **changes)

    @classmethod
    def from_env(cls, environ=os.environ, **overrides) -> Settings:
        """Defaults, then ``GEOWEB_<FIELD>`` environment variables, then ``overrides``; a variable that cannot
        be read or is out of range raises SettingsError naming it."""
        values = {}
        for f in fields(cls):
            variable = f"GEOWEB_{f.name.upper()}"
            raw = environ.get(variable)
            if raw is None or f.name in overrides:
                continue
            try:
                values[f.name] = _parsed(raw, getattr(_DEFAULTS, f.name))
            except ValueError:
                raise SettingsError(f"{variable}: not a {_kind(f.name)}: {raw!r}") from None
            problem = _problem(f.name, values[f.name])
            if problem:
                raise SettingsError(f"{variable}: {problem}")
        values.update(overrides)
        return cls(**values)


# Ranges beyond "a finite number, not negative", which every other number setting must be; 0 turns the
# budgets and optional limits off.
_POSITIVE = frozenset({
    "connect_timeout", "read_timeout", "total_timeout", "max_body_bytes", "max_xml_bytes", "max_url_length",
    "concurrency", "per_host_concurrency", "queued_links", "max_pages_per_host", "expected_urls", "shapefile_download_cap",
    "zip_max_ratio", "zip_max_member_bytes", "kml_max_bytes", "schema_max_bytes", "tail_stream_max_bytes",
    "max_memory_bytes", "validation_workers", "validation_timeout", "validation_memory_bytes",
    "revisit_initial_interval", "revisit_min_interval", "revisit_max_interval", "revisit_dead_after",
    "export_max_resources",
    "catalogue_timeout", "catalogue_max_request_bytes", "catalogue_max_response_bytes",
})  # fmt: skip
# Each as the JSON-schema bounds a run param of the same name takes too (geoweb.harvest.params), with what
# the value is, for the message.
RANGES = {
    "link_budget": {"exclusiveMinimum": 0, "maximum": 1},
    "bloom_error_rate": {"exclusiveMinimum": 0, "exclusiveMaximum": 1},
    "concept_lcs_threshold": {"minimum": 0, "maximum": 1},
    "validation_nice": {"minimum": -20, "maximum": 19},
}
_WHAT = {
    "link_budget": "a link budget is a fraction",
    "bloom_error_rate": "a false-positive rate is a fraction",
    "concept_lcs_threshold": "a similarity threshold is",
    "validation_nice": "a niceness is",
}


def _problem(name: str, value) -> str | None:
    """What is wrong with a setting's value, or None."""
    if name in RANGES:
        try:
            check_value(name, RANGES[name], value)
        except InvalidParams:
            return f"{_WHAT[name]} {range_text(RANGES[name])}, not {value}"
        return None
    if name == "link_min_score" or isinstance(value, bool) or not isinstance(value, int | float):
        return None  # any score, -inf included; text and host sets are read where they are used
    if not math.isfinite(value) or value < 0 or (value == 0 and name in _POSITIVE):
        return f"must be {'greater than 0' if name in _POSITIVE else 'at least 0'}, not {value}"
    return None


def _parsed(raw: str, default):
    """An environment variable's text as a value of the default's type."""
    if isinstance(default, bool):
        word = raw.strip().lower()
        if word not in ("1", "true", "yes", "on", "0", "false", "no", "off", ""):
            raise ValueError(raw)
        return word in ("1", "true", "yes", "on")
    if isinstance(default, frozenset):
        return frozenset(h.strip().lower() for h in raw.split(",") if h.strip())
    return type(default)(raw)


def _kind(name: str) -> str:
    default = getattr(_DEFAULTS, name)
    return {bool: "yes/no value", int: "whole number", float: "number"}.get(type(default), "value")


_DEFAULTS = Settings()
