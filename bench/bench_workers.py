"""Scale-out of the geoweb_crawl DAG over Celery workers, against a web that answers every request slowly.

The same crawl (one root and ``pages`` leaves on each of ``shards`` loopback hosts, chosen so that every
shard holds exactly one host; two levels) runs with 1, 2 and 4 workers of 4 slots each. For each run: the
wall time from trigger to success, pages fetched (PostGIS frontier), speed-up over one worker, and Airflow's
overhead per mapped crawl task: its task-instance duration minus the crawl time the shard itself recorded
(``crawl_levels.seconds``), and the wait from queued to running. The stack must be up; worker1 and worker2
are running again at the end, and the pool has its usual slots.

    python -m bench.bench_workers            # about 7 minutes; writes var/bench/results-workers.json
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime

import psycopg2

from bench.latency_web import PORT
from geoweb.store.frontier import shard_of
from stack import airflow, supervisor, workers
from stack.airflow import MAIN_DAG
from stack.airflow_api import AirflowClient
from stack.layout import GEOWEB_DB, REPO

OUT = REPO / "var" / "bench" / "results-workers.json"
WORKER_COUNTS = (1, 2, 4)
SLOTS_PER_WORKER = 4  # AIRFLOW__CELERY__WORKER_CONCURRENCY of the stack's workers
RUN_TIMEOUT = 600.0
POLL = 0.5  # seconds between run-state polls: the resolution of the wall times


@dataclass(frozen=True)
class Result:
    workers: int
    run_id: str
    seconds: float  # trigger to success
    pages: int  # frontier rows fetched
    mapped_tasks: int
    crawl_seconds: float  # sum over the mapped tasks of the crawl time each shard recorded
    task_seconds: float  # sum of the mapped task instances' durations
    median_queued: float  # median seconds a mapped task waited from queued to running
    levels_seconds: float  # sum over levels of first mapped task queued to last one done

    @property
    def overhead_per_task(self) -> float:
        return (self.task_seconds - self.crawl_seconds) / self.mapped_tasks


def loopback_hosts(shards: int, port: int) -> list[str]:
    """One loopback address per shard: the first address of 127.0.0.2... whose origin falls in each shard."""
    by_shard: dict[int, str] = {}
    for last in range(2, 255):
        address = f"127.0.0.{last}"
        by_shard.setdefault(shard_of(f"http://{address}:{port}", shards), address)
        if len(by_shard) == shards:
            return [by_shard[s] for s in range(shards)]
    raise ValueError(f"127.0.0.2-254 do not cover {shards} shards on port {port}")


@contextmanager
def latency_web(hosts: list[str], pages: int, latency: float) -> Iterator[None]:
    """The latency web in a child process, stopped on exit."""
    command = [sys.executable, "-m", "bench.latency_web", "--hosts", ",".join(hosts), "--port", str(PORT),
               "--pages", str(pages), "--latency", str(latency)]  # fmt: skip
    server = subprocess.Popen(command, cwd=REPO)
    try:
        supervisor.wait_while(lambda: not _listening(hosts[-1], PORT) and server.poll() is None, timeout=20)
        if server.poll() is not None:
            raise RuntimeError(f"the latency web exited with code {server.returncode}")
        yield
    finally:
        server.terminate()
        server.wait(timeout=10)


def _listening(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex((host, port)) == 0


def _service(index: int) -> supervisor.Service:
    """worker1, worker2 as the stack runs them; more built by the stack's own worker definition."""
    name = f"worker{index}"
    return workers.BY_NAME.get(name) or workers.worker_service(name)


def _answering() -> set[str]:
    replies = workers.broker().control.ping(timeout=1.0) or []
    return {node.split("@", 1)[0] for reply in replies for node in reply}


def use_workers(count: int, most: int) -> None:
    """Exactly worker1..worker<count> run (of worker1..worker<most>), each answering over the broker."""
    for index in range(count + 1, most + 1):
        supervisor.stop(_service(index))
    wanted = [_service(index) for index in range(1, count + 1)]
    supervisor.start(wanted)
    names = {s.name for s in wanted}
    deadline = time.monotonic() + workers.READY_TIMEOUT
    while not names <= (up := _answering()):
        if time.monotonic() > deadline:
            raise RuntimeError(f"workers answering: {sorted(up)}, wanted {sorted(names)}")
        time.sleep(0.5)


def scalar(sql: str, *args) -> float:
    """The one value a query of the harvest database returns."""
    with psycopg2.connect(GEOWEB_DB) as conn, conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchone()[0]


def _time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def crawl(client: AirflowClient, conf: dict, count: int) -> Result:
    """One run of the DAG, timed from trigger to success, with its pages and mapped-task figures."""
    started = time.monotonic()
    run_id = client.trigger(MAIN_DAG, conf)
    state = client.wait(MAIN_DAG, run_id, RUN_TIMEOUT, poll=POLL)
    seconds = time.monotonic() - started
    if state != "success":
        raise RuntimeError(f"run {run_id} ended {state}")
    mapped = [t for t in client.task_instances(MAIN_DAG, run_id) if t["task_id"].startswith("crawl_level_")]
    mapped = [t for t in mapped if t["state"] == "success"]
    pages = int(scalar("SELECT count(*) FROM frontier_urls WHERE run_id = %s AND status = 'fetched'", run_id))
    crawl_seconds = scalar("SELECT coalesce(sum(seconds), 0) FROM crawl_levels WHERE run_id = %s", run_id)
    durations = [(_time(t["end_date"]) - _time(t["start_date"])).total_seconds() for t in mapped]
    levels_seconds = 0.0
    for level in {t["task_id"] for t in mapped}:
        tasks = [t for t in mapped if t["task_id"] == level]
        first = min(_time(t["queued_when"]) for t in tasks)
        levels_seconds += (max(_time(t["end_date"]) for t in tasks) - first).total_seconds()
    waits = [(_time(t["start_date"]) - _time(t["queued_when"])).total_seconds() for t in mapped]
    return Result(count, run_id, seconds, pages, len(mapped), float(crawl_seconds), sum(durations),
                  statistics.median(waits), levels_seconds)  # fmt: skip


def table(results: list[Result]) -> str:
    base, base_levels = results[0].seconds, results[0].levels_seconds
    lines = [
        "| workers (slots) | wall s | pages | pages/s | speed-up | crawl levels s | speed-up | "
        "overhead per mapped task s | queued → running, median s |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r.workers} ({r.workers * SLOTS_PER_WORKER}) | {r.seconds:.1f} | {r.pages:,} "
            f"| {r.pages / r.seconds:.1f} | {base / r.seconds:.2f} | {r.levels_seconds:.1f} "
            f"| {base_levels / r.levels_seconds:.2f} "
            f"| {r.overhead_per_task:.2f} | {r.median_queued:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_workers", description=__doc__)
    parser.add_argument("--shards", type=int, default=16, help="shards per level, one host each")
    parser.add_argument("--pages", type=int, default=300, help="leaf pages per host")
    parser.add_argument("--latency", type=float, default=0.1, help="seconds per response")
    parser.add_argument("--workers", default=",".join(map(str, WORKER_COUNTS)), help="worker counts to run")
    args = parser.parse_args(argv)
    counts = [int(n) for n in args.workers.split(",")]
    hosts = loopback_hosts(args.shards, PORT)
    conf = {
        "seeds": [f"http://{h}:{PORT}/" for h in hosts],
        "allowed_hosts": [f"{h}:{PORT}" for h in hosts],
        "max_level": 1,
        "shards": args.shards,
        "per_host_concurrency": 1,  # one request in flight per host: a shard waits on the web
        "per_host_delay": 0,
    }
    client = AirflowClient.from_environment()
    client.unpause(MAIN_DAG)
    name, slots, description = airflow.POOL
    most = max(max(counts), len(workers.NAMES))
    results = []
    try:
        # the pool must not cap the largest worker set
        client.ensure_pool(name, max(slots, max(counts) * SLOTS_PER_WORKER), description)
        with latency_web(hosts, args.pages, args.latency):
            for count in counts:
                use_workers(count, most)
                results.append(crawl(client, conf, count))
                print(f"{count} worker(s): {asdict(results[-1])}", flush=True)
    finally:
        client.ensure_pool(name, slots, description)
        use_workers(len(workers.NAMES), most)
    print(table(results))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"args": vars(args), "results": [asdict(r) for r in results]}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
