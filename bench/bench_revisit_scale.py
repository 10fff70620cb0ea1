"""The revisit DAG at scale (issue 30): how many services a day one worker pool re-checks within politeness.

N synthetic WMS (default 2,000) over H hosts (default 20), host ``i`` at ``http://127.0.0.(i+1):PORT`` so
each has its own per-host slots. Every service answers GetCapabilities with its own copy of a real document
(MapServer's WMS 1.3.0 from tests/data/capabilities, its title and URLs its own) and GetMap with a small
two-colour PNG, both served by our own nginx, which picks the answer by the ``request`` argument; so both
the check and the operation check succeed.

The services are loaded into a scratch PostGIS database as a crawl saves what it finds (``commit_pages``),
all due now. Then the revisit steps run as the DAG runs them: ``plan_revisits`` with ``RevisitParams``'
defaults (16 shards by host, the politeness of ``Settings``: 2 requests at a time per host, no delay), one
``check_resources`` per shard in a pool of worker processes (daemonic, as Celery's prefork children, so
OWSLib reads in a thread), then ``summarize``. Three rounds: the first check after the load (each check
reloads the service's layers: changed), every service due again and checked a second time (unchanged:
what a day of revisits mostly is), and a third time after a VACUUM (as autovacuum runs between days).

Per round: checks per second (wall, plan to summary), CPU per check (the tasks' own rusage; beside it the
whole run's: plan, the pool's processes with their start-up, summary), PostgreSQL's CPU per check (its
processes' clock ticks), and the growth of ``resource_checks`` (indexes and TOAST included) and of the
database per million checks. The slowest round's rate times a day is what one pool checks within
politeness; a failed check or GetMap, or under 100,000 a day, and the bench exits 1 (after writing
var/bench/results-revisit-scale-<N>.json).

    .venv/bin/python -m bench.bench_revisit_scale            # 2,000 services over 20 hosts, 2 workers
    .venv/bin/python -m bench.bench_revisit_scale --quick    # 200 services: a smoke run
"""

from __future__ import annotations

import argparse
import io
import json
import multiprocessing
import os
import resource
import shutil
import sys
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from bench.synthetic_web import DEFAULT_ROOT, REPO, run_nginx, stop_nginx, write_nginx_conf
from geoweb.harvest.params import RevisitParams
from geoweb.harvest.revisit import check_resources, plan_revisits, summarize
from geoweb.models import Page, Resource, RunStatus
from geoweb.settings import Settings
from geoweb.store import Store
from stack import postgres as stack_postgres
from stack.layout import PG_DATA

TARGET_PER_DAY = 100_000  # issue 30
DAY = 86_400
# The real document each service serves a copy of, and what each copy makes its own.
TEMPLATE = REPO / "tests" / "data" / "capabilities" / "mapserver_wms_130.xml"
TEMPLATE_URL = "http://127.0.0.1:18010/cgi-bin/mapserv?map=regions"
TEMPLATE_TITLE = "<Title>Regions of the test web</Title>"
LOADED_BY = "bench-revisit-scale-crawl"
# resource_checks rows of one check: its GetCapabilities and the GetMap beside it
ROWS_PER_CHECK = 2


@dataclass(frozen=True, slots=True)
class Fleet:
    """N services over H loopback hosts; service i lives on host i mod H."""

    services: int = 2_000
    hosts: int = 20
    port: int = 18300

    def address(self, host: int) -> str:
        return f"127.0.0.{host + 1}"

    def origin(self, host: int) -> str:
        return f"http://{self.address(host)}:{self.port}"

    def host_of(self, service: int) -> int:
        return service % self.hosts

    def url(self, service: int) -> str:
        """A MapServer-like endpoint of its own."""
        return f"{self.origin(self.host_of(service))}/s{service:05d}/mapserv?map=s{service:05d}"


# --- the services, served by nginx --------------------------------------------------------------------------


def service_document(template: str, fleet: Fleet, service: int) -> bytes:
    """The template with this service's URLs and title."""
    title = f"<Title>Regions of service {service} on host {fleet.host_of(service)}</Title>"
    return template.replace(TEMPLATE_URL, fleet.url(service)).replace(TEMPLATE_TITLE, title).encode()


def map_png() -> bytes:
    """A 256 x 256 map of two colours: a map of one colour would be judged a success with a warning."""
    image = Image.new("RGB", (256, 256), (240, 240, 230))
    ImageDraw.Draw(image).rectangle((64, 64, 192, 192), fill=(40, 90, 160))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def write_fleet(fleet: Fleet, web: Path) -> None:
    """Host h's folder: robots.txt, the map, and each of its services' capabilities in ``s<i>/``."""
    shutil.rmtree(web, ignore_errors=True)
    template = TEMPLATE.read_text(encoding="utf-8")
    png = map_png()
    for host in range(fleet.hosts):
        host_dir = web / f"h{host}"
        host_dir.mkdir(parents=True)
        (host_dir / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n")
        (host_dir / "getmap.png").write_bytes(png)
    for service in range(fleet.services):
        service_dir = web / f"h{fleet.host_of(service)}" / f"s{service:05d}"
        service_dir.mkdir()
        (service_dir / "capabilities.xml").write_bytes(service_document(template, fleet, service))


def nginx_conf(fleet: Fleet, root: Path, web: Path) -> Path:
    """One server block per host; ``request`` (any case, as nginx matches argument names) picks the file."""
    servers = "\n".join(
        f"  server {{ listen {fleet.address(h)}:{fleet.port}; root {web / f'h{h}'}; "
        "location ~ ^/(?<service>s[0-9]+)/mapserv$ { try_files /$service/$answer /$answer =404; } }"
        for h in range(fleet.hosts)
    )
    http = f"""  access_log off;
  sendfile on;
  keepalive_timeout 65s;
  keepalive_requests 100000;
  types {{ text/xml xml; image/png png; text/plain txt; }}
  map $arg_request $answer {{ ~*^getcapabilities$ capabilities.xml; ~*^getmap$ getmap.png; default none; }}
{servers}"""
    return write_nginx_conf(root, "bench/bench_revisit_scale.py", http)


@contextmanager
def serving(fleet: Fleet, root: Path):
    """Our own nginx master over the fleet while the block runs."""
    web = root / "web"
    write_fleet(fleet, web)
    conf = nginx_conf(fleet, root, web)
    try:
        run_nginx(conf, root, [(fleet.address(h), fleet.port) for h in range(fleet.hosts)])
        yield
    finally:
        stop_nginx(root)


# --- the database -------------------------------------------------------------------------------------------


def load_services(store: Store, fleet: Fleet) -> None:
    """The services as a crawl saves them: one page per host listing its services, in one run."""
    store.runs.begin(LOADED_BY, {})
    pages = [Page(f"{fleet.origin(h)}/services.html", None, 0) for h in range(fleet.hosts)]
    for service in range(fleet.services):
        resource_ = Resource(url=fleet.url(service), type="WMS", version="1.3.0", title=f"Service {service}")
        pages[fleet.host_of(service)].resources.append(resource_)
    store.frontier.commit_pages(LOADED_BY, pages, shards=1, keyword_of={})
    store.runs.end(LOADED_BY, RunStatus.SUCCESS, {})


def make_all_due(store: Store) -> None:
    with store.transaction() as cur:
        cur.execute("UPDATE resource_schedule SET next_check_at = now()")


def sizes(store: Store) -> dict[str, int]:
    """Bytes of resource_checks (indexes and TOAST included) and of the database, and the rows of checks."""
    with store.transaction() as cur:
        cur.execute(
            "SELECT pg_total_relation_size('resource_checks'), pg_database_size(current_database()), "
            "(SELECT count(*) FROM resource_checks)"
        )
        checks_bytes, database_bytes, rows = cur.fetchone()
        cur.execute(TABLE_SIZES)
        tables = dict(cur.fetchall())
    return {
        "checks_bytes": checks_bytes,
        "database_bytes": database_bytes,
        "check_rows": rows,
        "tables": tables,
    }


def grown_most(before: dict[str, int], after: dict[str, int], count: int = 4) -> dict[str, int]:
    """The tables that grew most, and by how many bytes."""
    grown = {name: size - before.get(name, 0) for name, size in after.items()}
    return dict(sorted(grown.items(), key=lambda item: -item[1])[:count])


def make_all_due_vacuumed(dsn: str) -> None:
    """Every service due again, after a VACUUM, as autovacuum would have run between two days' checks: the
    space of the rows a check replaces is free again."""
    with Store(dsn) as store:
        make_all_due(store)
        store.conn.autocommit = True  # VACUUM refuses a transaction
        with store.conn.cursor() as cur:
            cur.execute("VACUUM")


# each table's bytes, its indexes and TOAST included
TABLE_SIZES = """
SELECT relname, pg_total_relation_size(oid) FROM pg_class
WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace
"""


def postgres_cpu_seconds() -> float:
    """CPU of the PostgreSQL server: the postmaster's own and its reaped children's, and its living children's
    (a backend's time moves from the one to the other as it ends, so a difference counts it once)."""
    postmaster = int((PG_DATA / "postmaster.pid").read_text().split()[0])
    ticks = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:  # the process ended
            continue
        pid, ppid = int(stat.parent.name), int(fields[1])
        if pid == postmaster:
            ticks += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
        elif ppid == postmaster:
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


# --- the DAG's steps ----------------------------------------------------------------------------------------


def revisit_conf(fleet: Fleet) -> dict[str, Any]:
    """A run's conf: the defaults, the hosts the address guard must let through, a batch of them all."""
    hosts = [fleet.address(h) for h in range(fleet.hosts)]
    return {"allowed_hosts": hosts, "batch_size": min(fleet.services, 10_000), "types": ["WMS"]}


def run_settings(params: RevisitParams) -> Settings:
    # resources join the schedule due at once, not a day after they were found
    return params.settings(Settings.from_env(revisit_initial_interval=1e-6))


def cpu_seconds() -> float:
    """This process's CPU, its threads and its reaped children included."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def check_shard(dsn: str, run_id: str, ids: list[int], conf: dict[str, Any]) -> dict[str, Any]:
    """One ``check`` task of the DAG, in a pool worker; its summary, its CPU and its checks' outcomes."""
    started = cpu_seconds()
    params = RevisitParams.from_conf(conf)
    outcomes: Counter = Counter()

    def count(line: dict[str, Any]) -> None:
        outcomes[str(line["outcome"])] += 1
        operation = line.get("operation_check") or {"operation": "no operation", "outcome": "checked"}
        outcomes[f"{operation['operation']} {operation['outcome']}"] += 1

    with Store(dsn) as store:
        summary = check_resources(
            store, run_id, ids, run_settings(params), count, operations=params.operations
        )
    return summary | {"cpu_seconds": cpu_seconds() - started, "outcomes": dict(outcomes)}


def started_worker(_: int) -> int:
    return os.getpid()


@dataclass
class Round:
    """One revisit run over every service, measured."""

    name: str
    checks: int = 0
    wall_seconds: float = 0.0
    task_cpu_seconds: float = 0.0  # the check tasks' own
    run_cpu_seconds: float = 0.0  # plan, the pool's processes whole (start-up included) and summary
    postgres_cpu_seconds: float = 0.0
    checks_bytes: int = 0  # growth of resource_checks
    database_bytes: int = 0  # growth of the database
    grown_most: dict[str, int] = field(default_factory=dict)  # bytes by table, the largest growths
    check_rows: int = 0
    shards: list[int] = field(default_factory=list)  # resources per shard
    outcomes: dict[str, int] = field(default_factory=dict)

    @property
    def per_second(self) -> float:
        return self.checks / self.wall_seconds


def run_round(name: str, dsn: str, fleet: Fleet, workers: int) -> Round:
    """Plan, check the shards in a fresh pool of ``workers`` processes, summarise; measured around it."""
    conf = revisit_conf(fleet)
    params = RevisitParams.from_conf(conf)
    run_id = f"bench-revisit-{name}"
    with Store(dsn) as store:
        before = sizes(store)
    run_cpu, postgres_cpu = cpu_seconds(), postgres_cpu_seconds()
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        pool.map(started_worker, range(workers))  # a Celery worker is up before a run's tasks arrive
        started = time.perf_counter()
        with Store(dsn) as store:
            shards = plan_revisits(store, params, run_settings(params))
        summaries = pool.starmap(check_shard, [(dsn, run_id, ids, conf) for ids in shards], chunksize=1)
        with Store(dsn) as store:
            totals = summarize(store, summaries)
        wall = time.perf_counter() - started
        pool.close()
        pool.join()  # reaped: their CPU is in this process's RUSAGE_CHILDREN
    postgres_cpu = postgres_cpu_seconds() - postgres_cpu
    with Store(dsn) as store:
        after = sizes(store)
    outcomes: Counter = Counter()
    for summary in summaries:
        outcomes.update(summary["outcomes"])
    return Round(
        name=name,
        checks=totals["checked"],
        wall_seconds=wall,
        task_cpu_seconds=sum(s["cpu_seconds"] for s in summaries),
        run_cpu_seconds=cpu_seconds() - run_cpu,
        postgres_cpu_seconds=postgres_cpu,
        checks_bytes=after["checks_bytes"] - before["checks_bytes"],
        database_bytes=after["database_bytes"] - before["database_bytes"],
        grown_most=grown_most(before["tables"], after["tables"]),
        check_rows=after["check_rows"] - before["check_rows"],
        shards=sorted((len(ids) for ids in shards), reverse=True),
        outcomes=dict(sorted(outcomes.items())),
    )


# --- the report ---------------------------------------------------------------------------------------------


def table(rounds: list[Round], fleet: Fleet, workers: int, load: float) -> str:
    rows = [
        f"{fleet.services:,} WMS over {fleet.hosts} hosts; {workers} worker processes; {os.cpu_count()} CPUs "
        f"(load average {load:.2f} before the run); politeness: {Settings().per_host_concurrency} "
        f"requests at a time per host, {Settings().per_host_delay:g} s delay; {RevisitParams().shards} shards.",
        "",
        "| round | checks | wall s | checks/s | CPU ms/check: tasks / whole run | PostgreSQL CPU ms/check "
        "| resource_checks bytes/check | MB per million checks: resource_checks / database | services a day |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rounds:
        rows.append(
            f"| {r.name} | {r.checks:,} | {r.wall_seconds:.1f} | {r.per_second:,.1f} "
            f"| {r.task_cpu_seconds / r.checks * 1e3:.1f} / {r.run_cpu_seconds / r.checks * 1e3:.1f} "
            f"| {r.postgres_cpu_seconds / r.checks * 1e3:.1f} | {r.checks_bytes / r.checks:,.0f} "
            # bytes a check are MB a million checks
            f"| {r.checks_bytes / r.checks:,.0f} / {r.database_bytes / r.checks:,.0f} "
            f"| {r.per_second * DAY:,.0f} |"
        )
    checks = sum(r.checks for r in rounds)
    rows.append(
        f"| all rounds | {checks:,} | | | | | {sum(r.checks_bytes for r in rounds) / checks:,.0f} "
        f"| {sum(r.checks_bytes for r in rounds) / checks:,.0f} / {sum(r.database_bytes for r in rounds) / checks:,.0f} | |"
    )  # a relation grows by many pages at a time when inserts wait for it: one round's growth is coarse
    rows.append("")
    for r in rounds:
        grown = ", ".join(f"{name} {size / r.checks:,.0f}" for name, size in r.grown_most.items())
        rows.append(f"{r.name}: {r.check_rows:,} rows; shards {r.shards}; {r.outcomes}; bytes/check {grown}")
    batch = RevisitParams().batch_size
    rows.append(
        f"The DAG's defaults (@hourly, batch_size {batch}) plan at most {batch * 24:,} checks a day; "
        f"{TARGET_PER_DAY:,} a day needs batch_size {-(-TARGET_PER_DAY // 24):,} or more."
    )
    return "\n".join(rows)


def missed(rounds: list[Round], fleet: Fleet) -> list[str]:
    """What falls short: a check that failed, or the slowest round under the target."""
    problems = []
    for r in rounds:
        if r.checks != fleet.services or r.outcomes.get("failed") or r.outcomes.get("GetMap ok") != r.checks:
            problems.append(f"{r.name}: {r.checks:,} checks of {fleet.services:,}, {r.outcomes}")
    slowest = min(rounds, key=lambda r: r.per_second)
    if slowest.per_second * DAY < TARGET_PER_DAY:
        problems.append(
            f"{slowest.name}: {slowest.per_second * DAY:,.0f} services a day < {TARGET_PER_DAY:,}"
        )
    return problems


def measure(fleet: Fleet, workers: int, root: Path) -> list[Round]:
    """The rounds in a scratch database, the fleet served meanwhile."""
    with serving(fleet, root), stack_postgres.scratch_database("geoweb_bench") as dsn:
        with Store(dsn) as store:
            store.migrate()
            load_services(store, fleet)
        first = run_round("first check", dsn, fleet, workers)
        print(f"  first check: {first.checks:,} in {first.wall_seconds:.1f} s", flush=True)
        with Store(dsn) as store:
            make_all_due(store)
        second = run_round("again, unchanged", dsn, fleet, workers)
        make_all_due_vacuumed(dsn)
        third = run_round("again, after VACUUM", dsn, fleet, workers)
        return [first, second, third]


def main() -> None:
    defaults = Fleet()
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--services", type=int, default=defaults.services)
    parser.add_argument("--hosts", type=int, default=defaults.hosts)
    parser.add_argument("--workers", type=int, default=2, help="worker processes (the stack runs 2 workers)")
    parser.add_argument("--quick", action="store_true", help="a smoke run of 200 services")
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    args = parser.parse_args()
    fleet = Fleet(services=200 if args.quick else args.services, hosts=args.hosts)
    if not stack_postgres.running():
        sys.exit("PostgreSQL is not running: start it with `.venv/bin/python -m stack start postgres`")
    root = args.root.resolve() / "revisit-scale"
    root.mkdir(parents=True, exist_ok=True)
    print(f"{fleet.services:,} services over {fleet.hosts} hosts, {args.workers} workers...", flush=True)
    load = os.getloadavg()[0]
    rounds = measure(fleet, args.workers, root)
    print(table(rounds, fleet, args.workers, load))
    problems = missed(rounds, fleet)
    out = args.root / f"results-revisit-scale-{fleet.services}.json"
    figures = {"fleet": asdict(fleet), "workers": args.workers, "cpus": os.cpu_count(), "load": load}
    out.write_text(
        json.dumps(figures | {"rounds": [asdict(r) for r in rounds], "missed": problems}, indent=1)
    )
    print(f"figures: {out}")
    if problems:
        print("missed:", "; ".join(problems))
        sys.exit(1)


if __name__ == "__main__":
    main()
