"""The ``geoweb`` command: run the library without Airflow (crawl a web, trace a URL through the filters, read
one outside source, migrate or export the harvest database)."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

from geoweb.cliparams import add_param_options
from geoweb.errors import SettingsError, UnreadableState
from geoweb.harvest.export import FORMATS, LAYERS
from geoweb.harvest.params import (
    SEARCH_PAGES,
    WEB_SEARCH,
    CatalogueParams,
    HarvestParams,
    RevisitParams,
    budget_bytes,
    budget_seconds,
)
from geoweb.models import ALL_TYPES
from geoweb.settings import Settings

log = logging.getLogger("geoweb")


# The params of a DAG run that a command takes, each with the option strings it keeps besides --field-name.
CRAWL_PARAMS = {
    "seeds": ("--seed",),
    "allowed_hosts": ("--allow-host",),
    "max_level": (),
    "types": (),
    "concurrency": (),
    "per_host_concurrency": (),
    "per_host_delay": ("--delay",),
    "max_pages_per_host": (),
    "link_budget": (),
    "link_min_score": ("--min-score",),
    "revisit_budget": (),
    "revisit_megabytes": (),
    "time_budget_hours": (),
}
# those of them that are not the crawl's settings of the same name
NOT_SETTINGS = frozenset({"seeds", "types", "revisit_budget", "revisit_megabytes", "time_budget_hours"})
REVISIT_PARAMS = {
    "batch_size": (),
    "types": (),
    "allowed_hosts": ("--allow-host",),
    "dead_after": (),
    "min_interval_hours": (),
    "max_interval_hours": (),
    "per_host_delay": ("--delay",),
    "operations": (),
}
CSW_PARAMS = {"allowed_hosts": ("--allow-host",), "schema": (), "page_size": (), "timeout": ()}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="geoweb", description=__doc__)
    parser.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING (default INFO; on stderr)")
    commands = parser.add_subparsers(dest="command", required=True)
    _add_crawl(commands)
    trace = commands.add_parser("filter", help="show what the URL filter chain does with URLs")
    trace.add_argument("urls", nargs="+")
    _add_revisit(commands)
    commands.add_parser(
        "migrate", help="apply the pending schema migrations to the harvest database (GEOWEB_DB); idempotent"
    )
    _add_export(commands)
    _add_searches(commands)
    _add_catalogues(commands)
    return parser


def _add_crawl(commands) -> None:
    crawl = commands.add_parser(
        "crawl", help="crawl breadth-first from seed pages and report resources found",
        description="Options named as the crawl DAG's params take the same values; one not given takes its "
        "GEOWEB_<NAME> setting, else the param's default.",
    )  # fmt: skip
    add_param_options(crawl, HarvestParams, CRAWL_PARAMS)
    crawl.add_argument("--seeds-file", type=Path, help="a file of seed URLs, one per line (# comments)")
    crawl.add_argument("--output", "-o", default="-", help="JSON-lines file of resources (default stdout)")
    crawl.add_argument(
        "--state", type=Path, metavar="PATH",
        help="a file the crawl keeps between runs: unchanged pages are carried over (conditional requests),"
        " and the output lists every resource held, each with its verdict (new, changed, unchanged, gone)",
    )  # fmt: skip
    crawl.add_argument(
        "--plot", type=Path, help="write a PNG of resources and discovery ratio per level, and recall"
    )


def _add_export(commands) -> None:
    export = commands.add_parser(
        "export",
        help="write a run's resources and datasets from PostGIS (GEOWEB_DB): geoweb crawl JSON lines, CSV, "
        "GeoJSON, GeoPackage or GeoParquet",
    )
    export.add_argument("--run", required=True, metavar="RUN_ID|latest", help="the run, or latest started")
    export.add_argument("--output", "-o", default="-", help="the file (default stdout, JSON lines only)")
    export.add_argument("--format", choices=FORMATS, default="jsonl", help="default jsonl")
    export.add_argument(
        "--layer", choices=LAYERS,
        help="the table to write: csv, geojson and parquet hold one (default resources), gpkg both",
    )  # fmt: skip


def _add_searches(commands) -> None:
    """The connectors that search: their settings come from GEOWEB_<NAME>_URL, GEOWEB_<NAME>_KEY... (see
    geoweb.connectors.api)."""
    seed = commands.add_parser(
        "seed", help="search the web with one provider (GEOWEB_<PROVIDER>_URL, _KEY...): hits as JSON lines"
    )
    seed.add_argument("--provider", required=True, choices=WEB_SEARCH)
    seed.add_argument("--keyword", action="append", required=True, help="a search keyword (repeatable)")
    seed.add_argument(
        "--pages", type=_positive, default=SEARCH_PAGES, help="result pages per keyword (default 10)"
    )
    datagov = commands.add_parser(
        "datagov", help="search data.gov's Catalog API (GEOWEB_DATAGOV_KEY, _URL): datasets as JSON lines"
    )
    datagov.add_argument("--query", required=True, help="search words")
    datagov.add_argument(
        "--spatial",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="only datasets with a footprint",
    )
    datagov.add_argument(
        "--max-pages", type=_positive, default=SEARCH_PAGES, help="pages to read (default 10)"
    )
    ckan = commands.add_parser("ckan", help="search a CKAN portal's Action API: datasets as JSON lines")
    ckan.add_argument("--url", required=True, help="the portal's base URL, e.g. https://data.example.org")
    ckan.add_argument("--query", default="", help="search words (default: every dataset)")
    ckan.add_argument("--rows", type=_positive, help="datasets per page (default 100, at most 1000)")
    ckan.add_argument("--max-pages", type=_positive, default=SEARCH_PAGES, help="pages to read (default 10)")


def _add_catalogues(commands) -> None:
    csw = commands.add_parser(
        "harvest-csw", help="read a CSW catalogue's records (GetRecords): JSON lines",
        description="Options named as the catalogue DAG's params take the same values; one not given takes "
        "its GEOWEB_CSW_<NAME> setting, else the connector's default.",
    )  # fmt: skip
    csw.add_argument("--url", required=True, help="the catalogue's endpoint")
    add_param_options(csw, CatalogueParams, CSW_PARAMS)
    csw.add_argument("--since", type=_moment, help="only records modified on or after this ISO date or time")
    archive = commands.add_parser(
        "archive", help="read a satellite-image archive's scenes (GEOWEB_<ADAPTER>_URL, _KEY...): JSON lines"
    )
    archive.add_argument("--adapter", required=True, choices=("stac", "nspo"))
    archive.add_argument("--url", help="the archive's API (default GEOWEB_<ADAPTER>_URL)")
    archive.add_argument("--since", type=_moment, help="only scenes acquired at or after this ISO time")
    archive.add_argument("--bbox", type=_bbox, metavar="W,S,E,N", help="only scenes in this WGS84 box")
    archive.add_argument("--page-size", type=_positive, help="scenes per request (default 100)")
    archive.add_argument("--collections", help="STAC collections, separated by commas")
    archive.add_argument("--mapping", help="a JSON file of the request and field mapping (default: shipped)")


def _moment(value: str) -> datetime:
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 date or time: {value!r}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _bbox(value: str) -> tuple[float, float, float, float]:
    try:
        west, south, east, north = (float(v) for v in value.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not four numbers west,south,east,north: {value!r}") from None
    return west, south, east, north


def _positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {number}")
    return number


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "export":
        _check_export(parser, args)
    logging.basicConfig(
        level=args.log_level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        return _command(args)
    except (SettingsError, UnreadableState) as exc:  # a GEOWEB_* variable out of range, a broken state file
        print(f"geoweb {args.command}: {exc}", file=sys.stderr)
        return 2


def _command(args) -> int:
    if args.command == "filter":
        return _filter(args)
    if args.command == "revisit":
        return _revisit(args)
    if args.command == "export":
        return _export(args)
    if args.command == "migrate":
        return _migrate()
    if args.command == "seed":
        return _seed(args)
    if args.command == "datagov":
        return _datagov(args)
    if args.command == "ckan":
        return _ckan(args)
    if args.command == "harvest-csw":
        return _harvest_csw(args)
    if args.command == "archive":
        return _archive(args)
    return _crawl(args)


def _filter(args) -> int:
    from geoweb.links.filters import URLFilters
    from geoweb.policy import InvalidPolicy

    try:
        filters = URLFilters.from_settings(Settings.from_env())
    except InvalidPolicy as exc:
        print(f"geoweb filter: {exc}", file=sys.stderr)
        return 1
    for url in args.urls:
        print(url)
        for name, out in filters.trace(url):
            print(f"  {name:<22} {out if out is not None else 'DROPPED'}")
    return 0


def _add_revisit(commands) -> None:
    revisit = commands.add_parser(
        "revisit", help="re-check the known resources due for a check (GEOWEB_DB): one JSON line per check",
        description="Options named as the revisit DAG's params take the same values and defaults.",
    )  # fmt: skip
    add_param_options(revisit, RevisitParams, REVISIT_PARAMS)
    revisit.add_argument("--policies", help="URL-pattern policies: a JSON file (default GEOWEB_URL_POLICIES)")


def _revisit(args) -> int:
    """Plan and check in this process (one shard); each check is a JSON line, the summary goes to stderr."""
    from geoweb.harvest import revisit
    from geoweb.paramspec import InvalidParams
    from geoweb.policy import InvalidPolicy, URLPolicies
    from geoweb.store import Store, StoreError

    conf = {name: getattr(args, name) for name in REVISIT_PARAMS} | {"shards": 1}  # None: the param's default
    run_id = "cli-" + datetime.now(UTC).isoformat(timespec="seconds")
    try:
        params = RevisitParams.from_conf(conf)
        base = Settings.from_env(**({"url_policies": args.policies} if args.policies else {}))
        settings = params.settings(base)
        URLPolicies.from_setting(settings.url_policies)  # a bad policy file ends here, before any check
        with Store(_harvest_dsn()) as store:
            ids = [i for shard in revisit.plan_revisits(store, params, settings) for i in shard]
            summary = revisit.check_resources(
                store, run_id, ids, settings, _print_line, operations=params.operations
            )
            print(revisit.table(revisit.summarize(store, [summary])), file=sys.stderr)
    except (InvalidParams, InvalidPolicy, StoreError) as exc:
        print(f"geoweb revisit: {exc}", file=sys.stderr)
        return 1
    return 0


def _print_line(record: dict) -> None:
    print(json.dumps(record, ensure_ascii=False), flush=True)


def _crawl(args) -> int:
    from geoweb.crawl.jsonl import crawl_to_jsonl
    from geoweb.crawl.pagestates import PageStates, paced_budget

    seeds = list(args.seeds or ())
    if args.seeds_file:
        lines = args.seeds_file.read_text(encoding="utf-8").splitlines()
        seeds += [s.strip() for s in lines if s.strip() and not s.lstrip().startswith("#")]
    if not seeds:
        print("geoweb crawl: give at least one --seed or a --seeds-file", file=sys.stderr)
        return 2
    # the depth is the param's default, as in a DAG run; the other settings not given come from GEOWEB_*
    overrides = {"max_level": HarvestParams.max_level}
    for name in CRAWL_PARAMS.keys() - NOT_SETTINGS:
        if getattr(args, name) is not None:
            overrides[name] = getattr(args, name)
    if args.time_budget_hours is not None:
        overrides["run_time_budget"] = budget_seconds(args.time_budget_hours)
    if "allowed_hosts" in overrides:
        overrides["allowed_hosts"] = frozenset(h.lower() for h in overrides["allowed_hosts"])
    settings = Settings.from_env(**overrides)
    types = args.types or list(ALL_TYPES)
    # read before the output is emptied: a state file it cannot read leaves the last run's output as it was
    revisit_bytes = budget_bytes(args.revisit_megabytes)
    states = PageStates(args.state, args.revisit_budget, revisit_bytes=revisit_bytes) if args.state else None
    if states is not None:
        states.revisit_budget = paced_budget(states.revisit_budget, states.pace, settings.run_time_budget)
    out = sys.stdout if args.output == "-" else open(args.output, "w", encoding="utf-8")  # noqa: SIM115
    try:
        report = asyncio.run(crawl_to_jsonl(seeds, settings, types, out, states))
    finally:
        if out is not sys.stdout:
            out.close()
    print(report.table(), file=sys.stderr)
    print(report.recall.table(), file=sys.stderr)
    if args.state:
        carried = {k.partition("/")[2]: v for k, v in report.stats.items() if k.startswith("unchanged/")}
        print(f"state {args.state}: {len(states.pages)} pages held; this run carried over"
              f" {carried.get('not_modified', 0)} not modified (304) and {carried.get('same_bytes', 0)}"
              " unchanged by signature", file=sys.stderr)  # fmt: skip
    if args.plot:
        report.plot(args.plot)
        print(f"plot: {args.plot}", file=sys.stderr)
    return 0


def _check_export(parser: argparse.ArgumentParser, args) -> None:
    """What argparse cannot check alone: a layer is chosen in a table format, only JSON lines go to stdout."""
    if args.format == "jsonl" and args.layer:
        parser.error("--layer is for the table formats: JSON lines hold each resource with its datasets")
    if args.format != "jsonl" and args.output == "-":
        parser.error(f"--format {args.format} is written to a file: give --output FILE")


def _export(args) -> int:
    from geoweb.harvest.export import export_run
    from geoweb.store import Store, StoreError

    output = None if args.output == "-" else Path(args.output)
    try:
        with Store(_harvest_dsn()) as store:
            exported = export_run(store, args.run, output, args.format, args.layer)
    except StoreError as exc:
        print(f"geoweb export: {exc}", file=sys.stderr)
        return 1
    rows = ", ".join(f"{count} {layer}" for layer, count in exported.rows.items())
    log.info("exported %s of run %s to %s", rows, exported.run_id, args.output)
    return 0


def _harvest_dsn() -> str:
    """GEOWEB_DB, else the database of the local stack when it runs (said on stderr); StoreError without
    either."""
    from geoweb.local_stack import stack_dsn, without_password
    from geoweb.store import Store

    if not os.environ.get("GEOWEB_DB", "").strip():
        dsn = stack_dsn()
        if dsn:
            print(f"geoweb: GEOWEB_DB is not set; using the local stack's database at {without_password(dsn)}",
                  file=sys.stderr)  # fmt: skip
            return dsn
    return Store.dsn_from_env()


def _migrate() -> int:
    """Apply the pending migrations; each version applied is a line on stdout."""
    from geoweb.store import StoreError, migrate_database

    try:
        applied = migrate_database(_harvest_dsn())
    except StoreError as exc:
        print(f"geoweb migrate: {exc}", file=sys.stderr)
        return 1
    for version in applied:
        print(f"applied {version}")
    if not applied:
        print("the harvest database is up to date")
    return 0


def _seed(args) -> int:
    return _print_records(
        "seed",
        args.provider,
        {},
        lambda c: (r for k in args.keyword for r in c.records(query=k, pages=args.pages)),
    )


def _datagov(args) -> int:
    return _print_records(
        "datagov",
        "datagov",
        {},
        lambda c: c.records(query=args.query, pages=args.max_pages, spatial=args.spatial),
    )


def _ckan(args) -> int:
    return _print_records(
        "ckan",
        "ckan",
        {"url": args.url, "page_size": args.rows},
        lambda c: c.records(query=args.query, pages=args.max_pages),
    )


def _harvest_csw(args) -> int:
    overrides = {"url": args.url, "page_size": args.page_size, "schema": args.schema, "timeout": args.timeout,
                 "allowed_hosts": args.allowed_hosts or []}  # fmt: skip
    return _print_records("harvest-csw", "csw", overrides, lambda c: c.records(since=args.since))


def _archive(args) -> int:
    overrides = {"url": args.url, "page_size": args.page_size, "collections": args.collections,
                 "mapping": args.mapping}  # fmt: skip
    return _print_records(
        "archive", args.adapter, overrides, lambda c: c.records(since=args.since, bbox=args.bbox)
    )


def _print_records(command: str, name: str, overrides: dict, search) -> int:
    """Print a connector's records as JSON lines, each as it comes (``search(connector)`` yields them); a
    failure ends in one line on stderr and exit status 1, after the records read before it."""
    from geoweb.connectors import ConnectorError, load_connector
    from geoweb.connectors.api import config_from_env

    config = config_from_env(name) | {k: v for k, v in overrides.items() if v is not None}
    try:
        for record in search(load_connector(name, config)):
            print(json.dumps(record.to_json(), ensure_ascii=False), flush=True)
    except ConnectorError as exc:
        print(f"geoweb {command}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
