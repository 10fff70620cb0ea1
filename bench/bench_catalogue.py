"""Catalogue latency: CSW GetRecords and OGC API - Records items on 100,000 resources and 1,000,000 datasets.

Generates the search benchmark's data (bench/bench_search.py) into a database of its own, once, starts the
catalogue's process on it as the stack runs it, and times typical queries
of QGIS MetaSearch and OWSLib in random order (p50, p95, the largest), straight to the catalogue's process:
GeoHub's proxy adds one loopback hop.

    .venv/bin/python -m bench.bench_catalogue                 # generate (a few minutes) or reuse, then measure
    .venv/bin/python -m bench.bench_catalogue --requests 20   # quick
    .venv/bin/python -m bench.bench_catalogue --drop          # remove its database
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from contextlib import closing
from urllib.parse import urlsplit

import psycopg2
import requests

from bench import bench_search
from geoweb.store import Store
from stack import catalogue as stack_catalogue
from stack import postgres as stack_postgres
from stack import supervisor
from stack.layout import GEOWEB_DB, REPO
from stack.supervisor import Service
from tests.geohub.server import free_port

DATABASE = "geoweb_bench_catalogue"
RESOURCES = 100_000
RESULTS = REPO / "var" / "bench" / "results-catalogue.json"
EUROPE = "<ogc:BBOX><ogc:PropertyName>ows:BoundingBox</ogc:PropertyName><gml:Envelope><gml:lowerCorner>35 -10</gml:lowerCorner><gml:upperCorner>60 30</gml:upperCorner></gml:Envelope></ogc:BBOX>"  # fmt: skip
WATER = "<ogc:PropertyIsLike wildCard='%' singleChar='_' escapeChar='\\'><ogc:PropertyName>csw:AnyText</ogc:PropertyName><ogc:Literal>%water%</ogc:Literal></ogc:PropertyIsLike>"  # fmt: skip
WMS = "<ogc:PropertyIsEqualTo><ogc:PropertyName>dc:format</ogc:PropertyName><ogc:Literal>WMS</ogc:Literal></ogc:PropertyIsEqualTo>"  # fmt: skip


def get_records(constraint: str = "", start: int = 1, records: int = 10) -> str:
    """A GetRecords POST as OWSLib's getrecords2 sends it (full csw:Record, results with their count)."""
    query = f"<csw:Constraint version='1.1.0'><ogc:Filter>{constraint}</ogc:Filter></csw:Constraint>"
    return (
        "<csw:GetRecords xmlns:csw='http://www.opengis.net/cat/csw/2.0.2' xmlns:ogc='http://www.opengis.net/ogc'"
        " xmlns:gml='http://www.opengis.net/gml' service='CSW' version='2.0.2' resultType='results'"
        f" startPosition='{start}' maxRecords='{records}' outputSchema='http://www.opengis.net/cat/csw/2.0.2'>"
        "<csw:Query typeNames='csw:Record'><csw:ElementSetName>full</csw:ElementSetName>"
        f"{query if constraint else ''}</csw:Query></csw:GetRecords>"
    )


CSW = {
    "every record, first page": get_records(),
    "every record, page 1,000": get_records(start=9_991),
    "text 'water' (25% match)": get_records(WATER),
    "box over Europe": get_records(EUROPE),
    "text + box": get_records(f"<ogc:And>{WATER}{EUROPE}</ogc:And>"),
    "format WMS": get_records(WMS),
}
RECORDS = {
    "items, first page": {"limit": 10},
    "items q=water": {"q": "water", "limit": 10},
    "items bbox Europe": {"bbox": "-10,35,30,60", "limit": 10},
    "items format=WMS, offset 1000": {"format": "WMS", "limit": 10, "offset": 1000},
}


def ensure_database() -> str:
    """The benchmark's database, generated once, with the store's migrations applied (the view)."""
    dsn = urlsplit(GEOWEB_DB)._replace(path=f"/{DATABASE}").geturl()
    try:
        with closing(psycopg2.connect(dsn)) as conn, conn.cursor() as cur:
            cur.execute("SELECT count(*) FROM resources")
            (have,) = cur.fetchone()
    except psycopg2.Error:
        have = 0
    if have != RESOURCES:
        print(f"generating {RESOURCES:,} resources into {DATABASE}", file=sys.stderr)
        bench_search.generate(RESOURCES, DATABASE)
    with Store(dsn) as store:
        store.migrate()
    return dsn


def measure(call, queries: dict, requests_: int, rng: random.Random) -> dict:
    order = [name for name in queries for _ in range(requests_)]
    rng.shuffle(order)
    times: dict[str, list[float]] = {name: [] for name in queries}
    for name in order:
        started = time.perf_counter()
        call(queries[name])
        times[name].append((time.perf_counter() - started) * 1000)
    return {name: figures(ms) for name, ms in times.items()}


def figures(ms: list[float]) -> dict:
    ordered = sorted(ms)
    return {
        "p50_ms": round(statistics.median(ordered), 1),
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 1),
        "max_ms": round(ordered[-1], 1),
    }


def run(requests_: int) -> dict:
    dsn = ensure_database()
    port = free_port()
    upstream = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as home:
        service = Service(
            "bench-catalogue", stack_catalogue.command(port), (f"{upstream}/records?f=json",),
            stack_catalogue.environment(dsn, upstream, port, home), run_dir=REPO / "var" / "bench",
            log_dir=REPO / "var" / "bench",
        )  # fmt: skip
        supervisor.start([service])
        session = requests.Session()
        session.trust_env = False
        try:

            def csw(body: str) -> None:
                answer = session.post(f"{upstream}/csw", data=body, timeout=120)
                assert answer.ok and b"SearchResults" in answer.content, answer.text[:500]

            def records(params: dict) -> None:
                answer = session.get(
                    f"{upstream}/records/collections/resources/items", params=params, timeout=120
                )
                assert answer.ok and "features" in answer.json(), answer.text[:500]

            rng = random.Random(0.42)
            for body in CSW.values():  # warm: the first request of each worker reflects the view
                csw(body)
            return {
                "csw": measure(csw, CSW, requests_, rng),
                "records": measure(records, RECORDS, requests_, rng),
            }
        finally:
            supervisor.stop(service)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_catalogue", description=__doc__)
    parser.add_argument("--requests", type=int, default=50, help="per query (default 50)")
    parser.add_argument("--drop", action="store_true", help="remove its database and stop")
    args = parser.parse_args(argv)
    if args.drop:
        stack_postgres.drop_database(DATABASE)
        return 0
    started = not stack_postgres.running()
    if started:
        stack_postgres.start()
    try:
        results = run(args.requests)
    finally:
        if started:
            stack_postgres.stop()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2))
    for protocol, queries in results.items():
        for name, row in queries.items():
            print(
                f"{protocol:8} {name:32} p50 {row['p50_ms']:7.1f} ms  p95 {row['p95_ms']:7.1f} ms  max {row['max_ms']:7.1f} ms"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
